import { defineSyncPlatform } from '../connections/connector';
import { paymentConnectionClient } from './client';
import { paymentProblem } from './errors';
import { paymentNaming } from './naming';
import { PaymentSyncSettings } from './settings';
import { paymentSync } from './sync';

/** What the sync job runs of the payment connector (the dispatcher reads ./sync-schedule.ts). */
export const paymentSyncing = defineSyncPlatform<PaymentSyncSettings>({
  ...paymentNaming,
  settings: PaymentSyncSettings,
  client: paymentConnectionClient,
  problem: (error) => paymentProblem(error),
  sync: paymentSync,
});
