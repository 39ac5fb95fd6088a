import { defineSyncPlatform } from '../connections/connector';
import { billingConnectionClient } from './client';
import { billingProblem } from './errors';
import { billingNaming } from './naming';
import { BillingSyncSettings } from './settings';
import { billingSync } from './sync';

/** What the sync job runs of the billing connector (the dispatcher reads ./sync-schedule.ts). */
export const billingSyncing = defineSyncPlatform<BillingSyncSettings>({
  ...billingNaming,
  settings: BillingSyncSettings,
  client: billingConnectionClient,
  problem: (error) => billingProblem(error),
  sync: billingSync,
});
