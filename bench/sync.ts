import { startLocalGateway, type LocalGateway } from '../local/local-gateway';
import { watchCommands } from '../local/local-dynamo';
import { startBillingSimulator, type BillingSimulator } from '../sandbox/billing-simulator';
import { startPaymentSimulator, type PaymentSimulator } from '../sandbox/payment-simulator';
import { connectors } from '../shared/connections/registry';
import type { ConnectorName } from '../shared/connectors';
import { setLogSink } from '../shared/log/logger';
import { forgetRateBudgets } from '../shared/http/rate-budget';
import { runSyncJob, type SyncRunOptions, type SyncRunResult } from '../shared/sync/run-sync-job';
import type { Figures } from './results-file';
import { storeConnection } from '../test/support/stored-connection';

const CUSTOMERS = 10_000;
const PAYMENT_PER_SECOND = 100;
/** The billing platform allows 150/min; scaled 10x in time (same ratios) to keep the bench short. */
const BILLING_PER_MINUTE_SCALED = 1_500;
const OBJECTS = ['customers', 'subscriptions'] as const;

function key(prefix: string): string {
  return prefix + Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
}

interface Scenario {
  local: LocalGateway;
  payment: PaymentSimulator;
  billing: BillingSimulator;
  advanceClock(ms: number): void;
  stop(): Promise<void>;
}

/** Both simulators seeded with 10,000 customers and 10,000 subscriptions, and one account connected to each. */
async function scenario(accountId: string): Promise<Scenario> {
  let offset = 0;
  const payment = await startPaymentSimulator({ seed: 7 });
  const billing = await startBillingSimulator({ seed: 7 });
  const local = await startLocalGateway({
    env: {
      PAYMENT_API_BASE_URL: payment.url,
      BILLING_BASE_URL_TEMPLATE: `${billing.url}/sites/{site}`,
      ALLOW_INSECURE_PLATFORM_URLS: 'true',
      PLATFORM_TIMEOUT_MS: '1000',
    },
    now: () => Date.now() + offset,
    dynamoInChildProcess: true,
  });
  const paymentKey = key('rk_live_');
  payment.addApiKey(paymentKey, { access: 'read' });
  payment.setRateLimit({ perSecond: PAYMENT_PER_SECOND }, { mode: 'live' });
  payment.seedCustomers(CUSTOMERS, { mode: 'live' });
  payment.seedSubscriptions({ mode: 'live', perCustomer: 1 });

  const site = billing.addSite('bench-test');
  const billingKey = key('test_');
  billing.addApiKey('bench-test', billingKey, { type: 'read-only' });
  billing.setRateLimit({ perMinute: BILLING_PER_MINUTE_SCALED });
  site.seedCustomers(CUSTOMERS);
  site.seedSubscriptions({ perCustomer: 1 });

  const { store } = local.gateway;
  const at = new Date().toISOString();
  await store.putAccount({ accountId, name: accountId, integrationsEnabled: true, createdAt: at, updatedAt: at });
  const connect = (connector: ConnectorName, config: Record<string, string | number>, credentials: Record<string, string>) =>
    storeConnection(local.gateway, {
      accountId,
      connector,
      config,
      credentials,
      syncSettings: { dataObjects: [...OBJECTS], frequency: 'daily', method: 'api', ...(connector === 'billing' ? { subscriptionStatus: 'all' } : {}) },
    });
  await connect('payment', { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' }, { secretKey: paymentKey });
  await connect('billing', { siteName: 'bench-test', environment: 'test', requestsPerMinute: BILLING_PER_MINUTE_SCALED }, { apiKey: billingKey });
  forgetRateBudgets();
  return {
    local,
    payment,
    billing,
    advanceClock: (ms) => {
      offset += ms;
    },
    async stop() {
      await Promise.all([local.stop(), payment.stop(), billing.stop()]);
    },
  };
}

async function syncObjects(s: Scenario, accountId: string, connector: ConnectorName, options: SyncRunOptions = {}, full = false): Promise<SyncRunResult[]> {
  const results: SyncRunResult[] = [];
  for (const object of OBJECTS) {
    const job = { accountId, connector, object, trigger: 'manual' as const, requestedAt: new Date().toISOString(), ...(full ? { full: true } : {}) };
    results.push(await runSyncJob(s.local.gateway, connectors.syncing(), job, silentLog, options));
  }
  return results;
}

const silentLog = (await import('../shared/log/logger')).log;

/** Records stored per object, against the ids the platform has: missing and extra (duplicate) ids. */
async function compareStored(s: Scenario, accountId: string, connector: ConnectorName) {
  let missing = 0;
  let stored = 0;
  for (const object of OBJECTS) {
    const ids = new Set<string>();
    let startKey: string | undefined;
    do {
      const page = await s.local.gateway.store.listRecords(accountId, connector, object, { limit: 1000, ...(startKey ? { startKey } : {}) });
      for (const record of page.records) ids.add(record.id);
      stored += page.records.length;
      startKey = page.nextStartKey;
    } while (startKey);
    const platformIds =
      connector === 'payment'
        ? [...(object === 'customers' ? s.payment.state.live.customers : s.payment.state.live.subscriptions).values()].map((r) => r.id)
        : [...s.billing.site('bench-test').data[object].values()].filter((r) => !r.deleted).map((r) => r.id);
    for (const id of platformIds) if (!ids.has(id)) missing += 1;
  }
  return { stored, missing };
}

const totalCounts = (results: SyncRunResult[]) =>
  results.reduce(
    (sum, r) => {
      if (r.outcome === 'finished') for (const k of ['created', 'updated', 'unchanged', 'deleted'] as const) sum[k] += r.counts[k];
      return sum;
    },
    { created: 0, updated: 0, unchanged: 0, deleted: 0 },
  );

export async function benchSync(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const figures: Figures = {};
  try {
    // 1. Full sync under the platforms' rate limits, then an incremental sync with nothing changed.
    const s = await scenario('bench');
    const writes = watchCommands(s.local.dynamo.client);
    let calls = 0;
    let records = 0;
    let duplicates = 0;
    let fractions: number[] = [];
    let http429 = 0;
    for (const connector of ['payment', 'billing'] as const) {
      const simulator = connector === 'payment' ? s.payment : s.billing;
      const before = simulator.totalRequests();
      const started = performance.now();
      const results = await syncObjects(s, 'bench', connector);
      const seconds = (performance.now() - started) / 1000;
      const made = simulator.totalRequests() - before;
      const counts = totalCounts(results);
      const { stored, missing } = await compareStored(s, 'bench', connector);
      const ceiling = connector === 'payment' ? PAYMENT_PER_SECOND : BILLING_PER_MINUTE_SCALED / 60;
      calls += made;
      records += stored;
      duplicates += counts.created + counts.updated - stored;
      http429 += simulator.rateLimited();
      fractions.push(made / seconds / ceiling);
      figures[`sync.full.${connector}.calls`] = made;
      figures[`sync.full.${connector}.seconds`] = Math.round(seconds * 10) / 10;
      figures[`sync.full.${connector}.rate_fraction`] = Math.round((made / seconds / ceiling) * 100) / 100;
      figures[`sync.full.${connector}.missing`] = missing;
      figures['sync.full.missing'] = (figures['sync.full.missing'] ?? 0) + missing;
    }
    figures['sync.full.calls'] = calls;
    figures['sync.full.records'] = records;
    figures['sync.full.duplicates'] = duplicates;
    figures['sync.full.rate_fraction'] = Math.round(Math.min(...fractions) * 100) / 100;
    figures['sync.full.http_429'] = http429;

    // A reconcile (full sync over unchanged data): no record writes, so it shows how closely the
    // client paces itself to the platform's limit, apart from the local store's write speed.
    const fetchFractions: number[] = [];
    for (const connector of ['payment', 'billing'] as const) {
      const simulator = connector === 'payment' ? s.payment : s.billing;
      const before = simulator.totalRequests();
      const started = performance.now();
      await syncObjects(s, 'bench', connector, {}, true);
      const seconds = (performance.now() - started) / 1000;
      const ceiling = connector === 'payment' ? PAYMENT_PER_SECOND : BILLING_PER_MINUTE_SCALED / 60;
      const fraction = (simulator.totalRequests() - before) / seconds / ceiling;
      fetchFractions.push(fraction);
      figures[`sync.reconcile.${connector}.rate_fraction`] = Math.round(fraction * 100) / 100;
    }
    figures['sync.reconcile.rate_fraction'] = Math.round(Math.min(...fetchFractions) * 100) / 100;
    figures['sync.reconcile.http_429'] = s.payment.rateLimited() + s.billing.rateLimited() - http429;

    writes.reset();
    let incrementalCalls = 0;
    for (const connector of ['payment', 'billing'] as const) {
      const simulator = connector === 'payment' ? s.payment : s.billing;
      const before = simulator.totalRequests();
      const results = await syncObjects(s, 'bench', connector);
      if (results.some((r) => r.outcome !== 'finished' || r.mode !== 'incremental')) throw new Error(`incremental ${connector} sync did not run: ${JSON.stringify(results)}`);
      incrementalCalls += simulator.totalRequests() - before;
    }
    figures['sync.incremental.calls_per_object'] = incrementalCalls / (OBJECTS.length * 2);
    figures['sync.incremental.writes'] = writes.succeeded('PutItemCommand') + writes.succeeded('UpdateItemCommand') + writes.succeeded('DeleteItemCommand') -
      // checkpoint writes are bookkeeping, not record writes: two per object run (claim, finish)
      OBJECTS.length * 2 * 2;
    await s.stop();

    // 2. The same full sync with 5% of calls failing and the process killed once mid-sync.
    const f = await scenario('faulty');
    const faults = [{ kind: 'status' as const, status: 429 }, { kind: 'status' as const, status: 503 }, { kind: 'timeout' as const }, { kind: 'drop' as const }];
    f.payment.faults.setRandom({ rate: 0.05, faults, seed: 11 });
    f.billing.faults.setRandom({ rate: 0.05, faults, seed: 12 });
    let faultyMissing = 0;
    let faultyDuplicates = 0;
    for (const connector of ['payment', 'billing'] as const) {
      let killed = false;
      // The kill: after the 30th saved page the run stops dead (no cleanup, its claim still held).
      const kill: SyncRunOptions = {
        leaseSeconds: 30,
        afterPage: (pages) => {
          if (!killed && pages === 30) {
            killed = true;
            return new Promise<void>(() => {});
          }
        },
      };
      const first = syncObjects(f, 'faulty', connector, kill);
      while (!killed) await new Promise((resolve) => setTimeout(resolve, 20));
      void first;
      f.advanceClock(31_000); // the killed run's lease lapses; SQS would redeliver its job
      const finished: SyncRunResult[] = [];
      for (let attempt = 0; attempt < 20; attempt += 1) {
        const results = await syncObjects(f, 'faulty', connector, { leaseSeconds: 30 });
        finished.push(...results);
        if (results.every((r) => r.outcome === 'finished')) break;
      }
      const counts = totalCounts(finished);
      const { stored, missing } = await compareStored(f, 'faulty', connector);
      faultyMissing += missing;
      faultyDuplicates += Math.max(0, counts.created - stored);
    }
    figures['sync.faulty.missing'] = faultyMissing;
    figures['sync.faulty.duplicates'] = faultyDuplicates;
    figures['sync.faulty.faults_served'] = [...f.payment.faults.served.values(), ...f.billing.faults.served.values()].reduce((a, b) => a + b, 0);
    await f.stop();
  } finally {
    setLogSink(restoreLogs);
  }
  return {
    figures,
    notes: [
      `${CUSTOMERS.toLocaleString('en')} customers and ${CUSTOMERS.toLocaleString('en')} subscriptions on each platform. Payment limited to ${PAYMENT_PER_SECOND} requests/s; billing to 150/min scaled 10x in time (${BILLING_PER_MINUTE_SCALED}/min, the client budget likewise).`,
      'calls: platform requests made (ideal 100 per 10,000 records); rate_fraction: requests per second over the limit (the lower of the two platforms); duplicates: records written more than once in a run; writes: record writes by an incremental sync with nothing changed (checkpoint bookkeeping excluded).',
      'The first full sync writes every record, so its pace is bounded by the local store (dynalite in its own process, about 1,000 conditional writes/s on this machine), not by the platform: sync.full.rate_fraction shows that bound. sync.reconcile.rate_fraction is a full sync over unchanged data (reads, no writes): the client pacing itself against the platform limit.',
      'faulty: 5% of requests fail at random (429, 503, a hang past the 1 s timeout, a dropped connection), and the run is killed dead after its 30th page; a new run resumes after the lease lapses.',
    ],
  };
}
