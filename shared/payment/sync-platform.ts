import { defineSyncPlatform } from '../connections/connector';
import { paymentConnectionClient } from './client';
import { paymentProblem } from './errors';
import { paymentNaming } from './naming';
import { PaymentSyncSettings } from './settings';
import { paymentSync } from './sync';

/** What the sync dispatcher and the sync job run of the payment connector. */
export const paymentSyncing = defineSyncPlatform<PaymentSyncSettings>({
  ...paymentNaming,
  settings: PaymentSyncSettings,
  client: paymentConnectionClient,
  problem: (error) => paymentProblem(error),
  sync: paymentSync,
});
