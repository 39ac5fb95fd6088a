import { startBillingSimulator, type BillingSimulator } from '../../sandbox/billing-simulator';
import { generatedKey, startTestGateway, type TestGateway } from './local-runtime';

export interface BillingGateway {
  sim: BillingSimulator;
  gateway: TestGateway;
  /** A sign-in token of account `acme`'s user. */
  token: string;
  /** A read-only key of site `acme-test`, made at run time. */
  apiKey: string;
  stop(): Promise<void>;
}

/**
 * The billing simulator (site `acme-test` with `customers` customers and a read-only key, no rate
 * limit) and the local gateway pointed at it, with account `acme` switched on: what the API tests
 * of connections and syncs start from.
 */
export async function startBillingGateway(options: { seed: number; customers: number }): Promise<BillingGateway> {
  const sim = await startBillingSimulator({ seed: options.seed });
  sim.setRateLimit(undefined);
  sim.addSite('acme-test').seedCustomers(options.customers);
  const apiKey = generatedKey('test_');
  sim.addApiKey('acme-test', apiKey, { type: 'read-only' });
  const gateway = await startTestGateway({ BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '500' });
  await gateway.enableAccount('acme');
  const token = await gateway.userToken('acme');
  return {
    sim,
    gateway,
    token,
    apiKey,
    async stop() {
      await gateway.stop();
      await sim.stop();
    },
  };
}
