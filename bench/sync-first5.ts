import Stripe from 'stripe';
import { startLocalGateway } from '../local/local-gateway';
import { watchCommands } from '../local/local-dynamo';
import { attachQueueConsumers } from '../local/queue-consumers';
import { runAs } from '../local/iam/enforcement';
import { useGateway, type Gateway } from '../shared/gateway';
import { log as silentLog } from '../shared/log/logger';
import { dispatchDueRetries } from '../shared/sync/dispatch-syncs';
import { SYNC_RETRY } from '../shared/sync/sync-retry';
import { PAYMENT_OBJECTS } from '../shared/payment/settings';
import { readPlace } from '../shared/reads/record-place';
import { STORE_WRITES_PER_SECOND, writeUnits } from '../shared/sync/page-slices';
import { generatedKey } from '../test/support/local-runtime';
import { storeConnection } from '../test/support/stored-connection';
import type { Figures } from './results-file';
import { percentile, round } from './statistics';
import { SyncPlatforms } from './sync-platforms';
import * as store from '../shared/store/store';

/** Customers on the platform; each has a subscription, and each subscription an invoice, payment intent and charge (some fewer, by status). */
export const FIRST5_CUSTOMERS = 15_000;
const PAYMENT_PER_SECOND = 100;
const PAYMENT_PER_ENDPOINT = 25;
/** Customers created evenly over a year. */
const SPACING_SECONDS = Math.floor((365 * 24 * 3600) / FIRST5_CUSTOMERS);
const LATENCY = { ms: 300, jitterMs: 100 };
const ACCOUNT = 'first5';

/**
 * A new customer's first sync (`sync.latency300.first5.*`): a live payment connection with its five
 * data objects, from an empty table, run as `npm start` runs it: "Sync now" puts one job per object
 * on the local sync queue, whose consumer (the sync-job handler) runs them as the deployed event
 * source does (local/local-queue.ts: one job of an object at a time, the objects side by side).
 * Then the platform's own SDK auto-pages the same five objects one after another.
 * Alone: `SYNC_ONLY=first5 npm run bench -- sync`.
 */
/**
 * `tableWriteUnits`: the table takes that many write units a second, as a deployed new on-demand
 * table takes 4,000 (local/table-throughput.ts): the figures go under `first5_new_table`.
 */
export async function firstFiveRun(figures: Figures, options: { sdk?: boolean; tableWriteUnits?: number } = {}): Promise<void> {
  let offset = 0;
  const platforms = await SyncPlatforms.start(17);
  const local = await startLocalGateway({
    env: { PAYMENT_API_BASE_URL: platforms.paymentUrl, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '10000' },
    dynamoInChildProcess: true,
    now: () => Date.now() + offset,
    ...(options.tableWriteUnits === undefined ? {} : { tableWriteUnits: options.tableWriteUnits }),
  });
  const previous = useGateway(local.gateway);
  attachQueueConsumers(local);
  try {
    await platforms.seedPayment(FIRST5_CUSTOMERS, SPACING_SECONDS, { perSecond: PAYMENT_PER_SECOND });
    await platforms.setLatency(LATENCY);
    const paymentKey = generatedKey('rk_live_');
    const sdkKey = generatedKey('rk_live_');
    await platforms.addPaymentKey(paymentKey);
    await platforms.addPaymentKey(sdkKey);
    const at = new Date().toISOString();
    await store.putAccount(local.gateway.table, { accountId: ACCOUNT, name: ACCOUNT, integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(local.gateway, {
      accountId: ACCOUNT,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' },
      credentials: { secretKey: paymentKey },
      syncSettings: { dataObjects: [...PAYMENT_OBJECTS], frequency: 'daily', method: 'api' },
    });
    const writes = watchCommands(local.dynamo.client);

    // Another tenant writing beside the first sync, as its webhook events and conversations do: one
    // small item every 50 ms, each write's time (with the SDK's retries of refusals) recorded, alone first.
    const quiet = quietTenant(local.gateway);
    await quiet.runFor(2_000);
    const quietAlone = quiet.takeTimes();
    const quietWriting = quiet.runFor(Number.POSITIVE_INFINITY);

    const before = await platforms.totals('payment');
    await Promise.all([platforms.resetMaxInFlight('payment'), platforms.resetArrivals('payment'), platforms.resetListAnswers()]);
    const started = performance.now();
    // What "Sync now" enqueues (shared/api/routes/syncs.ts): one job per data object.
    const requestedAt = new Date().toISOString();
    await local.gateway.queues.syncJobs.send(PAYMENT_OBJECTS.map((object) => ({ accountId: ACCOUNT, connector: 'payment' as const, object, trigger: 'manual' as const, requestedAt })));
    await local.queues.syncJobs.idle();
    // A job that failed for a reason time can fix (on a loaded machine, a page not answered in time)
    // recorded its next try: the retry schedule enqueues it then. Here at once, the clock moved on to it.
    let retried = 0;
    for (let round = 0; round < 5 && (await dueRetry(local.gateway)); round += 1) {
      offset += SYNC_RETRY.maxDelayMs + 1_000;
      retried += await runAs('sync-dispatcher', () => dispatchDueRetries(local.gateway, silentLog));
      await local.queues.syncJobs.idle();
    }
    const seconds = (performance.now() - started) / 1000;
    quiet.stop();
    await quietWriting;
    const quietBeside = quiet.takeTimes();
    const after = await platforms.totals('payment');
    const calls = after.requests - before.requests;
    const byObject = await platforms.listAnswers();
    const answers = { pages: 0, records: 0, empty: 0, part: 0, partShort: 0, full: 0, smallLimit: 0 };
    for (const tally of Object.values(byObject)) for (const kind of Object.keys(answers) as Array<keyof typeof answers>) answers[kind] += tally[kind];
    if (process.env.SYNC_FIRST5_TRACE) console.log(JSON.stringify(byObject));

    let records = 0;
    let missing = 0;
    let idealCalls = 0;
    let platformRecords = 0;
    /** The least time each object takes: its pages at its endpoint's 25/s, its write units at the store's pace a data object. */
    let slowestObject = 0;
    for (const object of PAYMENT_OBJECTS) {
      const checkpoint = await store.getSyncCheckpoint(local.gateway.table, ACCOUNT, 'payment', object);
      if (!checkpoint?.lastSucceededAt || checkpoint.cursor) throw new Error(`first5: the ${object} sync did not finish: ${JSON.stringify({ lastError: checkpoint?.lastError, counts: checkpoint?.counts, retry: checkpoint?.retry })}`);
      const ids = new Set<string>();
      const place = await readPlace(local.gateway.table, ACCOUNT, 'payment', object);
      let units = 0;
      let startKey: string | undefined;
      do {
        const page = await store.listRecords(local.gateway.table, place, { limit: 1000, ...(startKey ? { startKey } : {}) });
        for (const record of page.records) {
          ids.add(record.id);
          units += writeUnits(record);
        }
        startKey = page.nextStartKey;
      } while (startKey);
      const platformIds = await platforms.ids('payment', object, '');
      for (const id of platformIds) if (!ids.has(id)) missing += 1;
      records += ids.size;
      platformRecords += platformIds.length;
      const pages = Math.ceil(platformIds.length / 100);
      idealCalls += pages;
      slowestObject = Math.max(slowestObject, (pages - 1) / PAYMENT_PER_ENDPOINT, units / (STORE_WRITES_PER_SECOND * place.shards));
    }
    const isRecord = (key: { pk: string }) => key.pk.startsWith(`ACCOUNT#${ACCOUNT}#payment#`);
    const recordWrites = writes.itemsWritten(isRecord);
    // The table's units as DynamoDB sizes the items written (the pace's own estimate is a little higher).
    const recordUnits = writes.unitsWritten(isRecord);
    // The least time any client could take here: the account's 100/s, each endpoint's 25/s, each data
    // object's writes at the store's pace per shard key (shared/store/record-layout.ts), and the last answer's 300 ms.
    // With a table's own limit, every object's writes share it too.
    const tableBound = options.tableWriteUnits === undefined ? 0 : recordUnits / options.tableWriteUnits;
    const fastest = Math.max(slowestObject, tableBound, (idealCalls - 1) / PAYMENT_PER_SECOND) + LATENCY.ms / 1000;
    const prefix = options.tableWriteUnits === undefined ? 'sync.latency300.first5' : 'sync.latency300.first5_new_table';
    if (options.tableWriteUnits !== undefined) figures[`${prefix}.table_write_units`] = options.tableWriteUnits;
    figures[`${prefix}.records`] = records;
    figures[`${prefix}.missing`] = missing;
    figures[`${prefix}.duplicates`] = Math.max(0, recordWrites - records);
    figures[`${prefix}.units_per_record`] = round(recordUnits / recordWrites, 3);
    figures[`${prefix}.calls`] = calls;
    figures[`${prefix}.calls_over_ideal`] = round((calls - idealCalls) / idealCalls, 4);
    // Where the requests over one per 100 records went, in requests (they sum to `calls - ideal`):
    // answers other than a page (429s, faults), empty pages, the records part-filled pages lacked,
    // records listed more than once (a page's last second listed again by the piece split off there),
    // less the last page each object needs anyway.
    figures[`${prefix}.over.not_pages`] = calls - answers.pages;
    figures[`${prefix}.over.empty_pages`] = answers.empty;
    figures[`${prefix}.over.part_pages`] = answers.part;
    figures[`${prefix}.over.part_short`] = round(answers.partShort / 100, 2);
    figures[`${prefix}.over.relisted`] = round((answers.records - platformRecords) / 100, 2);
    figures[`${prefix}.over.last_pages`] = round(-(idealCalls - platformRecords / 100), 2);
    figures[`${prefix}.seconds`] = round(seconds, 1);
    figures[`${prefix}.limit_per_second`] = PAYMENT_PER_SECOND;
    figures[`${prefix}.rate_fraction`] = round(calls / seconds / PAYMENT_PER_SECOND);
    figures[`${prefix}.rate_fraction_bound`] = round(idealCalls / fastest / PAYMENT_PER_SECOND);
    figures[`${prefix}.bound_fraction`] = round(fastest / seconds);
    figures[`${prefix}.retried_jobs`] = retried;
    figures[`${prefix}.http_429`] = after.rateLimited - before.rateLimited;
    figures[`${prefix}.max_in_flight`] = after.maxInFlight;
    figures[`${prefix}.queue_most_in_flight`] = local.queues.syncJobs.mostInFlight;
    figures[`${prefix}.quiet_write_p50_ms_alone`] = round(percentile(quietAlone, 50), 1);
    figures[`${prefix}.quiet_write_p50_ms`] = round(percentile(quietBeside, 50), 1);
    figures[`${prefix}.quiet_write_p99_ms`] = round(percentile(quietBeside, 99), 1);
    figures[`${prefix}.quiet_write_max_ms`] = round(Math.max(...quietBeside), 1);
    figures[`${prefix}.quiet_writes`] = quietBeside.length;
    figures[`${prefix}.quiet_writes_failed`] = quiet.failed;
    figures[`${prefix}.max_writes_per_key_second`] = writes.maxWritesPerKeySecond(isRecord);

    if (options.sdk === false) return;
    // The platform's SDK, auto-paging each object in turn (its own key: its own rate bucket).
    const stripe = new Stripe(sdkKey, { host: '127.0.0.1', port: Number(new URL(platforms.paymentUrl).port), protocol: 'http', maxNetworkRetries: 2 });
    const sdkStarted = performance.now();
    let sdkRecords = 0;
    for await (const record of stripe.customers.list({ limit: 100 })) if (record.id) sdkRecords += 1;
    for await (const record of stripe.subscriptions.list({ limit: 100, status: 'all' })) if (record.id) sdkRecords += 1;
    for await (const record of stripe.invoices.list({ limit: 100 })) if (record.id) sdkRecords += 1;
    for await (const record of stripe.paymentIntents.list({ limit: 100 })) if (record.id) sdkRecords += 1;
    for await (const record of stripe.charges.list({ limit: 100 })) if (record.id) sdkRecords += 1;
    const sdkSeconds = (performance.now() - sdkStarted) / 1000;
    figures[`${prefix}.sdk_records`] = sdkRecords;
    figures[`${prefix}.sdk_seconds`] = round(sdkSeconds, 1);
    figures[`${prefix}.sdk_ratio`] = round(sdkSeconds / seconds, 1);
  } finally {
    local.queues.syncJobs.stop();
    useGateway(previous);
    await Promise.all([local.stop(), platforms.stop()]);
  }
}

/**
 * Another account's small writes, one every 50 ms while it runs (an account item rewritten: one
 * PutItem of 1 unit through the same table), each one's time from send to answer with the SDK's
 * retries of any refusal. A write that fails after them counts in `failed`.
 */
function quietTenant(gateway: Gateway) {
  let times: number[] = [];
  let stopped = false;
  const tenant = { failed: 0 };
  return Object.assign(tenant, {
    async runFor(ms: number): Promise<void> {
      stopped = false;
      const until = performance.now() + ms;
      while (!stopped && performance.now() < until) {
        const at = new Date().toISOString();
        const sent = performance.now();
        try {
          await store.putAccount(gateway.table, { accountId: 'quiet-tenant', name: 'quiet-tenant', integrationsEnabled: true, createdAt: at, updatedAt: at });
          times.push(performance.now() - sent);
        } catch {
          tenant.failed += 1;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: () => void (stopped = true),
    takeTimes: () => {
      const taken = times;
      times = [];
      return taken;
    },
  });
}

/** Whether a sync of the bench's connection failed and waits for its next try. */
async function dueRetry(gateway: Gateway): Promise<boolean> {
  const checkpoints = await Promise.all(PAYMENT_OBJECTS.map((object) => store.getSyncCheckpoint(gateway.table, ACCOUNT, 'payment', object)));
  return checkpoints.some((checkpoint) => checkpoint?.retry?.nextAttemptAt !== undefined && !checkpoint.lastSucceededAt);
}

export const FIRST5_NOTE =
  '`sync.latency300.first5.*`: a new customer\'s first sync, as `npm start` runs it: a live payment connection with all five data objects (15,000 customers created evenly over a year, a subscription each, an invoice, payment intent and charge a subscription where its status has them), every answer 300 ms ± 100 ms, an empty table; "Sync now" enqueues one job per object and the local sync queue runs them side by side (one job of an object at a time, as the FIFO queue\'s event source does). `rate_fraction`: requests per second over the account\'s 100/s (five endpoints at 25/s each would allow 125); `rate_fraction_bound`: the most any client writing to this store could reach (each object\'s writes at the store\'s 850 units a second into each of its 8 shard keys, each endpoint at 25/s, the account at 100/s, the last answer 300 ms late); `bound_fraction`: that least possible time over the time taken; `calls_over_ideal`: requests over one per 100 records, as a share; `units_per_record`: write units of the record items written, as DynamoDB sizes items (names and values in bytes, 1 KB a unit), per item written; `queue_most_in_flight`: sync jobs the local queue ran at once; `quiet_write_*`: another account writing a 1-unit item every 50 ms beside the sync (as its webhook events and conversations do), each write\'s milliseconds with the SDK\'s retries of refusals (`_alone`: in the 2 s before the sync), and writes that failed after them (beside `first5` they wait in dynalite\'s queue, one process at one core: a local artifact; beside `first5_new_table` they wait out the table\'s refusals, as deployed); `retried_jobs`: jobs that failed for a reason time fixes (a page not answered within 10 s on a loaded machine) and were run again at once where the retry schedule would wait (their seconds count); `sdk_*`: the platform\'s own SDK auto-paging the five objects one after another (its own key). Alone: `SYNC_ONLY=first5 npm run bench -- sync`. `sync.latency300.first5_new_table.*`: the same into a table that takes 4,000 write units a second, as a new on-demand table does (local/table-throughput.ts refuses the rest as DynamoDB would); its bound adds the table\'s pace for all five objects\' record writes, in those units. Alone: `SYNC_ONLY=first5_new_table npm run bench -- sync` (not part of the full run).';
