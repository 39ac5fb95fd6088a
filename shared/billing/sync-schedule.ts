import type { SyncSchedule } from '../connections/connector';
import { billingNaming } from './naming';
import { BillingSyncSettings } from './settings';

/** What the sync dispatcher reads of the billing connector: which data objects a connection syncs, and how often. */
export const billingSyncSchedule: SyncSchedule = { ...billingNaming, settings: BillingSyncSettings };
