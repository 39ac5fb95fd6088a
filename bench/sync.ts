import Stripe from 'stripe';
import { startLocalGateway, type LocalGateway } from '../local/local-gateway';
import { watchCommands } from '../local/local-dynamo';
import { runAs } from '../local/iam/enforcement';
import { connectors } from '../shared/connections/registry';
import type { ConnectorName } from '../shared/connectors';
import { setLogSink } from '../shared/log/logger';
import { forgetRateBudgets } from '../shared/http/rate-budget';
import type { RecordWrite } from '../shared/store/items';
import { runSyncJob, type SyncRunOptions, type SyncRunResult } from '../shared/sync/run-sync-job';
import { isRecordKey as isObjectRecordKey, storeConnection } from '../test/support/stored-connection';
import { readPlace } from '../shared/reads/record-place';
import { RECORD_SHARDS } from '../shared/store/record-layout';
import { previousFigures, type Figures } from './results-file';
import { FIRST5_NOTE, firstFiveRun } from './sync-first5';
import { FIRST_BILLING_NOTE, firstBillingRun } from './sync-first-billing';
import { round } from './statistics';
import { SyncPlatforms } from './sync-platforms';
import * as store from '../shared/store/store';

const CUSTOMERS = 10_000;
const PAYMENT_PER_SECOND = 100;
/** The payment platform's own limit on each endpoint (one object's list), on top of the global one. */
const PAYMENT_PER_ENDPOINT = 25;
/** The payment platform's limit for test-mode keys. */
const PAYMENT_TEST_PER_SECOND = 25;
/** The billing platform allows 150/min; scaled 10x in time (same ratios) to keep the bench short. */
const BILLING_PER_MINUTE_SCALED = 1_500;
const OBJECTS = ['customers', 'subscriptions'] as const;
const CONNECTORS = ['payment', 'billing'] as const;
/** What the payment platform lets a connection's listing of these objects do: each object's list is an endpoint of its own. */
const PAYMENT_LISTING_PER_SECOND = Math.min(PAYMENT_PER_SECOND, PAYMENT_PER_ENDPOINT * OBJECTS.length);
/** A payment connection listing four objects: four endpoints at 25/s, so the account's 100/s is the limit. */
export const PAYMENT_FOUR_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payment_intents'] as const;
export const PAYMENT_FOUR_PER_SECOND = Math.min(PAYMENT_PER_SECOND, PAYMENT_PER_ENDPOINT * PAYMENT_FOUR_OBJECTS.length);
/** A real list call takes 200-600 ms for 100 records. */
const LATENCY = { ms: 300, jitterMs: 100 };
/** DynamoDB serves about 1,000 writes a second per partition key value. */
const DYNAMO_WRITES_PER_KEY = 1_000;
const BILLING_SITE = 'bench-test';

const silentLog = (await import('../shared/log/logger')).log;

function key(prefix: string): string {
  return prefix + Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
}

export interface Scenario {
  local: LocalGateway;
  /** Both platforms' simulators, in their own process. */
  platforms: SyncPlatforms;
  /** A read key of the same payment account, for the platform's own SDK (its own rate bucket). */
  sdkKey: string;
  connect(accountId: string): Promise<void>;
  /** A payment connection with a test-mode key (the platform's 25/s limit), and nothing else. */
  connectPaymentTest(accountId: string): Promise<void>;
  /** A live payment connection listing four objects (PAYMENT_FOUR_OBJECTS), and nothing else. */
  connectPaymentFour(accountId: string): Promise<void>;
  advanceClock(ms: number): void;
  stop(): Promise<void>;
}

/**
 * Both simulators (in a child process: a platform is another machine) seeded with 10,000 customers
 * and 10,000 subscriptions; accounts connect to both.
 */
export async function scenario(): Promise<Scenario> {
  let offset = 0;
  const platforms = await SyncPlatforms.start(7);
  const local = await startLocalGateway({
    env: {
      PAYMENT_API_BASE_URL: platforms.paymentUrl,
      BILLING_BASE_URL_TEMPLATE: `${platforms.billingUrl}/sites/{site}`,
      ALLOW_INSECURE_PLATFORM_URLS: 'true',
      PLATFORM_TIMEOUT_MS: '3000',
    },
    now: () => Date.now() + offset,
    dynamoInChildProcess: true,
  });
  await platforms.seed(
    CUSTOMERS,
    { live: { perSecond: PAYMENT_PER_SECOND }, test: { perSecond: PAYMENT_TEST_PER_SECOND } },
    { site: BILLING_SITE, limit: { perMinute: BILLING_PER_MINUTE_SCALED } },
  );
  const sdkKey = key('rk_live_');
  await platforms.addPaymentKey(sdkKey);
  const connectPaymentOnly = async (accountId: string, mode: 'live' | 'test', objects: readonly string[]) => {
    const at = new Date().toISOString();
    await store.putAccount(local.gateway.table, { accountId, name: accountId, integrationsEnabled: true, createdAt: at, updatedAt: at });
    const paymentKey = key(`rk_${mode}_`);
    await platforms.addPaymentKey(paymentKey);
    await storeConnection(local.gateway, {
      accountId,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode },
      credentials: { secretKey: paymentKey },
      syncSettings: { dataObjects: [...objects], frequency: 'daily', method: 'api' },
    });
  };

  return {
    local,
    platforms,
    sdkKey,
    async connect(accountId) {
      const { table } = local.gateway;
      const at = new Date().toISOString();
      await store.putAccount(table, { accountId, name: accountId, integrationsEnabled: true, createdAt: at, updatedAt: at });
      // Each account has its own platform keys, so its own rate buckets on the platforms too.
      const paymentKey = key('rk_live_');
      await platforms.addPaymentKey(paymentKey);
      const billingKey = key('test_');
      await platforms.addBillingKey(BILLING_SITE, billingKey);
      const connect = (connector: ConnectorName, config: Record<string, string | number>, credentials: Record<string, string>) =>
        storeConnection(local.gateway, {
          accountId,
          connector,
          config,
          credentials,
          syncSettings: { dataObjects: [...OBJECTS], frequency: 'daily', method: 'api', ...(connector === 'billing' ? { subscriptionStatus: 'all' } : {}) },
        });
      await connect('payment', { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' }, { secretKey: paymentKey });
      await connect('billing', { siteName: BILLING_SITE, environment: 'test', requestsPerMinute: BILLING_PER_MINUTE_SCALED }, { apiKey: billingKey });
    },
    connectPaymentTest: (accountId) => connectPaymentOnly(accountId, 'test', OBJECTS),
    connectPaymentFour: (accountId) => connectPaymentOnly(accountId, 'live', PAYMENT_FOUR_OBJECTS),
    advanceClock: (ms) => {
      offset += ms;
    },
    async stop() {
      await Promise.all([local.stop(), platforms.stop()]);
    },
  };
}

/** A connection's data objects side by side, as their sync jobs run in parallel Lambdas (each as the sync-job function: local/iam/). */
export function syncObjects(s: Scenario, accountId: string, connector: ConnectorName, options: SyncRunOptions = {}, full = false, objects: readonly string[] = OBJECTS): Promise<SyncRunResult[]> {
  return Promise.all(
    objects.map((object) =>
      runAs('sync-job', () =>
        runSyncJob(
          s.local.gateway,
          connectors.syncing(),
          { accountId, connector, object, trigger: 'manual', requestedAt: new Date().toISOString(), ...(full ? { full: true } : {}) },
          silentLog,
          options,
        ),
      ),
    ),
  );
}

/** Records stored per object, against the ids the platform has. */
async function compareStored(s: Scenario, accountId: string, connector: ConnectorName) {
  let missing = 0;
  let stored = 0;
  for (const object of OBJECTS) {
    const ids = new Set<string>();
    let startKey: string | undefined;
    do {
      const page = await store.listRecords(s.local.gateway.table, await readPlace(s.local.gateway.table, accountId, connector, object), { limit: 1000, ...(startKey ? { startKey } : {}) });
      for (const record of page.records) ids.add(record.id);
      stored += page.records.length;
      startKey = page.nextStartKey;
    } while (startKey);
    const platformIds = await s.platforms.ids(connector === 'payment' ? 'payment' : 'billing', object, BILLING_SITE);
    for (const id of platformIds) if (!ids.has(id)) missing += 1;
  }
  return { stored, missing };
}

/** What one sync of one connection made the platform do, and how long it took. */
export async function measured(s: Scenario, connector: ConnectorName, sync: () => Promise<SyncRunResult[]>, limitPerSecond?: number) {
  const platform = connector === 'payment' ? 'payment' : 'billing';
  const before = await s.platforms.totals(platform);
  await Promise.all([s.platforms.resetMaxInFlight(platform), s.platforms.resetArrivals(platform)]);
  const started = performance.now();
  // The gateway's own CPU (the simulators and the store run in other processes).
  const cpuBefore = process.cpuUsage();
  const results = await sync();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const after = await s.platforms.totals(platform);
  const calls = after.requests - before.requests;
  const ceiling = limitPerSecond ?? (connector === 'payment' ? PAYMENT_LISTING_PER_SECOND : BILLING_PER_MINUTE_SCALED / 60);
  // The pace requests arrived at the platform while the job was sending (its clock, its count):
  // without the job's start and the last answers' 300 ms after the last request left.
  const { requests: arrived, firstMs, lastMs } = after.arrivals;
  const sendingSeconds = firstMs === undefined || lastMs === undefined ? 0 : (lastMs - firstMs) / 1000;
  for (const result of results) if (result.outcome !== 'finished') throw new Error(`${connector} sync did not finish: ${JSON.stringify(result)}`);
  return {
    results,
    seconds,
    calls,
    http429: after.rateLimited - before.rateLimited,
    maxInFlight: after.maxInFlight,
    rateFraction: calls / seconds / ceiling,
    sustainedFraction: sendingSeconds > 0 ? (arrived - 1) / sendingSeconds / ceiling : 0,
    cpuMsPerCall: (cpu.user + cpu.system) / 1000 / Math.max(1, calls),
  };
}

/** Records a finished run listed (created, updated or unchanged); none for a run that did not finish. */
const recordsListed = (result: SyncRunResult) => (result.outcome === 'finished' ? result.counts.unchanged + result.counts.created + result.counts.updated : 0);

/**
 * A reconcile's rate fraction with two more runs of it: on a shared machine one run swings with
 * what else takes the CPU. Sets `<prefix>.rate_fraction_min_of_3` and `_median_of_3`.
 */
async function minAndMedianOfThree(figures: Figures, prefix: string, first: number, again: () => Promise<number>): Promise<void> {
  const fractions = [first, await again(), await again()].sort((a, b) => a - b);
  figures[`${prefix}.rate_fraction_min_of_3`] = round(fractions[0]!);
  figures[`${prefix}.rate_fraction_median_of_3`] = round(fractions[1]!);
}

const totalCounts = (results: SyncRunResult[]) =>
  results.reduce(
    (sum, r) => {
      if (r.outcome === 'finished') for (const k of ['created', 'updated', 'unchanged', 'deleted'] as const) sum[k] += r.counts[k];
      return sum;
    },
    { created: 0, updated: 0, unchanged: 0, deleted: 0 },
  );

/** Whether a written key is one of the account's synced records, under a single key or a shard key. */
const isRecordKey = (accountId: string) => {
  const places = CONNECTORS.flatMap((connector) => OBJECTS.map((object) => isObjectRecordKey(accountId, connector, object)));
  return (written: { pk: string }) => places.some((isRecord) => isRecord(written));
};

/**
 * The store's own write ceiling, measured alone: synced-record items of the bench's size written
 * as fast as BatchWriteItem takes them, spread over as many keys as the sync uses.
 */
async function storeCeiling(s: Scenario): Promise<number> {
  const records = (object: string, count: number): RecordWrite[] =>
    Array.from({ length: count }, (_, index) => {
      const id = `${object}_${String(index).padStart(6, '0')}`;
      return { id, hash: `h${index}`, email: `${id}@example.com`, syncedAt: new Date().toISOString(), body: { id, name: 'Bench Customer', email: `${id}@example.com`, createdAt: new Date().toISOString(), currency: 'usd', balance: 0, delinquent: false, metadata: {} } };
    });
  const started = performance.now();
  await Promise.all(OBJECTS.map((object) => store.putRecordsBatch(s.local.gateway.table, { accountId: 'ceiling', connector: 'payment', object, shards: RECORD_SHARDS }, records(object, 3_000), { concurrency: 8 })));
  return (OBJECTS.length * 3_000) / ((performance.now() - started) / 1000);
}

/** Full sync, full reconcile over unchanged data, and an incremental sync with nothing changed, at one latency. */
async function runAt(s: Scenario, accountId: string, prefix: string, figures: Figures) {
  await s.connect(accountId);
  const writes = watchCommands(s.local.dynamo.client);
  let calls = 0;
  let records = 0;
  let duplicates = 0;
  let missingAll = 0;
  let http429 = 0;
  const fractions: number[] = [];
  const recordsPerSecond: Partial<Record<ConnectorName, number>> = {};
  for (const connector of CONNECTORS) {
    const run = await measured(s, connector, () => syncObjects(s, accountId, connector));
    const counts = totalCounts(run.results);
    const { stored, missing } = await compareStored(s, accountId, connector);
    calls += run.calls;
    records += stored;
    duplicates += counts.created + counts.updated - stored;
    missingAll += missing;
    http429 += run.http429;
    fractions.push(run.rateFraction);
    recordsPerSecond[connector] = stored / run.seconds;
    figures[`${prefix}.full.${connector}.calls`] = run.calls;
    figures[`${prefix}.full.${connector}.seconds`] = round(run.seconds, 1);
    figures[`${prefix}.full.${connector}.records_per_second`] = Math.round(stored / run.seconds);
    figures[`${prefix}.full.${connector}.rate_fraction`] = round(run.rateFraction);
    figures[`${prefix}.full.${connector}.max_in_flight`] = run.maxInFlight;
    figures[`${prefix}.full.${connector}.missing`] = missing;
  }
  figures[`${prefix}.full.calls`] = calls;
  figures[`${prefix}.full.calls_per_100_records`] = round((calls / records) * 100, 3);
  figures[`${prefix}.full.records`] = records;
  figures[`${prefix}.full.missing`] = missingAll;
  figures[`${prefix}.full.duplicates`] = duplicates;
  figures[`${prefix}.full.rate_fraction`] = round(Math.min(...fractions));
  figures[`${prefix}.full.http_429`] = http429;
  // The store model: DynamoDB limits each partition key value to about 1,000 writes a second.
  figures[`${prefix}.full.max_writes_per_key_second`] = writes.maxWritesPerKeySecond(isRecordKey(accountId));

  // A full reconcile over unchanged data: every page compared (in memory once the run's listing of the stored versions is whole), nothing written.
  const reconcileFractions: number[] = [];
  let reconcile429 = 0;
  const reconciles: Partial<Record<ConnectorName, Awaited<ReturnType<typeof measured>>>> = {};
  for (const connector of CONNECTORS) {
    const run = await measured(s, connector, () => syncObjects(s, accountId, connector, {}, true));
    reconciles[connector] = run;
    reconcileFractions.push(run.rateFraction);
    reconcile429 += run.http429;
    figures[`${prefix}.reconcile.${connector}.rate_fraction`] = round(run.rateFraction);
    figures[`${prefix}.reconcile.${connector}.calls`] = run.calls;
    figures[`${prefix}.reconcile.${connector}.seconds`] = round(run.seconds, 1);
    figures[`${prefix}.reconcile.${connector}.max_in_flight`] = run.maxInFlight;
  }
  figures[`${prefix}.reconcile.rate_fraction`] = round(Math.min(...reconcileFractions));
  figures[`${prefix}.reconcile.http_429`] = reconcile429;

  writes.reset();
  let incrementalCalls = 0;
  for (const connector of CONNECTORS) {
    const platform = connector === 'payment' ? 'payment' : 'billing';
    const before = await s.platforms.totals(platform);
    const results = await syncObjects(s, accountId, connector);
    if (results.some((r) => r.outcome !== 'finished' || r.mode !== 'incremental')) throw new Error(`incremental ${connector} sync did not run: ${JSON.stringify(results)}`);
    incrementalCalls += (await s.platforms.totals(platform)).requests - before.requests;
  }
  figures[`${prefix}.incremental.calls_per_object`] = incrementalCalls / (OBJECTS.length * CONNECTORS.length);
  // Records only: the checkpoints and the connections' rate buckets are bookkeeping.
  figures[`${prefix}.incremental.writes`] = writes.itemsWritten(isRecordKey(accountId));
  return { recordsPerSecond, reconciles };
}

/**
 * The same payment records listed by the platform's own SDK with auto-pagination, one page after
 * another, object after object: seconds and records for the bench's two objects, and for all four.
 */
async function listWithSdk(s: Scenario): Promise<{ two: { seconds: number; records: number }; four: { seconds: number; records: number } }> {
  const stripe = new Stripe(s.sdkKey, { host: '127.0.0.1', port: Number(new URL(s.platforms.paymentUrl).port), protocol: 'http', maxNetworkRetries: 2 });
  const started = performance.now();
  let records = 0;
  for await (const customer of stripe.customers.list({ limit: 100 })) if (customer.id) records += 1;
  for await (const subscription of stripe.subscriptions.list({ limit: 100, status: 'all' })) if (subscription.id) records += 1;
  const two = { seconds: (performance.now() - started) / 1000, records };
  for await (const invoice of stripe.invoices.list({ limit: 100 })) if (invoice.id) records += 1;
  for await (const intent of stripe.paymentIntents.list({ limit: 100 })) if (intent.id) records += 1;
  return { two, four: { seconds: (performance.now() - started) / 1000, records } };
}

/**
 * A full sync at 300 ms with 5% of calls failing, killed dead with slices in flight, then resumed.
 * Alone, several times: `npx tsx bench/sync-profile.ts faulty 5`.
 */
export async function faultyRun(s: Scenario, figures: Figures, accountId = 'faulty') {
  await s.platforms.setLatency(LATENCY);
  await s.connect(accountId);
  const faults = [{ kind: 'status' as const, status: 429 }, { kind: 'status' as const, status: 503 }, { kind: 'timeout' as const }, { kind: 'drop' as const }];
  await s.platforms.setRandomFaults('payment', { rate: 0.05, faults, seed: 11 });
  await s.platforms.setRandomFaults('billing', { rate: 0.05, faults, seed: 12 });
  const writes = watchCommands(s.local.dynamo.client);
  let missingAll = 0;
  let duplicates = 0;
  let slicesAtKill = 0;
  try {
    for (const connector of CONNECTORS) {
      let killed = false;
      let stopped = 0;
      // The kill: once 30 pages of an object are saved, the process stops dead (no cleanup, claims
      // held): every run of the connection, each at its next save. (Only the first one used to stop:
      // the clock jump below then lapsed the lease of a run still going, and its successor wrote the
      // pages it had in flight a second time.)
      const kill: SyncRunOptions = {
        leaseSeconds: 30,
        afterPage: (pages) => {
          if (killed || pages >= 30) {
            killed = true;
            stopped += 1;
            return new Promise<void>(() => {});
          }
        },
      };
      const first = syncObjects(s, accountId, connector, kill);
      while (!killed) await new Promise((resolve) => setTimeout(resolve, 20));
      // Every run stopped (a run saves at least every half second while it pages; one that finished first sends nothing more).
      for (const until = performance.now() + 3_000; stopped < OBJECTS.length && performance.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      void first;
      // A killed process sends nothing more; what it had sent lands long before its lease lapses.
      while (writes.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      for (const object of OBJECTS) {
        const checkpoint = await store.getSyncCheckpoint(s.local.gateway.table, accountId, connector, object);
        const cursor = checkpoint?.cursor as { slices?: unknown[] } | undefined;
        slicesAtKill = Math.max(slicesAtKill, cursor?.slices?.length ?? 0);
      }
      s.advanceClock(31_000); // the killed runs' leases lapse; SQS would redeliver their jobs
      for (let attempt = 0; attempt < 20; attempt += 1) {
        const results = await syncObjects(s, accountId, connector, { leaseSeconds: 30 });
        if (results.every((r) => r.outcome === 'finished' || r.outcome === 'skipped')) {
          const checkpoints = await Promise.all(OBJECTS.map((object) => store.getSyncCheckpoint(s.local.gateway.table, accountId, connector, object)));
          if (checkpoints.every((checkpoint) => checkpoint?.lastSucceededAt !== undefined && checkpoint.cursor === undefined)) break;
        }
      }
      const { stored, missing } = await compareStored(s, accountId, connector);
      missingAll += missing;
      const recordWrites = writes.itemsWritten((written) => written.pk.startsWith(`ACCOUNT#${accountId}#${connector}#`));
      // Written more often than there are records: some record was written twice.
      duplicates += Math.max(0, recordWrites - stored);
      writes.reset();
    }
  } finally {
    await s.platforms.setRandomFaults('payment', undefined);
    await s.platforms.setRandomFaults('billing', undefined);
  }
  figures['sync.faulty.missing'] = missingAll;
  figures['sync.faulty.duplicates'] = duplicates;
  figures['sync.faulty.slices_at_kill'] = slicesAtKill;
  figures['sync.faulty.faults_served'] = (await s.platforms.totals('payment')).faultsServed + (await s.platforms.totals('billing')).faultsServed;
}

/** What a new on-demand DynamoDB table takes at once: 4,000 write units a second (and its index as many). */
const NEW_TABLE_WRITE_UNITS = 4_000;

export async function benchSync(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  // `SYNC_ONLY=first5`: the first sync of five objects alone, the other figures kept as the last run left them.
  // `SYNC_ONLY=first_billing`: the billing first sync at its real limit alone, likewise.
  const alone = {
    first5: firstFiveRun,
    first_billing: firstBillingRun,
    // A new on-demand table's 4,000 write units a second (docs/first-sync.md, "The table's own pace").
    first5_new_table: (figures: Figures) => firstFiveRun(figures, { sdk: false, tableWriteUnits: NEW_TABLE_WRITE_UNITS }),
  }[process.env.SYNC_ONLY ?? ''];
  if (alone) {
    const figures = previousFigures('sync', (key) => !key.startsWith(`sync.latency300.${process.env.SYNC_ONLY}.`));
    try {
      await alone(figures);
    } finally {
      setLogSink(restoreLogs);
    }
    return { figures, notes: SYNC_NOTES };
  }
  // The new-table first sync runs alone only (SYNC_ONLY=first5_new_table): its last figures are kept.
  const figures: Figures = previousFigures('sync', (key) => key.startsWith('sync.latency300.first5_new_table.'));
  const s = await scenario();
  try {
    forgetRateBudgets();
    const ceiling = await storeCeiling(s);
    figures['sync.store.write_ceiling'] = Math.round(ceiling);

    // At 0 ms: the platforms answer at once, so the store is what a full sync waits on.
    const at0 = await runAt(s, 'bench0', 'sync', figures);
    // The store model's ceiling for these writes: the store's own, or DynamoDB's limit per partition
    // key over every shard key of the objects (the bench's connections are new: sharded).
    const modelCeiling = Math.min(ceiling, DYNAMO_WRITES_PER_KEY * OBJECTS.length * RECORD_SHARDS);
    figures['sync.store_fraction'] = round((at0.recordsPerSecond.payment ?? 0) / modelCeiling);
    figures['sync.store_fraction_raw'] = round((at0.recordsPerSecond.payment ?? 0) / ceiling);

    // A test-mode payment connection (25/s), stored at 0 ms, for a reconcile at 300 ms below.
    await s.connectPaymentTest('paytest');
    for (const result of await syncObjects(s, 'paytest', 'payment')) if (result.outcome !== 'finished') throw new Error(`test-mode sync: ${JSON.stringify(result)}`);

    // At 300 ms: the same again, and the payment records listed by the platform's own SDK.
    await s.platforms.setLatency(LATENCY);
    const at300Account = 'bench300';
    const at300 = await runAt(s, at300Account, 'sync.latency300', figures);
    const payment = at300.reconciles.payment!;
    const billing = at300.reconciles.billing!;
    figures['sync.latency300.payment.rate_fraction'] = round(payment.rateFraction);
    figures['sync.latency300.payment.sustained_fraction'] = round(payment.sustainedFraction);
    figures['sync.latency300.payment.http_429'] = round(payment.http429 / payment.calls, 4);
    figures['sync.latency300.payment.max_in_flight'] = payment.maxInFlight;
    figures['sync.latency300.payment.seconds'] = round(payment.seconds, 1);
    figures['sync.latency300.payment.calls'] = payment.calls;
    await minAndMedianOfThree(figures, 'sync.latency300.payment', payment.rateFraction, async () => (await measured(s, 'payment', () => syncObjects(s, at300Account, 'payment', {}, true))).rateFraction);
    figures['sync.latency300.payment.limit_per_second'] = PAYMENT_LISTING_PER_SECOND;
    // CPU a page costs the sync function, and the vCPUs one job (one object: one endpoint) needs at its limit (lib/sync.ts sizes the function by it).
    figures['sync.latency300.payment.cpu_ms_per_page'] = round(payment.cpuMsPerCall, 1);
    figures['sync.latency300.payment.vcpu_at_limit'] = round((payment.cpuMsPerCall * PAYMENT_PER_ENDPOINT) / 1000, 2);
    figures['sync.latency300.billing.rate_fraction'] = round(billing.rateFraction);
    figures['sync.latency300.billing.http_429'] = round(billing.http429 / billing.calls, 4);
    figures['sync.latency300.billing.max_in_flight'] = billing.maxInFlight;
    figures['sync.latency300.billing.seconds'] = round(billing.seconds, 1);
    // The payment platform at its test-mode limit (25/s), a pace the local store keeps up with.
    const testMode = await measured(s, 'payment', () => syncObjects(s, 'paytest', 'payment', {}, true));
    const testRate = testMode.calls / testMode.seconds / PAYMENT_TEST_PER_SECOND;
    figures['sync.latency300.payment_test.rate_fraction'] = round(testRate);
    figures['sync.latency300.payment_test.http_429'] = round(testMode.http429 / testMode.calls, 4);
    figures['sync.latency300.payment_test.max_in_flight'] = testMode.maxInFlight;
    figures['sync.latency300.payment_test.seconds'] = round(testMode.seconds, 1);
    figures['sync.latency300.payment_test.calls'] = testMode.calls;
    // Four objects of one connection: four endpoints at 25/s, so the account's 100/s is what binds
    // (stored at 300 ms first, as the payment reconcile above: its plan starts from that profile).
    await s.connectPaymentFour('payment4');
    for (const result of await syncObjects(s, 'payment4', 'payment', {}, false, PAYMENT_FOUR_OBJECTS)) if (result.outcome !== 'finished') throw new Error(`four-object sync: ${JSON.stringify(result)}`);
    const four = await measured(s, 'payment', () => syncObjects(s, 'payment4', 'payment', {}, true, PAYMENT_FOUR_OBJECTS), PAYMENT_FOUR_PER_SECOND);
    figures['sync.latency300.payment4.records'] = four.results.reduce((sum, result) => sum + recordsListed(result), 0);
    figures['sync.latency300.payment4.limit_per_second'] = PAYMENT_FOUR_PER_SECOND;
    figures['sync.latency300.payment4.rate_fraction'] = round(four.rateFraction);
    figures['sync.latency300.payment4.sustained_fraction'] = round(four.sustainedFraction);
    figures['sync.latency300.payment4.http_429'] = round(four.http429 / four.calls, 4);
    figures['sync.latency300.payment4.calls'] = four.calls;
    figures['sync.latency300.payment4.max_in_flight'] = four.maxInFlight;
    figures['sync.latency300.payment4.seconds'] = round(four.seconds, 1);
    await minAndMedianOfThree(figures, 'sync.latency300.payment4', four.rateFraction, async () => (await measured(s, 'payment', () => syncObjects(s, 'payment4', 'payment', {}, true, PAYMENT_FOUR_OBJECTS), PAYMENT_FOUR_PER_SECOND)).rateFraction);
    // The most any client could reach here: each object one request per 100 records at its endpoint's
    // 25/s, the last answer 300 ms after the last request left (the biggest object sets the end).
    const pagesOf = four.results.map((result) => Math.ceil(recordsListed(result) / 100));
    const fastest = Math.max(...pagesOf.map((pages) => (pages - 1) / PAYMENT_PER_ENDPOINT)) + 0.3;
    figures['sync.latency300.payment4.rate_fraction_bound'] = round(pagesOf.reduce((sum, pages) => sum + pages, 0) / fastest / PAYMENT_FOUR_PER_SECOND);
    const sdk = await listWithSdk(s);
    if (sdk.two.records !== 2 * CUSTOMERS) throw new Error(`the SDK listed ${sdk.two.records} records`);
    figures['sync.latency300.sdk.seconds'] = round(sdk.two.seconds, 1);
    figures['sync.latency300.sdk_ratio'] = round(sdk.two.seconds / payment.seconds, 1);
    figures['sync.latency300.payment4.sdk_seconds'] = round(sdk.four.seconds, 1);
    figures['sync.latency300.payment4.sdk_records'] = sdk.four.records;
    figures['sync.latency300.payment4.sdk_ratio'] = round(sdk.four.seconds / four.seconds, 1);

    await faultyRun(s, figures);
  } finally {
    await s.stop();
  }
  try {
    await firstFiveRun(figures);
    await firstBillingRun(figures);
  } finally {
    setLogSink(restoreLogs);
  }
  return { figures, notes: SYNC_NOTES };
}

const SYNC_NOTES = [
      `${CUSTOMERS.toLocaleString('en')} customers and ${CUSTOMERS.toLocaleString('en')} subscriptions on each platform; each connection's two objects sync side by side (their jobs run in parallel Lambdas). Payment limited to ${PAYMENT_PER_SECOND} requests/s (live) and, as the platform documents, ${PAYMENT_PER_ENDPOINT}/s on each endpoint on top (one object's list is one endpoint), so a listing of these two objects may go at ${PAYMENT_LISTING_PER_SECOND}/s (\`sync.latency300.payment.limit_per_second\`, the limit the payment rate fractions are over); billing to 150/min scaled 10x in time (${BILLING_PER_MINUTE_SCALED}/min, the client budget likewise).`,
      '`sync.*` runs with platforms that answer at once; `sync.latency300.*` repeats everything with every answer taking 300 ms ± 100 ms. In each: `full` is the first full sync (writes every record), `reconcile` a full sync over unchanged data (every page compared, nothing written; API Direct, so in memory with the stored versions the run read at its start: its pages wait for that listing, the object being small; it cuts its slices at the start from the profile the first full sync kept with its watermark, which at 0 ms says the platform answers at once: one listing), `incremental` a sync with nothing changed.',
      'calls: platform requests (ideal: 1 per 100 records); rate_fraction: requests per second over the limit; max_in_flight: most requests the simulator was answering at once; duplicates: records written more than once; writes: record writes by an incremental sync with nothing changed; max_writes_per_key_second: the most record writes one partition key took in a second (DynamoDB serves about 1,000).',
      '`sync.latency300.payment.*` is the payment full reconcile at 300 ms (what the gateway makes of the platform\'s limit): `rate_fraction` its requests over its wall-clock seconds (the job\'s start and the last answers\' 300 ms included) over the limit; `sustained_fraction` the pace its requests arrived at the simulator, (requests - 1) / (last arrival - first arrival) over the limit, recorded by the simulator; the first full sync at 300 ms (`sync.latency300.full.payment.*`) also writes 20,000 records and waits on the local store. `sdk_ratio`: the same 20,000 records listed by the payment platform\'s own SDK (`stripe`, auto-pagination) against the same simulator, seconds(SDK) / seconds(gateway reconcile). `rate_fraction_min_of_3` / `_median_of_3`: the reconcile run twice more, with the first. `cpu_ms_per_page`: this process\'s CPU over the reconcile\'s calls (the simulators and the store run in other processes); `vcpu_at_limit`: the vCPUs one sync job (one object, one endpoint) takes at its endpoint\'s 25 calls a second (Lambda gives one vCPU at 1,769 MB, a share in proportion below).',
      '`sync.latency300.payment4.*`: a live payment connection listing four objects (customers, subscriptions, invoices and payment intents: about 40,000 records, stored at 300 ms first), reconciled at 300 ms. Four endpoints at 25/s each, so the account\'s 100 requests/s is the limit its rate fractions are over, shared by four sync jobs side by side. `payment4.rate_fraction_min_of_3` / `_median_of_3`: the reconcile run twice more, with the first. `payment4.rate_fraction_bound`: the most any client could reach over these objects, each listed at one request per 100 records at its endpoint\'s 25/s and the last answer 300 ms after the last request (the biggest object sets the end; the two-object listing\'s is 0.94). `payment4.sdk_ratio`: the same records listed by the platform\'s own SDK (the two objects\' listing, then invoices and payment intents), seconds(SDK) / seconds(gateway reconcile); with two objects (`sdk_ratio`) no client can do better than 15 times the SDK, the two endpoints allowing 50 requests/s.',
      '`sync.latency300.payment_test.*`: the same reconcile with a test-mode key, at the payment platform\'s test-mode limit of 25 requests/s (2,500 records/s to compare, which the local store keeps up with; at 100/s it does not: see `store.write_ceiling` and the reconcile at 0 ms).',
      '`store.write_ceiling`: records/s dynalite takes in BatchWriteItems alone, in the same run. `store_fraction`: the payment first full sync at 0 ms, records/s over the store model\'s ceiling for two data objects (the lower of write_ceiling and DynamoDB\'s ~1,000 writes/s per partition key, over each object\'s 8 shard keys); `store_fraction_raw` over write_ceiling alone.',
      'faulty: at 300 ms, 5% of requests fail at random (429, 503, a hang past the 3 s timeout, a dropped connection), and each connection\'s runs are killed dead once 30 pages of an object are saved (slices_at_kill: the most slices a killed run had saved in flight); new runs resume after the leases lapse. duplicates: record writes beyond the records stored.',
      'What runs where: the gateway\'s sync code and the payment platform\'s SDK run in this process; both platform simulators in a child process of their own (bench/sync-simulators.ts, driven over IPC: a platform is another machine, and its bursts of answers must not hold up the gateway\'s event loop); dynalite in another child process. The three share the machine\'s 2 cores. `npx tsx bench/sync-profile.ts latency` (under `node --cpu-prof` for functions) shows each one\'s CPU and the requests in flight over time.',
  FIRST5_NOTE,
  FIRST_BILLING_NOTE,
  'The machine is shared: timings vary from run to run with other work on its 2 cores.',
];
