import type { SyncSchedule } from '../connections/connector';
import { paymentNaming } from './naming';
import { PaymentSyncSettings } from './settings';

/** What the sync dispatcher reads of the payment connector: which data objects a connection syncs, and how often. */
export const paymentSyncSchedule: SyncSchedule = { ...paymentNaming, settings: PaymentSyncSettings };
