import { defineConnector } from '../connections/connector';
import { billingConnectionForm } from './config';
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
  // Built on the first request to its path (shared/api/route-area.ts).
  routes: {
    paths: ['/api/v1/accounts/{accountId}/connections/billing/webhook-credentials'],
    load: async () => (await import('./routes')).billingRoutes,
  },
});
