import { randomBytes } from 'node:crypto';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import type { PlatformClient } from '../../shared/http/platform-client';
import { paymentClient, type PaymentClientOptions } from '../../shared/payment/client';
import type { NormalisedRecord, PageCursor, SyncPage, SyncSource, SyncWindow } from '../../shared/sync/sync-source';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';

/** Keys are made at run time; nothing key-shaped is committed. */
export const newKey = (prefix: 'sk_test_' | 'sk_live_' | 'rk_test_' | 'rk_live_' | 'pk_test_'): string =>
  `${prefix}${randomBytes(12).toString('hex')}`;

/** A simulator with one secret test key and no rate limit (tests that want 429s switch it on). */
export async function startSimulator(seed = 11): Promise<{ sim: PaymentSimulator; key: string }> {
  const sim = await startPaymentSimulator({ seed });
  const key = newKey('sk_test_');
  sim.addApiKey(key);
  sim.setRateLimit(undefined);
  return { sim, key };
}

/** The connector's real client against the simulator: short timeouts and a sleep that does not wait. */
export function clientFor(sim: PaymentSimulator, key: string, overrides: Partial<PaymentClientOptions> = {}): PlatformClient {
  return paymentClient({
    env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: true },
    accountId: 'acct-test',
    config: { authenticationMethod: 'api_key', keyType: 'secret', mode: 'test' },
    credentials: { secretKey: key },
    rateBudget: unlimitedRateBudget,
    sleep: async () => {},
    timeoutMs: 1_000,
    retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 4, maxRetryAfterMs: 1_000, deadlineMs: 20_000 },
    ...overrides,
  });
}

export interface PagedRun {
  records: NormalisedRecord[];
  deletedIds: string[];
  pages: number;
  /** The cursor after each page but the last. */
  cursors: PageCursor[];
  /** Each page as fetched: a store applies them one by one. */
  fetched: SyncPage[];
}

/** Pages a source to the end, as the engine will (this is not a sync loop: nothing is stored). */
export async function pageAll(source: SyncSource, window: SyncWindow, start?: PageCursor, maxPages = 1_000): Promise<PagedRun> {
  const run: PagedRun = { records: [], deletedIds: [], pages: 0, cursors: [], fetched: [] };
  let cursor = start;
  do {
    const page = await source.fetchPage(window, cursor);
    run.pages += 1;
    run.fetched.push(page);
    run.records.push(...page.records);
    run.deletedIds.push(...page.deletedIds);
    // The engine stores the cursor as JSON: only what survives that may be relied on.
    cursor = page.next === undefined ? undefined : (JSON.parse(JSON.stringify(page.next)) as PageCursor);
    if (cursor) run.cursors.push(cursor);
  } while (cursor && run.pages < maxPages);
  return run;
}

/**
 * What a store would hold after applying runs page by page, as the sync engine does
 * (shared/sync/sync-decisions.ts, planPage): a record replaces the stored one unless the stored one
 * has a higher source version; a record listed after its deletion comes back; deletions remove.
 */
export function applyRuns(runs: PagedRun[], into = new Map<string, NormalisedRecord>()): Map<string, NormalisedRecord> {
  for (const run of runs) {
    for (const page of run.fetched) {
      for (const record of page.records) {
        const stored = into.get(record.id);
        if (stored?.sourceVersion !== undefined && record.sourceVersion !== undefined && record.sourceVersion < stored.sourceVersion) continue;
        into.set(record.id, record);
      }
      for (const id of page.deletedIds) into.delete(id);
    }
  }
  return into;
}

export function ids(records: readonly { id: string }[]): string[] {
  return records.map((record) => record.id);
}

/** Requests the simulator answered for `METHOD path`, or for every path starting with `prefix`. */
export function requestCount(sim: PaymentSimulator, label: string): number {
  if (!label.endsWith('*')) return sim.requests.get(label) ?? 0;
  const prefix = label.slice(0, -1);
  let count = 0;
  for (const [seen, n] of sim.requests) if (seen.startsWith(prefix)) count += n;
  return count;
}
