import { defineSyncPlatform } from '../connections/connector';
import { billingConnectionClient } from './client';
import { billingProblem } from './errors';
import { billingNaming } from './naming';
import { BillingSyncSettings } from './settings';
import { billingSync } from './sync';

/** What the sync dispatcher and the sync job run of the billing connector. */
export const billingSyncing = defineSyncPlatform<BillingSyncSettings>({
  ...billingNaming,
  settings: BillingSyncSettings,
  client: billingConnectionClient,
  problem: (error) => billingProblem(error),
  sync: billingSync,
});
