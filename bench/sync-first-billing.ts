import { startLocalGateway } from '../local/local-gateway';
import { attachQueueConsumers } from '../local/queue-consumers';
import { billingRateLimits, DEFAULT_BILLING_REQUESTS_PER_MINUTE } from '../shared/billing/client';
import { useGateway, type Gateway } from '../shared/gateway';
import { generatedKey } from '../test/support/local-runtime';
import { storeConnection } from '../test/support/stored-connection';
import type { Figures } from './results-file';
import { round } from './statistics';
import { SyncPlatforms } from './sync-platforms';
import { readPlace } from '../shared/reads/record-place';
import * as store from '../shared/store/store';

/** Customers on the site, a subscription each: 3,000 records, 30 pages, about 12 s at 150 a minute. */
export const FIRST_BILLING_CUSTOMERS = 1_500;
const OBJECTS = ['customers', 'subscriptions'] as const;
const LATENCY = { ms: 300, jitterMs: 100 };
const ACCOUNT = 'firstbilling';
const SITE = 'first-billing-test';
/** Mid-sync, users edit this many of the oldest customers (pages already listed) and create this many customers with a subscription. */
const EDITS = 20;
const CREATES = 10;

/**
 * A new customer's first billing sync at the platform's real limit (`sync.latency300.first_billing.*`):
 * a test site (150 requests a minute, the platform's documented floor for test sites and small plans:
 * no scaling in time, unlike `sync.latency300.full.billing.*`), its customers and subscriptions, every
 * answer 300 ms, an empty table, run as `npm start` runs it (one job per object on the local sync
 * queue, side by side within the connection's one budget). A third of the way through, users edit
 * records the listing has passed and create new ones (the offsets of the pages still to come move);
 * then one more sync (incremental, as the schedule would run next) must leave nothing missing or stale.
 * Alone: `SYNC_ONLY=first_billing npm run bench -- sync`.
 */
export async function firstBillingRun(figures: Figures): Promise<void> {
  const platforms = await SyncPlatforms.start(23);
  const local = await startLocalGateway({
    env: { BILLING_BASE_URL_TEMPLATE: `${platforms.billingUrl}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '10000' },
    dynamoInChildProcess: true,
  });
  const previous = useGateway(local.gateway);
  attachQueueConsumers(local);
  try {
    await platforms.seedBilling(SITE, FIRST_BILLING_CUSTOMERS, { perMinute: DEFAULT_BILLING_REQUESTS_PER_MINUTE });
    await platforms.setLatency(LATENCY);
    const apiKey = generatedKey('test_');
    await platforms.addBillingKey(SITE, apiKey);
    const at = new Date().toISOString();
    await store.putAccount(local.gateway.table, { accountId: ACCOUNT, name: ACCOUNT, integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(local.gateway, {
      accountId: ACCOUNT,
      connector: 'billing',
      // No plan limit given: the client's budget is the platform's documented 150 a minute.
      config: { siteName: SITE, environment: 'test' },
      credentials: { apiKey },
      syncSettings: { dataObjects: [...OBJECTS], frequency: 'daily', method: 'api', subscriptionStatus: 'all' },
    });
    const atStart = await Promise.all(OBJECTS.map((object) => platforms.billingVersions(SITE, object)));
    const startPages = atStart.reduce((sum, versions) => sum + Math.ceil(Object.keys(versions).length / 100), 0);

    const before = await platforms.totals('billing');
    await platforms.resetMaxInFlight('billing');
    const started = performance.now();
    const sync = async () => {
      const requestedAt = new Date().toISOString();
      await local.gateway.queues.syncJobs.send(OBJECTS.map((object) => ({ accountId: ACCOUNT, connector: 'billing' as const, object, trigger: 'manual' as const, requestedAt })));
      await local.queues.syncJobs.idle();
    };
    const first = sync();
    // A third of the pages listed: users change the site under the listing.
    while ((await platforms.totals('billing')).requests - before.requests < Math.ceil(startPages / 3)) await new Promise((resolve) => setTimeout(resolve, 100));
    await platforms.billingChurn(SITE, EDITS, CREATES);
    await first;
    const seconds = (performance.now() - started) / 1000;
    const after = await platforms.totals('billing');
    const calls = after.requests - before.requests;
    // One request per 100 records the site held as the sync ended: records created under it come last in its order, and it lists them too.
    const atEnd = await Promise.all(OBJECTS.map((object) => platforms.billingVersions(SITE, object)));
    const ideal = atEnd.reduce((sum, versions) => sum + Math.ceil(Object.keys(versions).length / 100), 0);
    for (const object of OBJECTS) {
      const checkpoint = await store.getSyncCheckpoint(local.gateway.table, ACCOUNT, 'billing', object);
      if (!checkpoint?.lastSucceededAt || checkpoint.cursor) throw new Error(`first_billing: the ${object} sync did not finish: ${JSON.stringify({ lastError: checkpoint?.lastError, counts: checkpoint?.counts })}`);
    }
    // Every record the site held when the sync started is stored after it.
    let missingFirst = 0;
    for (const [i, object] of OBJECTS.entries()) {
      const stored = await storedVersions(local.gateway, object);
      for (const id of Object.keys(atStart[i]!)) if (!stored.has(id)) missingFirst += 1;
    }

    // The next sync (incremental, from before the first one started) catches what changed under it.
    const nextBefore = (await platforms.totals('billing')).requests;
    await sync();
    const nextCalls = (await platforms.totals('billing')).requests - nextBefore;
    let missing = 0;
    let stale = 0;
    let records = 0;
    for (const object of OBJECTS) {
      const platform = await platforms.billingVersions(SITE, object);
      const stored = await storedVersions(local.gateway, object);
      for (const [id, version] of Object.entries(platform)) {
        records += 1;
        const held = stored.get(id);
        if (held === undefined) missing += 1;
        else if (held < version) stale += 1;
      }
    }

    const { ratePerSecond: perSecond, burst } = billingRateLimits({});
    const prefix = 'sync.latency300.first_billing';
    figures[`${prefix}.records`] = records;
    figures[`${prefix}.limit_per_minute`] = DEFAULT_BILLING_REQUESTS_PER_MINUTE;
    figures[`${prefix}.calls`] = calls;
    figures[`${prefix}.calls_over_ideal`] = round((calls - ideal) / ideal, 4);
    figures[`${prefix}.seconds`] = round(seconds, 1);
    figures[`${prefix}.rate_fraction`] = round(calls / seconds / perSecond);
    figures[`${prefix}.ideal_calls`] = ideal;
    // The least time at the limit: the budget's burst goes at once, the rest at 150 a minute, the last answer 300 ms late.
    figures[`${prefix}.bound_fraction`] = round((Math.max(0, ideal - burst) / perSecond + LATENCY.ms / 1000) / seconds);
    figures[`${prefix}.max_in_flight`] = after.maxInFlight;
    figures[`${prefix}.http_429`] = after.rateLimited - before.rateLimited;
    figures[`${prefix}.missing_after_first`] = missingFirst;
    figures[`${prefix}.missing`] = missing;
    figures[`${prefix}.stale`] = stale;
    figures[`${prefix}.next_sync_calls`] = nextCalls;
  } finally {
    local.queues.syncJobs.stop();
    useGateway(previous);
    await Promise.all([local.stop(), platforms.stop()]);
  }
}

/** The stored records' source versions, by id (deleted ones left out). */
async function storedVersions(gateway: Gateway, object: string): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  const place = await readPlace(gateway.table, ACCOUNT, 'billing', object);
  let startKey: string | undefined;
  do {
    const page = await store.listRecords(gateway.table, place, { limit: 1000, ...(startKey ? { startKey } : {}) });
    for (const record of page.records) versions.set(record.id, record.sourceVersion ?? 0);
    startKey = page.nextStartKey;
  } while (startKey);
  return versions;
}

export const FIRST_BILLING_NOTE =
  '`sync.latency300.first_billing.*`: a new customer\'s first billing sync at the platform\'s real limit, as `npm start` runs it: a test site at 150 requests a minute (the documented floor for test sites and small plans; not scaled in time), 1,500 customers with a subscription each, every answer 300 ms ± 100 ms, an empty table, one job per object side by side within the connection\'s one budget. A third of the way through, users edit 20 of the oldest customers (pages already listed) and create 10 customers with a subscription (the offsets still to come move). `rate_fraction`: requests per second over 2.5/s (the budget\'s burst of 5 goes at once, so a short run can pass 1); `bound_fraction`: the least time the limit allows these pages (the burst at once, the rest at 2.5/s, the last answer 300 ms late) over the time taken; `calls_over_ideal`: requests over one per 100 records the site held as the first sync ended (`ideal_calls`; records created under it come last in its order, and it lists them); `missing_after_first`: records the site held at the start that the first sync did not store; `missing` / `stale`: records the site holds that the table lacks, or holds at an older `resource_version`, after the next (incremental) sync (`next_sync_calls` requests). Alone: `SYNC_ONLY=first_billing npm run bench -- sync`.';
