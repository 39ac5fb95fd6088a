import { defineConnector } from '../connections/connector';
import { billingConnectionForm } from './config';
import { billingRoutes } from './routes';
import { billingSyncing } from './sync-platform';
import { testBillingConnection } from './test-connection';
import { billingWebhooks } from './webhook-endpoint';

/**
 * The billing connector: a subscription billing platform (Chargebee-style API v2), read with an
 * API key. Made of its capabilities (sync-platform.ts, webhook-endpoint.ts), which functions that
 * run only one of them load alone.
 */
export const billing = defineConnector({
  ...billingSyncing,
  connection: billingConnectionForm,
  testConnection: (options) => testBillingConnection(billingSyncing.client(options)),
  webhooks: billingWebhooks,
  routes: billingRoutes,
});
