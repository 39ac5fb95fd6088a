import { randomBytes } from 'node:crypto';
import { billingClient, type BillingClientOptions } from '../../shared/billing/client';
import type { PlatformClient } from '../../shared/http/platform-client';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import type { PageCursor, SyncPage, SyncSource, SyncWindow } from '../../shared/sync/sync-source';
import { startBillingSimulator, type BillingKeyType, type BillingSimulator, type BillingSite } from '../../sandbox/billing-simulator';

/** Keys are made at run time; nothing key-shaped is committed. */
export const newKey = (mode: 'test' | 'live' = 'test'): string => `${mode}_${randomBytes(12).toString('hex')}`;

export interface BillingSandbox {
  sim: BillingSimulator;
  site: BillingSite;
  key: string;
  /** Backoff waits the clients asked for (the fake sleep records instead of waiting). */
  sleeps: number[];
  /** A client for the `acme` site; options override the defaults (no rate budget wait, short timeout). */
  client(overrides?: Partial<BillingClientOptions>): PlatformClient;
  /** Requests the simulator received for `METHOD /sites/acme/api/v2/<list>`. */
  requests(list: string): number;
  stop(): Promise<void>;
}

/** A simulator with one site `acme`, one key of `keyType`, rate limits off and the clock frozen at `now`. */
export async function startBillingSandbox(options: { keyType?: BillingKeyType; now?: number } = {}): Promise<BillingSandbox> {
  const sim = await startBillingSimulator({ seed: 7 });
  const site = sim.addSite('acme');
  const key = newKey();
  sim.addApiKey('acme', key, { type: options.keyType ?? 'read-only' });
  sim.setRateLimit(undefined);
  sim.setNow(options.now ?? Date.UTC(2025, 5, 1));
  const sleeps: number[] = [];
  return {
    sim,
    site,
    key,
    sleeps,
    client: (overrides = {}) =>
      billingClient({
        env: { BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: true },
        accountId: 'acct-billing-test',
        config: { siteName: 'acme', environment: 'test' },
        credentials: { apiKey: key },
        rateBudget: unlimitedRateBudget,
        timeoutMs: 2_000,
        sleep: async (ms) => {
          sleeps.push(ms);
        },
        ...overrides,
      }),
    requests: (list) => sim.requests.get(`GET /sites/acme/api/v2/${list}`) ?? 0,
    stop: () => sim.stop(),
  };
}

export interface PageThrough {
  pages: SyncPage[];
  records: SyncPage['records'];
  deletedIds: string[];
  /** The cursor each page was fetched with, as the engine would have saved it (JSON round trip). */
  cursors: Array<PageCursor | undefined>;
}

/** Fetches pages until the last one, as the sync engine does (without storing anything). */
export async function pageThrough(source: SyncSource, window: SyncWindow, from?: PageCursor, maxPages = 50): Promise<PageThrough> {
  const result: PageThrough = { pages: [], records: [], deletedIds: [], cursors: [] };
  let cursor = from;
  for (let n = 0; n < maxPages; n += 1) {
    result.cursors.push(cursor);
    const page = await source.fetchPage(window, cursor);
    result.pages.push(page);
    result.records.push(...page.records);
    result.deletedIds.push(...page.deletedIds);
    if (!page.next) return result;
    cursor = JSON.parse(JSON.stringify(page.next)) as PageCursor;
  }
  throw new Error(`no last page after ${maxPages} pages`);
}

export const unique = <T>(values: T[]): Set<T> => new Set(values);
