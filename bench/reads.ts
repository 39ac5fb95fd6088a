import { startTestGateway } from '../test/support/local-runtime';
import { startBillingSimulator } from '../sandbox/billing-simulator';
import { setLogSink } from '../shared/log/logger';
import type { Figures } from './results-file';
import { percentile } from './statistics';

const CUSTOMERS = 2_000;
const REQUESTS = 1_000;

/**
 * Read latency in local mode: a billing site synced through the real engine, then the playbook
 * reads over HTTP through the local API front, with an API key, customers looked up by email.
 */
export async function benchReads(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const sim = await startBillingSimulator({ seed: 9 });
  sim.setRateLimit(undefined);
  const site = sim.addSite('reads-test');
  site.seedCustomers(CUSTOMERS);
  site.seedSubscriptions({ perCustomer: 1, statuses: ['active'] });
  const apiKey = `test_${Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
  sim.addApiKey('reads-test', apiKey, { type: 'read-only' });
  const gateway = await startTestGateway({ BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true' });
  try {
    await gateway.enableAccount('reads');
    const token = await gateway.userToken('reads');
    // ?test=false: no first sync of every object; the one below syncs what the reads need.
    await gateway.call('PUT', '/api/v1/accounts/reads/connections/billing?test=false', { token, body: { siteName: 'reads-test', apiKey, environment: 'test' } });
    await gateway.call('PUT', '/api/v1/accounts/reads/connections/billing/sync-settings', {
      token,
      body: { dataObjects: ['customers', 'subscriptions'], frequency: 'daily', method: 'api', subscriptionStatus: 'all' },
    });
    await gateway.call('POST', '/api/v1/accounts/reads/connections/billing/syncs', { token, body: { objects: ['customers', 'subscriptions'] } });
    await gateway.runtime.local.queues.syncJobs.idle();
    const { key } = (await (await gateway.call('POST', '/api/v1/accounts/reads/api-keys', { token, body: { name: 'bench' } })).json()) as { key: string };
    const emails = [...site.data.customers.values()].map((c) => c.email).filter((e): e is string => typeof e === 'string');

    const figures: Figures = {};
    for (const [name, path] of [
      ['subscription_status', 'subscription'],
      ['next_payment', 'next-payment'],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i += 1) {
        const email = encodeURIComponent(emails[i % emails.length]!);
        const started = performance.now();
        const response = await gateway.call('GET', `/api/v1/playbook/customers/${email}/${path}?connector=billing`, { headers: { authorization: `Bearer ${key}` } });
        await response.arrayBuffer();
        times.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
      }
      times.sort((a, b) => a - b);
      figures[`reads.${name}.p50_ms`] = Math.round(percentile(times, 50) * 100) / 100;
      figures[`reads.${name}.p99_ms`] = Math.round(percentile(times, 99) * 100) / 100;
    }
    return {
      figures,
      notes: [
        `${CUSTOMERS.toLocaleString('en')} customers and subscriptions synced from the billing simulator; ${REQUESTS} sequential reads each over HTTP through the local front (API key check, email lookup on gsi1, the customer's subscriptions, freshness), against dynalite in the same process.`,
      ],
    };
  } finally {
    await gateway.stop();
    await sim.stop();
    setLogSink(restoreLogs);
  }
}
