import type { ConnectorPlatform } from '../connections/connector-platform';
import { billingClient } from './client';
import { billingProblem } from './errors';
import { BillingSyncSettings } from './settings';
import { billingSync } from './sync';
import { testBillingConnection } from './test-connection';

/** The billing connector's platform side, as the gateway's Test Connection and sync engine use it. */
export const billingPlatform: ConnectorPlatform<BillingSyncSettings> = {
  settings: BillingSyncSettings,
  client: (options) => billingClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS }),
  testConnection: testBillingConnection,
  sync: billingSync,
  problem: (error) => billingProblem(error),
};
