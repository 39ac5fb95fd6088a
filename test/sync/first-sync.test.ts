import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';
import { connectors } from '../../shared/connections/registry';
import { log } from '../../shared/log/logger';
import { PAYMENT_OBJECTS } from '../../shared/payment/settings';
import { runSyncJob } from '../../shared/sync/run-sync-job';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { localDynamoClient } from '../support/dynamo';
import { generatedKey } from '../support/local-runtime';
import { storeConnection, recordsAt, storedRecordIds } from '../support/stored-connection';

/**
 * A connection's first sync of every data object at once, each job in a Lambda of its own (its own
 * store client, so its own budget in memory over the connection's one bucket in the table), against
 * the payment simulator with a real platform's delay. Counts only (the machine is shared).
 */
describe('a first sync of every object side by side, within the connection\'s one budget', () => {
  let sim: PaymentSimulator;
  let local: LocalGateway;

  beforeAll(async () => {
    sim = await startPaymentSimulator({ seed: 29 });
    local = await startLocalGateway({ env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '5000' } });
    // About 400 records an object, created evenly over a year.
    sim.seedCustomers(400, { mode: 'live', spacingSeconds: 78_840 });
    sim.seedSubscriptions({ mode: 'live' });
    sim.seedInvoices({ mode: 'live' });
  });
  afterAll(async () => {
    await local.stop();
    await sim.stop();
  });

  it('five jobs in five Lambdas stay within the connection\'s limit: the platform refuses almost none, every record stored once', async () => {
    const limit = 6;
    const perEndpoint = 4;
    const accountId = 'acct-first5';
    const secretKey = generatedKey('rk_live_');
    sim.addApiKey(secretKey, { access: 'read' });
    await storeConnection(local.gateway, {
      accountId,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live', requestsPerSecond: limit, requestsPerSecondPerEndpoint: perEndpoint },
      credentials: { secretKey },
      syncSettings: { dataObjects: [...PAYMENT_OBJECTS], frequency: 'daily', method: 'api' },
    });
    // The platform at that limit, each endpoint at its own; five endpoints at 4/s would allow 20, so the account's 6 binds.
    sim.setRateLimit({ perSecond: limit }, { mode: 'live', perEndpoint: { perSecond: perEndpoint } });
    sim.setLatency({ ms: 150, jitterMs: 50 });
    const arrivals: number[] = [];
    const paths: Array<{ at: number; path: string }> = [];
    const stopWatching = sim.onRequest((request) => {
      arrivals.push(performance.now());
      paths.push({ at: performance.now(), path: request.path });
    });
    const requestedAt = new Date().toISOString();
    try {
      const results = await Promise.all(
        PAYMENT_OBJECTS.map((object) => {
          const lambda = { ...local.gateway, table: { client: sdkTableClient(localDynamoClient(local.dynamo.endpoint)), tableName: local.dynamo.tableName } };
          return runSyncJob(lambda, connectors.syncing(), { accountId, connector: 'payment', object, trigger: 'manual', requestedAt }, log);
        }),
      );
      for (const result of results) expect(result).toMatchObject({ outcome: 'finished', mode: 'full' });
    } finally {
      stopWatching();
    }
    // The arrivals counted here share this process's event loop with the simulator, so a busy machine
    // bunches them: the grants per second are counted on a simulated clock in test/http/rate-budget.test.ts.
    expect(arrivals.length).toBeGreaterThan(3 * limit);
    // The platform's own limiter almost never had to refuse one (a retried 429 costs a request, nothing more).
    expect(sim.rateLimited(secretKey) / arrivals.length).toBeLessThan(0.05);
    // The objects went side by side: at some moment at least three objects' listings were under way
    // (one after another, it would be one). Not "all five at once": on a loaded machine one job may
    // start after a small object's listing already ended, as a Lambda scaling out might too.
    const spans = [...new Set(paths.map((p) => p.path))].map((path) => paths.filter((p) => p.path === path).map((p) => p.at));
    expect(spans).toHaveLength(5);
    const under = (at: number) => spans.filter((times) => Math.min(...times) <= at && at <= Math.max(...times)).length;
    expect(Math.max(...spans.map((times) => under(Math.min(...times))))).toBeGreaterThanOrEqual(3);
    for (const object of PAYMENT_OBJECTS) {
      const stored = await storedRecordIds(local.gateway.table, recordsAt(accountId, 'payment', object));
      const platform = [...sim.state.live[object].values()].map((record) => record.id).sort();
      expect({ object, stored: stored.sort() }).toEqual({ object, stored: platform });
    }
  }, 120_000);
});
