import { defineConnector } from '../connections/connector';
import type { ClientOptions } from '../connections/connector-platform';
import { paymentClient } from './client';
import { paymentConnectionForm } from './config';
import { paymentProblem } from './errors';
import { PaymentSyncSettings } from './settings';
import { paymentSync } from './sync';
import { testPaymentConnection } from './test-connection';
import { paymentWebhooks } from './webhook-endpoint';

const client = (options: ClientOptions) => paymentClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS });

/** The payment connector: a payment platform (the spec's API v1), read with a secret or restricted key. */
export const payment = defineConnector<PaymentSyncSettings>({
  name: 'payment',
  platform: 'payment platform',
  connection: paymentConnectionForm,
  settings: PaymentSyncSettings,
  client,
  testConnection: (options) => testPaymentConnection(client(options)),
  problem: (error) => paymentProblem(error),
  sync: paymentSync,
  webhooks: paymentWebhooks,
});
