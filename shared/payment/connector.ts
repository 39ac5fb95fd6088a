import { defineConnector } from '../connections/connector';
import { paymentConnectionForm } from './config';
import { paymentSyncing } from './sync-platform';
import { testPaymentConnection } from './test-connection';
import { paymentWebhooks } from './webhook-endpoint';

/**
 * The payment connector: a payment platform (the spec's API v1), read with a secret or restricted
 * key. Made of its capabilities (sync-platform.ts, webhook-endpoint.ts), which functions that run
 * only one of them load alone.
 */
export const payment = defineConnector({
  ...paymentSyncing,
  connection: paymentConnectionForm,
  testConnection: (options) => testPaymentConnection(paymentSyncing.client(options)),
  webhooks: paymentWebhooks,
});
