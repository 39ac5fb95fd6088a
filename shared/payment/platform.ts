import type { ConnectorPlatform } from '../connections/connector-platform';
import { paymentClient } from './client';
import { paymentProblem } from './errors';
import { PaymentSyncSettings } from './settings';
import { paymentSync } from './sync';
import { testPaymentConnection } from './test-connection';

/** The payment connector's platform side, as the gateway's Test Connection and sync engine use it. */
export const paymentPlatform: ConnectorPlatform<PaymentSyncSettings> = {
  settings: PaymentSyncSettings,
  client: (options) => paymentClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS }),
  testConnection: testPaymentConnection,
  sync: paymentSync,
  problem: (error) => paymentProblem(error),
};
