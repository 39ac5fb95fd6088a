import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import { runAs } from '../../local/iam/enforcement';
import { startBillingSimulator, type BillingSimulator } from '../../sandbox/billing-simulator';
import { connectors } from '../../shared/connections/registry';
import { forgetRateBudgets } from '../../shared/http/rate-budget';
import { log } from '../../shared/log/logger';
import type { SyncJob } from '../../shared/queues/messages';
import { runSyncJob, type SyncRunOptions } from '../../shared/sync/run-sync-job';
import { storedVersionsIn, SweepInMemory } from '../../shared/sync/deletion-sweep';
import { replaceOn } from '../support/store-seam';
import { pageSlices } from '../../shared/sync/page-slices';
import { recordHash } from '../../shared/sync/record-hash';
import type { NormalisedRecord, SyncPage, SyncSource } from '../../shared/sync/sync-source';
import { watchCommands } from '../support/dynamo';
import { generatedKey } from '../support/local-runtime';
import { isRecordKey, storeConnection, recordsAt, storedRecordIds } from '../support/stored-connection';
import * as store from '../../shared/store/store';

// The seen-page reads are counted through the store's seam (test/support/store-seam.ts).
vi.mock('../../shared/store/store', async (original) => (await import('../support/store-seam')).storeSeam(await original()));

/**
 * The sync engine end to end: the billing connector's real client and sources over HTTP against
 * the billing simulator, the store on dynalite, the vault with a throwaway key.
 */
describe('sync engine', () => {
  let sim: BillingSimulator;
  let local: LocalGateway;
  let clockOffset = 0;
  let accountNumber = 0;

  beforeAll(async () => {
    sim = await startBillingSimulator({ seed: 3 });
    sim.setRateLimit(undefined);
    local = await startLocalGateway({
      env: { BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '500' },
      now: () => Date.now() + clockOffset,
    });
  });
  afterAll(async () => {
    await local.stop();
    await sim.stop();
  });
  beforeEach(() => {
    sim.faults.clear();
    sim.setLatency({ ms: 0 });
    forgetRateBudgets();
  });

  /** A fresh account connected to a fresh site with `customers` seeded. */
  async function connected(customers: number, settings: Record<string, unknown> = {}) {
    const accountId = `acct-${++accountNumber}`;
    const siteName = `site-${accountNumber}`;
    const site = sim.addSite(siteName);
    const apiKey = generatedKey('test_');
    sim.addApiKey(siteName, apiKey, { type: 'read-only' });
    site.seedCustomers(customers);
    const at = new Date().toISOString();
    await storeConnection(local.gateway, {
      accountId,
      connector: 'billing',
      config: { siteName, environment: 'test', requestsPerMinute: 3500 },
      credentials: { apiKey },
      syncSettings: { dataObjects: ['customers', 'subscriptions'], frequency: 'daily', method: 'api', subscriptionStatus: 'all', ...settings },
    });
    const job: SyncJob = { accountId, connector: 'billing', object: 'customers', trigger: 'daily', requestedAt: at };
    // One slice unless a test asks for more (these tests count requests and pages exactly), and a
    // checkpoint after every page, so a kill can land between any two.
    const run = (options: SyncRunOptions = {}, overrides: Partial<SyncJob> = {}) =>
      runSyncJob(local.gateway, connectors.syncing(), { ...job, ...overrides }, log, { maxSlices: 1, checkpointEveryMs: 0, ...options });
    const requests = () => sim.requests.get(`GET /sites/${siteName}/api/v2/customers`) ?? 0;
    const storedIds = () => storedRecordIds(local.gateway.table, recordsAt(accountId, 'billing', 'customers'));
    const platformIds = () => [...site.data.customers.values()].filter((c) => !c.deleted).map((c) => c.id);
    return { accountId, site, run, requests, storedIds, platformIds };
  }

  it('a full sync stores every record with pages of 100; an incremental sync with nothing changed makes one call and no record write', async () => {
    const c = await connected(250);
    const full = await c.run();
    expect(full).toMatchObject({ outcome: 'finished', mode: 'full', pages: 3, counts: { created: 250, updated: 0 } });
    expect(c.requests()).toBe(3);
    expect((await c.storedIds()).sort()).toEqual(c.platformIds().sort());

    const writes = watchCommands(local.dynamo.client);
    const incremental = await c.run();
    expect(incremental).toMatchObject({ outcome: 'finished', mode: 'incremental', pages: 1, counts: { created: 0, updated: 0 } });
    expect(c.requests()).toBe(4);
    // Only bookkeeping is written: the checkpoint (claim and finish) and the connection's rate
    // bucket; no record (records live under the object's own partition key).
    expect(writes.itemsWritten((key) => key.sk === 'SYNC#billing#customers')).toBe(2);
    expect(writes.itemsWritten((key) => key.pk !== `ACCOUNT#${c.accountId}`)).toBe(0);
    expect(writes.itemsWritten()).toBe(writes.itemsWritten((key) => key.sk === 'SYNC#billing#customers' || key.sk === 'RATE#billing'));
  });

  it('loses no change made during a full sync to a page already passed', async () => {
    const c = await connected(300);
    const first = [...c.site.data.customers.values()].sort((a, b) => a.created_at - b.created_at)[0]!;
    const remove = sim.onRequest((request) => {
      if (request.path.endsWith('/customers') && request.query.get('offset')) {
        c.site.update('customers', first.id, { email: 'changed-mid-sync@example.com' });
        remove();
      }
    });
    await c.run();
    expect((await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), first.id))?.email).not.toBe('changed-mid-sync@example.com');
    const incremental = await c.run();
    expect(incremental).toMatchObject({ outcome: 'finished', mode: 'incremental' });
    expect((await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), first.id))?.email).toBe('changed-mid-sync@example.com');
  });

  it('a run killed mid-sync is resumed by the next one from its last saved page, nothing lost or written twice', async () => {
    const c = await connected(450);
    const writes = watchCommands(local.dynamo.client);
    sim.setLatency({ ms: 30 }); // pages take a while, as on a real platform: the kill lands mid-run
    let killedAt: number | undefined;
    void c.run({
      leaseSeconds: 30,
      afterPage: (pages) => {
        if (pages >= 2 && killedAt === undefined) {
          killedAt = pages;
          return new Promise<void>(() => {}); // stops dead: no cleanup, the claim still held
        }
      },
    });
    while (killedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    // A killed process writes nothing more: let what the held run had already sent land first.
    while (writes.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await c.run()).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/in progress/) });
    clockOffset += 31_000; // the claim lapses, as SQS redelivers the job
    const resumed = await c.run({ leaseSeconds: 30 });
    clockOffset -= 31_000;
    expect(resumed).toMatchObject({ outcome: 'finished', mode: 'full', pages: 5 - killedAt });
    expect((await c.storedIds()).sort()).toEqual(c.platformIds().sort());
    // Each record written once in all: pages the killed run wrote after its last save are listed
    // again, compared, and left alone.
    expect(writes.itemsWritten(isRecordKey(c.accountId, 'billing', 'customers'))).toBe(450);
  });

  it('a full sync killed and resumed still detects records the platform no longer has', async () => {
    const c = await connected(450);
    await c.run();
    sim.setLatency({ ms: 30 });
    // Gone from the platform altogether (no deleted row to see): only the sweep can notice.
    const lastCreated = [...c.site.data.customers.values()].sort((a, b) => b.created_at - a.created_at)[0]!;
    c.site.data.customers.remove(lastCreated.id);
    let killed = false;
    void c.run(
      {
        leaseSeconds: 30,
        afterPage: (pages) => {
          if (pages >= 2 && !killed) {
            killed = true;
            return new Promise<void>(() => {});
          }
        },
      },
      { full: true },
    );
    while (!killed) await new Promise((resolve) => setTimeout(resolve, 5));
    clockOffset += 31_000;
    // The sweep holds 100 stored ids at a time (bounded memory): five chunks here.
    const resumed = await c.run({ leaseSeconds: 30, sweepChunk: 100 });
    clockOffset -= 31_000;
    expect(resumed).toMatchObject({ outcome: 'finished', mode: 'full', counts: { deleted: 1 } });
    expect(await c.storedIds()).not.toContain(lastCreated.id);
    expect((await c.storedIds()).length).toBe(449);
  });

  it('a full sync in one invocation sweeps in memory; an object too big for the sweep’s memory sweeps from the store, with the same answer', async () => {
    let seenReads = 0;
    const restore = replaceOn(local.gateway.table, {
      seenAmong: (table, scope, candidates) => {
        seenReads += 1;
        return store.seenAmong(table, scope, candidates);
      },
    });
    try {
      const c = await connected(450);
      await c.run();
      const [first, second] = c.platformIds();
      // Gone from the platform altogether (no deleted row to see): only the sweep can notice.
      c.site.data.customers.remove(first!);
      seenReads = 0;
      // 450 stored and 449 seen fit in the default sweep memory: no read of the seen pages.
      expect(await c.run({}, { full: true })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { deleted: 1 } });
      expect(seenReads).toBe(0);
      expect(await c.storedIds()).not.toContain(first);

      c.site.data.customers.remove(second!);
      // 100 ids at most: the sweep lets its memory go and reads the seen pages, a chunk at a time.
      expect(await c.run({ sweepChunk: 100 }, { full: true })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { deleted: 1 } });
      expect(seenReads).toBeGreaterThan(1);
      expect((await c.storedIds()).sort()).toEqual(c.platformIds().sort());
    } finally {
      restore();
    }
  });

  it('an API Direct full sync compares its unchanged pages in memory, waiting for the stored versions of a small object: no BatchGetItem; under Webhooks and API each page reads the store', async () => {
    const commands = watchCommands(local.dynamo.client);
    for (const method of ['api', 'both'] as const) {
      const c = await connected(450, { method });
      await c.run();
      const [changed] = c.platformIds();
      c.site.update('customers', changed!, { email: `changed-${method}@example.com` });
      commands.reset();
      // The platform answers at once: the first pages arrive before the listing (one Query for 450 here) is whole, and wait for it.
      expect(await c.run({}, { full: true })).toMatchObject({ outcome: 'finished', mode: 'full', pages: 5, counts: { updated: 1, unchanged: 449 } });
      expect(commands.sent('QueryCommand')).toBeGreaterThan(0);
      expect(commands.sent('BatchGetItemCommand')).toBe(method === 'api' ? 0 : 5);
      expect(commands.itemsWritten(isRecordKey(c.accountId, 'billing', 'customers'))).toBe(1);
      expect((await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), changed!))?.email).toBe(`changed-${method}@example.com`);
    }
  });

  it('a record the run wrote or deleted and a later page lists again (slices meeting at a boundary second) is compared with what the run stored, not the listing read before', async () => {
    const { table } = local.gateway;
    const place = recordsAt(`acct-${++accountNumber}`, 'billing', 'customers');
    const fields = (id: string, name: string) => ({ id, name });
    // Stored before the run, so what its listing reads: x, y and z as they were.
    await store.putRecordsBatch(table, place,
      ['x', 'y', 'z', 'a', 'b'].map((id) => ({ id, hash: recordHash(fields(id, 'old')), body: fields(id, 'old'), syncedAt: new Date().toISOString() })),
    );
    const listed = (id: string, name: string): NormalisedRecord => ({ id, fields: fields(id, name) });
    // x and y changed on the platform and z was deleted; the next page lists x again (its write
    // still on its way) and the one after y and z (stored by then). A slice writes its first page
    // before it fetches the next: the pages that matter come after it.
    const pages: Array<Pick<SyncPage, 'records' | 'deletedIds'>> = [
      { records: [listed('a', 'old')], deletedIds: [] },
      { records: [listed('x', 'new'), listed('y', 'new')], deletedIds: ['z'] },
      { records: [listed('x', 'new'), listed('b', 'old')], deletedIds: [] },
      { records: [listed('y', 'new')], deletedIds: ['z'] },
    ];
    const sweep = new SweepInMemory(storedVersionsIn(table), place, 1_000);
    const source: SyncSource = {
      async fetchPage(_window, cursor) {
        const index = cursor === undefined ? 0 : (cursor.page as number);
        // The first page answers once the listing is whole: every page compares in memory.
        if (index === 0) await sweep.missing();
        return { ...pages[index]!, ...(index + 1 < pages.length ? { next: { page: index + 1 } } : {}) };
      },
    };
    const commands = watchCommands(local.dynamo.client);
    // The store takes a while with each batch of records: the next page compares x while its write is on its way.
    const slowBatches = 'slow-batches-' + place.accountId;
    local.dynamo.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'BatchWriteItemCommand') await new Promise((resolve) => setTimeout(resolve, 150));
        return next(args);
      },
      { step: 'initialize', name: slowBatches },
    );
    const counts = { created: 0, updated: 0, unchanged: 0, deleted: 0 };
    const outcome = await pageSlices(
      {
        table,
        place,
        source,
        keeps: () => true,
        pace: () => undefined,
        batchWrites: true,
        seenScope: { ...place, run: 'run-1' },
        seenExpiresAt: () => Math.floor(Date.now() / 1000) + 3600,
        inMemory: sweep,
        runStartedAt: Math.floor(Date.now() / 1000),
        now: () => Date.now(),
        log,
        save: async () => {},
        mayFetch: () => true,
      },
      { window: { mode: 'full' }, pageIndex: 0 },
      counts,
    ).finally(() => local.dynamo.client.middlewareStack.remove(slowBatches));
    expect(outcome).toMatchObject({ complete: true, pages: 4 });
    expect(counts).toEqual({ created: 0, updated: 2, unchanged: 4, deleted: 1 });
    expect(commands.sent('BatchGetItemCommand')).toBe(0);
    // x and y written once, z marked deleted once.
    expect(commands.itemsWritten(isRecordKey(place.accountId, 'billing', 'customers'))).toBe(3);
    expect((await store.getRecord(table, recordsAt(place.accountId, 'billing', 'customers'), 'x'))?.body).toEqual(fields('x', 'new'));
    expect(await sweep.missing()).toEqual([]);
  });

  it('a reconcile killed after writing changes is resumed without trusting a listing from before: nothing lost, nothing written twice', async () => {
    const c = await connected(450);
    await c.run();
    // A fifth of the records changed on the platform since.
    const changed = c.platformIds().filter((_, index) => index % 5 === 0);
    for (const id of changed) c.site.update('customers', id, { email: `changed-${id}@example.com` });
    const commands = watchCommands(local.dynamo.client);
    // Pages answer after the stored versions are read: the killed run compares in memory.
    sim.setLatency({ ms: 100 });
    let killedAt: number | undefined;
    void c.run(
      {
        leaseSeconds: 30,
        afterPage: (pages) => {
          if (pages >= 2 && killedAt === undefined) {
            killedAt = pages;
            return new Promise<void>(() => {}); // stops dead: no cleanup, the claim still held
          }
        },
      },
      { full: true },
    );
    while (killedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    while (commands.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(commands.sent('BatchGetItemCommand')).toBe(0);
    const writtenByKilled = commands.itemsWritten(isRecordKey(c.accountId, 'billing', 'customers'));
    expect(writtenByKilled).toBeGreaterThan(0);
    clockOffset += 31_000; // the claim lapses, as SQS redelivers the job
    const resumed = await c.run({ leaseSeconds: 30 });
    clockOffset -= 31_000;
    sim.setLatency({ ms: 0 });
    expect(resumed).toMatchObject({ outcome: 'finished', mode: 'full', pages: 5 - killedAt });
    // The resumed run reads the store for each page: what its predecessor wrote is seen, not rewritten.
    expect(commands.sent('BatchGetItemCommand')).toBe(5 - killedAt);
    expect(commands.itemsWritten(isRecordKey(c.accountId, 'billing', 'customers'))).toBe(changed.length);
    expect((await c.storedIds()).sort()).toEqual(c.platformIds().sort());
    for (const id of changed) expect((await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), id))?.email).toBe(`changed-${id}@example.com`);
  });

  it('a run that reaches its page budget hands over to a continuation job that finishes it', async () => {
    const c = await connected(350);
    const sent: SyncJob[] = [];
    const original = local.gateway.queues.syncJobs.send.bind(local.gateway.queues.syncJobs);
    // Kept and still sent (no consumer runs here): the send is judged against sync-job's role (local/iam/).
    local.gateway.queues.syncJobs.send = async (jobs) => (sent.push(...jobs), original(jobs));
    try {
      const first = await runAs('sync-job', () => c.run({ maxPages: 2 }));
      expect(first).toMatchObject({ outcome: 'continued', pages: 2 });
      expect(sent).toEqual([expect.objectContaining({ accountId: c.accountId, object: 'customers', runId: (first as { runId: string }).runId })]);
      const rest = await c.run({}, { runId: sent[0]!.runId! });
      expect(rest).toMatchObject({ outcome: 'finished', pages: 2, counts: { created: 350 } });
      expect(c.requests()).toBe(4); // no page fetched ahead past the budget
    } finally {
      local.gateway.queues.syncJobs.send = original;
    }
  });

  it('a platform that stays down fails the job with its reason, keeps the cursor, and the retry resumes from it', async () => {
    const c = await connected(250);
    sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 100, pathPrefix: `/sites/site-${accountNumber}/api/v2/customers`, method: 'GET' });
    let pagesBeforeOutage = 0;
    const failed = await c.run({
      afterPage: (pages) => {
        pagesBeforeOutage = pages;
      },
    });
    expect(failed).toMatchObject({ outcome: 'failed', retry: true, problem: { health: 'degraded' } });
    expect(pagesBeforeOutage).toBe(0);
    const checkpoint = await store.getSyncCheckpoint(local.gateway.table, c.accountId, 'billing', 'customers');
    expect(checkpoint?.lastError?.message).toBeTruthy();
    expect(checkpoint?.runId).toBeUndefined();
    expect((await store.getConnection(local.gateway.table, c.accountId, 'billing'))?.health.state).toBe('degraded');

    sim.faults.clear();
    expect(await c.run()).toMatchObject({ outcome: 'finished', counts: { created: 250 } });
    expect((await store.getConnection(local.gateway.table, c.accountId, 'billing'))?.health.state).toBe('healthy');
  });

  it('HTML or truncated JSON from the platform fails the job with the reason and leaves stored data untouched', async () => {
    const c = await connected(150);
    await c.run();
    const before = await c.storedIds();
    sim.faults.inject({ fault: { kind: 'html' }, times: 10 });
    const failed = await c.run();
    // The client already retried; the job is not retried on the queue (it would hold up the
    // connection's other jobs): the next scheduled run resumes from the kept checkpoint.
    expect(failed).toMatchObject({ outcome: 'failed', retry: false, problem: { health: 'degraded' } });
    if (failed.outcome === 'failed') expect(failed.problem.reason).toMatch(/./);
    expect((await c.storedIds()).sort()).toEqual(before.sort());
  });

  it('a revoked key marks the connection for reconnection and is not retried', async () => {
    const c = await connected(10);
    const stored = await store.getConnection(local.gateway.table, c.accountId, 'billing');
    sim.removeApiKey(stored!.config.siteName as string, (await local.gateway.vault.open({ accountId: c.accountId, connector: 'billing' }, stored!.credentials)).apiKey!);
    const failed = await c.run();
    expect(failed).toMatchObject({ outcome: 'failed', retry: false, problem: { health: 'needs_reconnect' } });
    expect((await store.getConnection(local.gateway.table, c.accountId, 'billing'))?.health).toMatchObject({ state: 'needs_reconnect', remedy: expect.stringMatching(/key/i) });
  });

  it('deletions on the platform are detected; a disconnected connection stops syncing', async () => {
    const c = await connected(20);
    await c.run();
    const victim = c.platformIds()[5]!;
    c.site.delete('customers', victim);
    const incremental = await c.run();
    expect(incremental).toMatchObject({ outcome: 'finished', counts: { deleted: 1 } });
    expect(await c.storedIds()).not.toContain(victim);

    await store.deleteConnection(local.gateway.table, c.accountId, 'billing');
    expect(await c.run()).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/disconnected/) });
  });

  it('a full sync that deletes a record from its pages does not sweep it and count it again', async () => {
    const c = await connected(20);
    await c.run();
    const victim = c.platformIds()[5]!;
    // Listed as a deleted row: the page removes it; the sweep in memory read it as stored before.
    c.site.delete('customers', victim);
    expect(await c.run({}, { full: true })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { deleted: 1 } });
    expect(await c.storedIds()).not.toContain(victim);
  });

  it('the deletion sweep spares a record a webhook stored while the full sync ran', async () => {
    const c = await connected(150);
    const full = await c.run({
      afterPage: async () => {
        // Written while the run pages, as the webhook worker would.
        const webhookRecord = { id: 'cust_from_webhook', hash: 'h', body: { id: 'cust_from_webhook' }, sourceVersion: Date.now(), syncedAt: new Date().toISOString() };
        await store.putRecordIfNewer(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), webhookRecord);
      },
    });
    expect(full).toMatchObject({ outcome: 'finished', mode: 'full', counts: { deleted: 0 } });
    expect(await c.storedIds()).toContain('cust_from_webhook');
  });

  it('a deletion is stored at its version: an older event arriving later cannot bring the record back', async () => {
    const c = await connected(10);
    await c.run();
    const victim = c.platformIds()[3]!;
    const versionBefore = (await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), victim))!.sourceVersion!;
    c.site.delete('customers', victim);
    await c.run();
    const tombstone = await store.getRecord(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), victim);
    expect(tombstone?.deletedAt).toBeDefined();
    expect(tombstone?.sourceVersion).toBeGreaterThan(versionBefore);
    const late = await store.putRecordIfNewer(local.gateway.table, recordsAt(c.accountId, 'billing', 'customers'), {
      id: victim,
      hash: 'old',
      body: { id: victim },
      sourceVersion: versionBefore + 1,
    });
    expect(late).toBe('stale');
    expect(await c.storedIds()).not.toContain(victim);
  });

  it('honours the settings: objects not selected and Webhooks-only connections are not synced by schedule', async () => {
    const c = await connected(5, { dataObjects: ['subscriptions'] });
    expect(await c.run()).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/not among/) });
    const w = await connected(5, { method: 'webhooks' });
    expect(await w.run()).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/Webhooks only/) });
    expect(w.requests()).toBe(0);
  });
});
