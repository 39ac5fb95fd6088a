import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import type { PaymentSimulator } from '../../sandbox/payment-simulator';
import { connectors } from '../../shared/connections/registry';
import { forgetRateBudgets } from '../../shared/http/rate-budget';
import { log } from '../../shared/log/logger';
import type { SyncJob } from '../../shared/queues/messages';
import { runSyncJob } from '../../shared/sync/run-sync-job';
import { newKey, startSimulator } from './support';
import { storeConnection, recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * The payment connector under the real sync engine (shared/sync/run-sync-job.ts): its client and
 * sources over HTTP against the payment simulator, the store on dynalite. Only the connector's
 * side is under test here; the engine has its own tests.
 */
describe('payment connector under the sync engine', () => {
  let sim: PaymentSimulator;
  let local: LocalGateway;
  let accountNumber = 0;

  beforeAll(async () => {
    ({ sim } = await startSimulator(5));
    local = await startLocalGateway({ env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => {
    await local.stop();
    await sim.stop();
  });
  beforeEach(() => {
    sim.faults.clear();
    forgetRateBudgets();
  });

  /** A fresh account connected with its own key (each key sees the simulator's test data). */
  async function connected(settings: Record<string, unknown> = {}) {
    const accountId = `acct-pay-${++accountNumber}`;
    const secretKey = newKey('sk_test_');
    sim.addApiKey(secretKey);
    await storeConnection(local.gateway, {
      accountId,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'secret', mode: 'test', webhookSigningSecretSet: false },
      credentials: { secretKey },
      syncSettings: { dataObjects: ['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'], frequency: 'daily', method: 'api', ...settings },
    });
    const run = (object: string) => {
      const job: SyncJob = { accountId, connector: 'payment', object, trigger: 'daily', requestedAt: new Date().toISOString() };
      // One slice: the test counts pages and requests exactly.
      return runSyncJob(local.gateway, connectors.syncing(), job, log, { maxSlices: 1 });
    };
    const stored = async (object: string) => {
      const page = await store.listRecords(local.gateway.table, recordsAt(accountId, 'payment', object), { limit: 1000, includeDeleted: true });
      return page.records;
    };
    return { accountId, run, stored };
  }

  it('full, then incremental from events: changes, cancellations and deletions land in the store', async () => {
    const customers = sim.seedCustomers(230);
    sim.seedSubscriptions({ customerIds: customers.slice(0, 50).map((c) => c.id), statuses: ['active'] });
    const c = await connected();

    expect(await c.run('customers')).toMatchObject({ outcome: 'finished', mode: 'full', pages: 3, counts: { created: 230 } });
    expect(await c.run('subscriptions')).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 50 } });

    const eventsBefore = sim.requests.get('GET /v1/events') ?? 0;
    expect(await c.run('customers')).toMatchObject({ outcome: 'finished', mode: 'incremental', pages: 1, counts: { created: 0, updated: 0 } });
    expect((sim.requests.get('GET /v1/events') ?? 0) - eventsBefore).toBe(1);

    sim.update('customers', customers[100]!.id, { email: 'changed@example.com' });
    sim.delete('customers', customers[0]!.id); // also cancels its subscription
    const added = sim.createCustomer({ email: 'added@example.com' }).record;

    expect(await c.run('customers')).toMatchObject({ outcome: 'finished', mode: 'incremental', counts: { created: 1, updated: 1, deleted: 1 } });
    const storedCustomers = await c.stored('customers');
    const live = storedCustomers.filter((r) => !r.deletedAt);
    expect(live).toHaveLength(230);
    expect(live.find((r) => r.id === customers[100]!.id)?.email).toBe('changed@example.com');
    expect(live.some((r) => r.id === added.id)).toBe(true);
    expect(storedCustomers.find((r) => r.id === customers[0]!.id)?.deletedAt).toBeDefined();

    expect(await c.run('subscriptions')).toMatchObject({ outcome: 'finished', mode: 'incremental', counts: { updated: 1, deleted: 0 } });
    const canceled = (await c.stored('subscriptions')).find((r) => r.customerId === customers[0]!.id);
    expect(canceled?.body).toMatchObject({ state: 'cancelled' });
    expect(canceled?.deletedAt).toBeUndefined();
  });

  it('a revoked key marks the connection for reconnection with the spec remedy', async () => {
    sim.seedCustomers(5);
    const c = await connected();
    const stored = await store.getConnection(local.gateway.table, c.accountId, 'payment');
    const { secretKey } = await local.gateway.vault.open({ accountId: c.accountId, connector: 'payment' }, stored!.credentials);
    sim.removeApiKey(secretKey!);
    expect(await c.run('invoices')).toMatchObject({ outcome: 'failed', retry: false });
    expect((await store.getConnection(local.gateway.table, c.accountId, 'payment'))?.health).toMatchObject({
      state: 'needs_reconnect',
      remedy: expect.stringMatching(/verify.*recreate/i),
    });
  });
});
