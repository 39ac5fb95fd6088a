import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';
import { connectors } from '../../shared/connections/registry';
import { testConnection } from '../../shared/connections/test-connection';
import { connectionRateKey } from '../../shared/http/rate-budget';
import { log } from '../../shared/log/logger';
import type { SyncJob } from '../../shared/queues/messages';
import { runSyncJob, type SyncRunOptions, type SyncRunResult } from '../../shared/sync/run-sync-job';
import { watermarkOf } from '../../shared/sync/sync-decisions';
import { applyWebhookEvent } from '../../shared/webhooks/apply';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { localDynamoClient, watchCommands } from '../support/dynamo';
import { generatedKey } from '../support/local-runtime';
import { isRecordKey, storeConnection, recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * A data object listed in slices side by side, against the payment simulator answering with a real
 * platform's delay, under the connection's one rate budget (kept in the table). Counts only: the
 * machine is shared, so no assertion is about time.
 */
/** Test-mode customers: more than a first sync's piece (FIRST_SYNC_PIECE_RECORDS), so its listing splits. */
const TEST_CUSTOMERS = 4_000;

describe('slices in flight under one rate budget per connection', () => {
  let sim: PaymentSimulator;
  let local: LocalGateway;
  let clockOffset = 0;
  let accountNumber = 0;

  beforeAll(async () => {
    sim = await startPaymentSimulator({ seed: 13 });
    local = await startLocalGateway({
      env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '5000' },
      now: () => Date.now() + clockOffset,
    });
    // Test mode: enough records that a first sync splits (its pieces hold FIRST_SYNC_PIECE_RECORDS).
    sim.seedCustomers(TEST_CUSTOMERS, { mode: 'test' });
    sim.seedCustomers(2_000, { mode: 'live' });
    sim.seedSubscriptions({ mode: 'live' });
  });
  afterAll(async () => {
    await local.stop();
    await sim.stop();
  });
  beforeEach(() => {
    sim.faults.clear();
    sim.setRateLimit(undefined);
    sim.setLatency({ ms: 0 });
  });

  /** A fresh account whose payment connection has its own key (so its own bucket on the platform). */
  async function connected(
    mode: 'test' | 'live',
    requestsPerSecond: number,
    method: 'api' | 'both' = 'api',
    object: 'customers' | 'subscriptions' = 'customers',
    requestsPerSecondPerEndpoint?: number,
  ) {
    const accountId = `acct-slices-${++accountNumber}`;
    const secretKey = generatedKey(`rk_${mode}_`);
    sim.addApiKey(secretKey, { access: 'read' });
    await storeConnection(local.gateway, {
      accountId,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode, requestsPerSecond, ...(requestsPerSecondPerEndpoint ? { requestsPerSecondPerEndpoint } : {}) },
      credentials: { secretKey },
      syncSettings: { dataObjects: ['customers', 'subscriptions'], frequency: 'daily', method },
    });
    const job: SyncJob = { accountId, connector: 'payment', object, trigger: 'manual', requestedAt: new Date().toISOString() };
    const run = (options: SyncRunOptions = {}, overrides: Partial<SyncJob> = {}) => runSyncJob(local.gateway, connectors.syncing(), { ...job, ...overrides }, log, options);
    /** Runs again until the sync finishes (as SQS redelivers a job that failed for a reason time can fix). */
    const runToEnd = async (options: SyncRunOptions = {}) => {
      let result: SyncRunResult = await run(options);
      for (let attempt = 0; attempt < 10 && result.outcome === 'failed' && result.retry; attempt += 1) result = await run(options);
      return result;
    };
    const storedIds = async (of: 'customers' | 'subscriptions' = 'customers') => {
      const ids: string[] = [];
      let startKey: string | undefined;
      do {
        const page = await store.listRecords(local.gateway.table, recordsAt(accountId, 'payment', of), { limit: 1000, ...(startKey ? { startKey } : {}) });
        ids.push(...page.records.map((record) => record.id));
        startKey = page.nextStartKey;
      } while (startKey);
      return ids.sort();
    };
    const platformIds = (of: 'customers' | 'subscriptions' = 'customers') => [...sim.state[mode][of].values()].map((record) => record.id).sort();
    /** The connection's bucket as the table holds it. */
    const bucket = async () => (await store.getRateBucket(local.gateway.table, connectionRateKey(accountId, 'payment'))) ?? { tat: 0 };
    return { accountId, secretKey, run, runToEnd, storedIds, platformIds, bucket };
  }

  it('a run killed with slices in flight resumes every slice where it stopped: nothing lost, nothing written twice', async () => {
    const c = await connected('test', 200);
    // A slow platform's answer time: pages wait on it rather than on the store, so the listing is
    // split into slices.
    sim.setLatency({ ms: 500, jitterMs: 50 });
    const writes = watchCommands(local.dynamo.client);
    let killedAt: number | undefined;
    void c.run({
      leaseSeconds: 30,
      checkpointEveryMs: 0,
      afterPage: (pages) => {
        if (killedAt === undefined && pages >= 4) {
          killedAt = pages;
          return new Promise<void>(() => {}); // stops dead: no cleanup, the claim still held
        }
      },
    });
    while (killedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    // A killed process writes nothing more: let what the held run had already sent land first.
    while (writes.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // What the killed run had saved: several slices, each with its own place.
    const saved = (await store.getSyncCheckpoint(local.gateway.table, c.accountId, 'payment', 'customers'))!.cursor as { slices: Array<{ page?: unknown; pages: number }> };
    expect(saved.slices.length).toBeGreaterThanOrEqual(2);

    clockOffset += 31_000; // the claim lapses, as SQS redelivers the job
    const resumed = await c.runToEnd({ leaseSeconds: 30 });
    clockOffset -= 31_000;
    expect(resumed).toMatchObject({ outcome: 'finished', mode: 'full' });
    // It went on from the saved places: it did not list every page again.
    expect((resumed as { pages: number }).pages).toBeLessThan(TEST_CUSTOMERS / 100 + saved.slices.length);
    expect(await c.storedIds()).toEqual(c.platformIds());
    // One record write a record: pages listed again after the kill were compared and left alone.
    expect(writes.itemsWritten(isRecordKey(c.accountId, 'payment', 'customers'))).toBe(TEST_CUSTOMERS);
  });

  it('a run that fails with pages still being written returns only once they land: its retry writes nothing twice', async () => {
    // A fast platform: pages queue for the store's write pace (after its first second's worth),
    // several of them in writing when the run fails.
    const c = await connected('test', 200);
    const writes = watchCommands(local.dynamo.client);
    // Once the listing is under way, the platform refuses one call (400: no retry of the same call
    // would help): the run fails while other slices still have pages in writing.
    let requests = 0;
    const stop = sim.onRequest(() => {
      requests += 1;
      if (requests === 14) sim.faults.inject({ fault: { kind: 'status', status: 400 }, times: 1, pathPrefix: '/v1/customers' });
    });
    try {
      const failed = await c.run();
      expect(failed).toMatchObject({ outcome: 'failed' });
      // Retried at once, as the next scheduled run or a manual one would.
      expect(await c.run()).toMatchObject({ outcome: 'finished' });
    } finally {
      stop();
    }
    expect(await c.storedIds()).toEqual(c.platformIds());
    expect(writes.itemsWritten(isRecordKey(c.accountId, 'payment', 'customers'))).toBe(TEST_CUSTOMERS);
  });

  it('a reconcile over a listing seen complete starts with its slices at once; a first sync with nothing stored discovers from one page', async () => {
    const c = await connected('live', 40);
    sim.setLatency({ ms: 100, jitterMs: 20 });
    /** Holds every answer until `enough` requests came or the platform waited `patienceMs`: the requests a run sends before its first answer. */
    const beforeFirstAnswer = (enough: number, patienceMs: number) => {
      let requests = 0;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const timer = setTimeout(open, patienceMs);
      let seen: number | undefined;
      const stop = sim.onRequest(async () => {
        requests += 1;
        if (requests >= enough) open();
        await gate;
        seen ??= requests;
      });
      return () => {
        clearTimeout(timer);
        stop();
        return seen;
      };
    };
    // A first sync: nothing to plan from, one request until its first page answers.
    let counted = beforeFirstAnswer(2, 400);
    expect(await c.run()).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 2_000 } });
    expect(counted()).toBe(1);
    const listing = watermarkOf(await store.getSyncCheckpoint(local.gateway.table, c.accountId, 'payment', 'customers'))!.listing!;
    // Every record listed (a slice's boundary second may list one twice).
    const profiled = listing.pieces.reduce((sum, piece) => sum + piece.records, 0);
    expect(profiled).toBeGreaterThanOrEqual(2_000);
    expect(profiled).toBeLessThan(2_020);

    // The reconcile: 40/s at ~100 ms wants 5 or 6 slices in flight (by the answer time the first
    // sync saw); they are cut before any answer.
    const before = sim.totalRequests();
    counted = beforeFirstAnswer(4, 5_000);
    const reconcile = await c.run({}, { full: true });
    expect(counted()).toBeGreaterThanOrEqual(4);
    expect(reconcile).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, updated: 0, deleted: 0 } });
    // 20 pages, and at most one part-filled page more per slice (six to eight, with the splits the
    // last, open-ended slice may make).
    expect(sim.totalRequests() - before).toBeLessThanOrEqual(28);
    expect(await c.storedIds()).toEqual(c.platformIds());
  });

  it('a reconcile planned from a listing of whole pages cuts its slices at those page edges: one request per 100 records, however unevenly records lie', async () => {
    // Subscriptions: created at random seconds (an hour after their customer at most), so a cut by
    // estimate would land mid-page.
    const c = await connected('live', 40, 'api', 'subscriptions');
    sim.setLatency({ ms: 100, jitterMs: 20 });
    // One listing (every page full but the last): its profile's piece edges are page edges.
    let before = sim.totalRequests();
    expect(await c.run({ maxSlices: 1 })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 2_000 } });
    expect(sim.totalRequests() - before).toBe(20);
    // Where a slice's bound lies: records newer than a page edge are a whole number of pages.
    const created = [...sim.state.live.subscriptions.values()].map((subscription) => subscription.created);
    const atPageEdge = (query: URLSearchParams) =>
      ['created[gte]', 'created[lt]'].every((bound) => !query.has(bound) || created.filter((at) => at >= Number(query.get(bound))).length % 100 === 0);
    for (const run of ['reconcile', 'its repeat']) {
      before = sim.totalRequests();
      sim.resetMaxInFlight();
      // Each slice's first request (no cursor): when it came, and whether its bounds are page edges.
      const slicesStarted: Array<{ at: number; atPageEdges: boolean }> = [];
      const stop = sim.onRequest((request) => {
        if (request.path === '/v1/subscriptions' && !request.query.has('starting_after')) slicesStarted.push({ at: performance.now(), atPageEdges: atPageEdge(request.query) });
      });
      // At most the five slices 40/s at ~100 ms wants: on a loaded machine the answer time the run
      // measures grows with its own event-loop lag, and more slices wanted would split more.
      const reconcile = await c.run({ maxSlices: 5 }, { full: true }).finally(stop);
      expect(reconcile, run).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, updated: 0, deleted: 0 } });
      expect(sim.maxInFlight(), run).toBeGreaterThanOrEqual(3);
      // The slices that started before any page was answered (at ~100 ms) are the plan's: cut at page edges.
      const planned = slicesStarted.filter((slice) => slice.at - slicesStarted[0]!.at < 60);
      expect(planned.length, run).toBeGreaterThanOrEqual(1);
      expect(planned.every((slice) => slice.atPageEdges), run).toBe(true);
      // Slices side by side, each of whole pages: 20 requests, as one listing. A slice that ends early
      // can make the run split another as it pages, and a split is cut by estimate: each piece that
      // starts off a page edge may add one part-filled page. How many splits a run makes depends on the
      // machine's load (the answer times it measures); a plan cut by estimate would add a page a slice.
      const cutByEstimate = slicesStarted.filter((slice) => !slice.atPageEdges).length;
      expect(sim.totalRequests() - before, run).toBeLessThanOrEqual(20 + cutByEstimate);
    }
    expect(await c.storedIds('subscriptions')).toEqual(c.platformIds('subscriptions'));
  });

  it('a planned reconcile keeps paging while its first page waits for the stored versions: each slice asks for its next page before the listing is whole', async () => {
    const c = await connected('live', 40);
    sim.setLatency({ ms: 100, jitterMs: 20 });
    expect(await c.run({ maxSlices: 3 })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 2_000 } });
    // The reconcile's read of the stored versions (Queries of the object's records) is held until let go.
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const name = 'held-listing';
    local.dynamo.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand' && JSON.stringify(args.input).includes(`${c.accountId}#payment#customers`)) await held;
        return next(args);
      },
      { step: 'initialize', name },
    );
    const asked: Array<{ first: boolean }> = [];
    const stop = sim.onRequest((request) => {
      if (request.path === '/v1/customers') asked.push({ first: !request.query.has('starting_after') });
    });
    try {
      const reconcile = c.run({ maxSlices: 3 }, { full: true });
      // Answers come in about 100 ms: a second is time for every slice to ask for as much as it may.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const slices = asked.filter((request) => request.first).length;
      const next = asked.length - slices;
      letGo();
      expect(await reconcile).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, updated: 0, deleted: 0 } });
      // Three slices planned at once; each fetched its second page ahead while its first waited
      // (none did before: a slice waited for the run's first write to decide whether to split).
      expect(slices).toBe(3);
      expect(next).toBe(3);
    } finally {
      stop();
      letGo();
      local.dynamo.client.middlewareStack.remove(name);
    }
    expect(await c.storedIds()).toEqual(c.platformIds());
  });

  it('from a first sync that discovered its slices, planned reconciles take about as many requests as it did (its part-filled pages, not more)', async () => {
    const c = await connected('live', 40, 'api', 'subscriptions');
    sim.setLatency({ ms: 100, jitterMs: 20 });
    const requests: number[] = [];
    for (const full of [false, true, true]) {
      const before = sim.totalRequests();
      expect(await c.run({}, full ? { full: true } : {})).toMatchObject({ outcome: 'finished', mode: 'full' });
      requests.push(sim.totalRequests() - before);
    }
    // Each slice's records are what the first sync found: the plan cannot make them whole pages
    // where its slices ended and adds none (test/sync/slice-plan.test.ts); a planned slice that ends
    // early may still let another split by estimate as it pages, a part-filled page or two more.
    expect(requests[1]).toBeLessThanOrEqual(requests[0]! + 2);
    expect(requests[2]).toBeLessThanOrEqual(requests[0]! + 2);
    expect(await c.storedIds('subscriptions')).toEqual(c.platformIds('subscriptions'));
  });

  it('from a first sync cut into slices that each ended on a part-filled page, a planned reconcile makes at most one request per 100 records and one more: its profile was re-cut on one page grid', async () => {
    const c = await connected('live', 40, 'api', 'subscriptions');
    // Slow answers, so that even on a busy machine the pages wait on the platform rather than the store: the first sync splits.
    sim.setLatency({ ms: 300, jitterMs: 30 });
    let before = sim.totalRequests();
    expect(await c.run()).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 2_000 } });
    // Discovered slices, each ending on its own part-filled page: more requests than whole pages.
    expect(sim.totalRequests() - before, 'first sync').toBeGreaterThan(21);
    const listing = watermarkOf(await store.getSyncCheckpoint(local.gateway.table, c.accountId, 'payment', 'subscriptions'))!.listing!;
    // The saved profile: pieces of whole pages (but the newest, and one a second shared at the grid
    // may leave a few over), counted from the oldest record; no page's keys kept on the checkpoint.
    for (const piece of listing.pieces) expect(Object.keys(piece).sort()).toEqual(['from', 'records', 'to']);
    const offGrid = listing.pieces.slice(0, -1).map((piece) => piece.records).filter((records) => records % 100 !== 0);
    expect(offGrid.length, `pieces off whole pages: ${offGrid.join(' ')}`).toBeLessThanOrEqual(2);
    // The reconcile at 100 ms: 40/s wants about five slices in flight, as many as the plan cuts (at
    // 300 ms it would want 14, and split its planned slices by estimate as they page).
    sim.setLatency({ ms: 100, jitterMs: 20 });
    before = sim.totalRequests();
    sim.resetMaxInFlight();
    expect(await c.run({}, { full: true })).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, updated: 0, deleted: 0 } });
    expect(sim.maxInFlight()).toBeGreaterThanOrEqual(3);
    expect(sim.totalRequests() - before, 'planned reconcile').toBeLessThanOrEqual(Math.ceil(2_000 / 100) + 1);
    expect(await c.storedIds('subscriptions')).toEqual(c.platformIds('subscriptions'));
  });

  it('a planned reconcile killed with its slices in flight resumes every slice: nothing lost, nothing listed from the start again', async () => {
    const c = await connected('live', 40);
    sim.setLatency({ ms: 100, jitterMs: 20 });
    expect(await c.run()).toMatchObject({ outcome: 'finished', counts: { created: 2_000 } });
    let killed = false;
    void c.run(
      {
        leaseSeconds: 30,
        checkpointEveryMs: 0,
        afterPage: (pages) => {
          // Early (7 slices of about 3 pages): a save that lags on a busy machine still finds several in flight.
          if (!killed && pages >= 3) {
            killed = true;
            return new Promise<void>(() => {});
          }
        },
      },
      { full: true },
    );
    while (!killed) await new Promise((resolve) => setTimeout(resolve, 5));
    const saved = (await store.getSyncCheckpoint(local.gateway.table, c.accountId, 'payment', 'customers'))!.cursor as { slices: unknown[]; pageIndex: number };
    expect(saved.slices.length).toBeGreaterThanOrEqual(2);
    clockOffset += 31_000;
    const resumed = await c.runToEnd({ leaseSeconds: 30 });
    clockOffset -= 31_000;
    // Nothing written twice, nothing taken for deleted: every record compared once and left alone.
    expect(resumed).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, updated: 0, deleted: 0 } });
    expect((resumed as { counts: { unchanged: number } }).counts.unchanged).toBeGreaterThanOrEqual(2_000);
    expect((resumed as { pages: number }).pages).toBeLessThan(21 - saved.pageIndex + 5);
    expect(await c.storedIds()).toEqual(c.platformIds());
  });

  it('many slices in flight hold the platform\'s limit: the simulator answers 429 to under 1% of requests', async () => {
    const c = await connected('live', 40);
    expect(await c.run({ maxSlices: 1 })).toMatchObject({ outcome: 'finished', counts: { created: 2_000 } });
    // A full reconcile (every page read and compared, nothing to write: the platform is the limit)
    // against a platform at its limit of 40/s answering in 250 ms.
    sim.setRateLimit({ perSecond: 40 }, { mode: 'live' });
    sim.setLatency({ ms: 250, jitterMs: 80 });
    sim.resetMaxInFlight();
    const before = sim.totalRequests();
    const result = await c.run({ maxSlices: 24 }, { full: true });
    expect(result).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0, unchanged: expect.any(Number) } });
    const requests = sim.totalRequests() - before;
    // Several slices at once (40/s × 0.25 s wants about 12 in flight)...
    expect(sim.maxInFlight()).toBeGreaterThanOrEqual(4);
    // ...and the platform's own limiter almost never had to refuse one.
    expect(sim.rateLimited(c.secretKey) / requests).toBeLessThan(0.01);
    expect(await c.storedIds()).toEqual(c.platformIds());
  });

  it('each endpoint\'s own limit holds under the connection\'s: two objects listed side by side, each paced to its endpoint, the simulator answers 429 to under 1%', async () => {
    // The platform limits each endpoint (here 10/s) as well as the account (40/s): one object's
    // slices draw from both budgets. Without the endpoint's, its pages go at 40/s and a quarter of them get 429.
    const c = await connected('live', 40, 'api', 'customers', 10);
    expect(await c.run({ maxSlices: 1 })).toMatchObject({ outcome: 'finished', counts: { created: 2_000 } });
    expect(await c.run({ maxSlices: 1 }, { object: 'subscriptions' })).toMatchObject({ outcome: 'finished', counts: { created: 2_000 } });
    sim.setRateLimit({ perSecond: 40 }, { mode: 'live', perEndpoint: { perSecond: 10 } });
    sim.setLatency({ ms: 100, jitterMs: 30 });
    const before = sim.totalRequests();
    const listed = { customers: 0, subscriptions: 0 };
    const stopWatching = sim.onRequest((request) => {
      if (request.path === '/v1/customers') listed.customers += 1;
      if (request.path === '/v1/subscriptions') listed.subscriptions += 1;
    });
    try {
      const results = await Promise.all([c.run({ maxSlices: 8 }, { full: true }), c.run({ maxSlices: 8 }, { full: true, object: 'subscriptions' })]);
      for (const result of results) expect(result).toMatchObject({ outcome: 'finished', mode: 'full', counts: { created: 0 } });
    } finally {
      stopWatching();
    }
    const requests = sim.totalRequests() - before;
    expect(listed.customers).toBeGreaterThanOrEqual(20);
    expect(listed.subscriptions).toBeGreaterThanOrEqual(20);
    expect(sim.rateLimited(c.secretKey) / requests).toBeLessThan(0.01);
    expect(await c.storedIds()).toEqual(c.platformIds());
    expect(await c.storedIds('subscriptions')).toEqual(c.platformIds('subscriptions'));
  });

  it('a 429 storm slows every slice of that connection and no other connection', async () => {
    // Connection A lists customers in slices when a storm of 429s hits them; connection B (another
    // platform account) lists its subscriptions at the same time.
    sim.setLatency({ ms: 200, jitterMs: 50 });
    const a = await connected('test', 60);
    const b = await connected('live', 30, 'api', 'subscriptions');
    const slicesOfA = new Set<string>();
    const stopWatching = sim.onRequest((request) => {
      const user = Buffer.from((request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString('utf8');
      if (user.startsWith(a.secretKey)) slicesOfA.add(`${request.query.get('created[gte]')}..${request.query.get('created[lt]')}`);
    });
    let stormed = false;
    const storm = sim.onRequest(() => {
      // Once A's listing is split, its next 12 requests get 429 (no Retry-After).
      if (!stormed && slicesOfA.size >= 3) {
        stormed = true;
        sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 12, pathPrefix: '/v1/customers', method: 'GET' });
      }
    });
    try {
      const [resultA, resultB] = await Promise.all([a.runToEnd({ maxSlices: 12 }), b.run({ maxSlices: 12 })]);
      expect(resultA).toMatchObject({ outcome: 'finished' });
      expect(resultB).toMatchObject({ outcome: 'finished' });
    } finally {
      stopWatching();
      storm();
    }

    // A: the storm hit while several slices were in flight, and their one bucket was slowed to half
    // its setting or less: every slice draws from it, so every slice went slower. Nothing was lost.
    expect(stormed).toBe(true);
    expect(sim.faults.served.get('status')).toBeGreaterThan(0);
    expect(slicesOfA.size).toBeGreaterThanOrEqual(3);
    expect((await a.bucket()).slowedTo).toBeLessThanOrEqual(30);
    expect(await a.storedIds()).toEqual(a.platformIds());

    // B: never refused, its bucket never slowed, every record stored.
    expect(sim.rateLimited(b.secretKey)).toBe(0);
    expect((await b.bucket()).slowedTo).toBeUndefined();
    expect(await b.storedIds('subscriptions')).toEqual(b.platformIds('subscriptions'));
  });

  it('Test Connection and webhook record fetches draw from the same bucket as the connection\'s syncs', async () => {
    const c = await connected('live', 50, 'both');
    const other = await connected('live', 50);
    const before = await c.bucket();
    const otherBefore = await other.bucket();
    // Test Connection (in the API function): one reservation on the connection's time line.
    expect(await testConnection(local.gateway, c.accountId, connectors.get('payment'), log)).toMatchObject({ ok: true });
    const afterTest = await c.bucket();
    expect(afterTest.tat).toBeGreaterThan(before.tat);
    // The webhook worker, another Lambda (its own store client, so its own process-side budget),
    // fetches a customer the gateway has not stored: another reservation on the same time line.
    const worker = { ...local.gateway, table: { client: sdkTableClient(localDynamoClient(local.dynamo.endpoint)), tableName: local.dynamo.tableName } };
    const customer = [...sim.state.live.customers.values()][0]!;
    const [event] = sim.createSubscription(customer.id).events;
    const applied = await applyWebhookEvent(
      worker,
      { accountId: c.accountId, connector: 'payment', eventId: event!.id, eventType: event!.type, receivedAt: new Date().toISOString(), payload: event as unknown as Record<string, unknown> },
      log,
    );
    expect(applied).toMatchObject({ outcome: 'applied', fetched: 1 });
    expect((await c.bucket()).tat).toBeGreaterThan(afterTest.tat);
    // No other connection's bucket moved.
    expect((await other.bucket()).tat).toBe(otherBefore.tat);
  });
});
