import { defineScheduling } from '../connections/connector';
import { heldEventsWork } from './delivery';
import { dataNaming } from './naming';
import { DataSyncSettings } from './settings';

/** What the sync dispatcher and the sync job run of the data connector: Hourly and Daily send the engagement events held since the last send. */
export const dataScheduling = defineScheduling<DataSyncSettings>({ ...dataNaming, settings: DataSyncSettings, scheduled: heldEventsWork });
