import { defineConnector } from '../connections/connector';
import type { ClientOptions } from '../connections/connector-platform';
import { billingClient } from './client';
import { billingConnectionForm } from './config';
import { billingProblem } from './errors';
import { billingRoutes } from './routes';
import { BillingSyncSettings } from './settings';
import { billingSync } from './sync';
import { testBillingConnection } from './test-connection';
import { billingWebhooks } from './webhook-endpoint';

const client = (options: ClientOptions) => billingClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS });

/** The billing connector: a subscription billing platform (Chargebee-style API v2), read with an API key. */
export const billing = defineConnector<BillingSyncSettings>({
  name: 'billing',
  platform: 'billing platform',
  connection: billingConnectionForm,
  settings: BillingSyncSettings,
  client,
  testConnection: (options) => testBillingConnection(client(options)),
  problem: (error) => billingProblem(error),
  sync: billingSync,
  webhooks: billingWebhooks,
  routes: billingRoutes,
});
