import * as z from 'zod/mini';
import type { PlatformClient, QueryValue } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import {
  listLimit,
  type ConnectorSync,
  type NormalisedRecord,
  type PageCursor,
  type SliceRange,
  type SyncPage,
  type SyncSource,
  type SyncWindow,
} from '../sync/sync-source';
import { BillingListEnvelope, BillingRowIdentity, billingRowKey, readBillingRecord } from './objects';
import { BILLING_OBJECTS, type BillingObject, type BillingSyncSettings } from './settings';

/**
 * How the billing connector pages through its platform for the sync engine.
 *
 * FULL: `GET /api/v2/<list>?limit=100&include_deleted=true` in the platform's default order
 * (created_at ascending: a key that does not change, so a record edited mid-sync stays on its page),
 * following `next_offset` until it is absent. A record edited after its page was read is caught by
 * the next incremental run, whose window starts before this run did.
 *
 * INCREMENTAL: `updated_at[after]=<since>&sort_by[asc]=updated_at&include_deleted=true`. A record
 * edited mid-sync moves to the end of this order, so it is read again, never skipped.
 *
 * Records without `updated_at` are returned by full runs only (the engine reconciles periodically).
 * A full listing can be split into ranges of creation time (`created_at[between]`; invoices and
 * transactions by their `date`), paged side by side.
 * Rows marked `deleted: true` are reported in `deletedIds`. Payments are transactions of type payment:
 * the platform has no payments list.
 */

export const BILLING_PAGE_SIZE = 100;

const LIST_PATHS: Record<BillingObject, string> = {
  customers: '/api/v2/customers',
  subscriptions: '/api/v2/subscriptions',
  invoices: '/api/v2/invoices',
  payments: '/api/v2/transactions',
};

/**
 * The field each list is in order of by default (ascending), and by which a full listing is split
 * into ranges: when a record was created (invoices and transactions: their `date`).
 */
export const ORDERING_FIELD: Record<BillingObject, 'created_at' | 'date'> = {
  customers: 'created_at',
  subscriptions: 'created_at',
  invoices: 'date',
  payments: 'date',
};

/** Filters that are part of what an object is, whatever the window. */
const FIXED_FILTERS: Partial<Record<BillingObject, Record<string, string>>> = {
  payments: { 'type[is]': 'payment' },
};

/** The platform statuses each Subscription status filter setting keeps; `all` keeps everything. */
export const SUBSCRIPTION_STATUS_FILTERS: Record<Exclude<BillingSyncSettings['subscriptionStatus'], 'all'>, readonly string[]> = {
  active: ['active'],
  cancelled: ['cancelled'],
};

/**
 * Where a run stands, saved by the engine after every page. It carries the listing the offset
 * belongs to (full, or incremental from `since`), so a resumed run, in a new process, asks for
 * exactly the same list and continues after the last row it read.
 */
export const BillingPageCursor = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('full'), offset: z.string().check(z.minLength(1)) }),
  z.object({ mode: z.literal('incremental'), since: z.number().check(z.int()), offset: z.string().check(z.minLength(1)) }),
]);
export type BillingPageCursor = z.infer<typeof BillingPageCursor>;

type Listing = { mode: 'full' } | { mode: 'incremental'; since: number };

/** 2001-09-09: the first 10-digit second. The platform takes timestamps as 10-digit Unix seconds. */
const EARLIEST_SECONDS = 1_000_000_000;
const LATEST_SECONDS = 9_999_999_999;

/** `since` as the platform takes it; a millisecond value is a caller's bug worth a loud error. */
export function billingSince(since: number): number {
  if (!Number.isFinite(since) || since < 0) throw new RangeError('an incremental window needs since >= 0 (epoch seconds)');
  if (since > LATEST_SECONDS) throw new RangeError('an incremental window takes epoch seconds, not milliseconds');
  return Math.max(EARLIEST_SECONDS, Math.floor(since));
}

/** The query of one list page. Pure. */
export function billingListQuery(
  object: BillingObject,
  listing: Listing,
  settings: Pick<BillingSyncSettings, 'subscriptionStatus'>,
  offset: string | undefined,
  range?: SliceRange,
): Record<string, QueryValue> {
  const query: Record<string, QueryValue> = { limit: listLimit(range, BILLING_PAGE_SIZE, offset === undefined), ...FIXED_FILTERS[object] };
  if (listing.mode === 'full') {
    // The status filter saves reading what would be dropped. Incremental runs send none, so a
    // subscription that left the filter (active → cancelled) is still seen and removed by `keeps`.
    if (object === 'subscriptions' && settings.subscriptionStatus !== 'all') {
      query['status[in]'] = JSON.stringify(SUBSCRIPTION_STATUS_FILTERS[settings.subscriptionStatus]);
    }
    Object.assign(query, orderingRange(ORDERING_FIELD[object], range));
  } else {
    query['updated_at[after]'] = billingSince(listing.since);
    query['sort_by[asc]'] = 'updated_at';
  }
  query.include_deleted = true;
  if (offset !== undefined) query.offset = offset;
  return query;
}

/**
 * A range [from, to) of the ordering field as the platform's filters take it: `between` (both ends
 * inclusive) when both bounds are given, else `after` / `before`. Seconds before the first 10-digit
 * second bound nothing (the platform takes 10-digit timestamps only).
 */
export function orderingRange(field: string, range: SliceRange | undefined): Record<string, QueryValue> {
  const from = range?.from !== undefined && range.from > EARLIEST_SECONDS ? Math.min(range.from, LATEST_SECONDS) : undefined;
  const to = range?.to !== undefined ? Math.min(Math.max(range.to, EARLIEST_SECONDS), LATEST_SECONDS) : undefined;
  if (from !== undefined && to !== undefined) return { [`${field}[between]`]: JSON.stringify([from, Math.max(from, to - 1)]) };
  if (from !== undefined) return { [`${field}[after]`]: from - 1 };
  if (to !== undefined) return { [`${field}[before]`]: to };
  return {};
}

/** Whether a subscription belongs in the store under the Subscription status filter. */
export function keepsSubscription(record: NormalisedRecord, subscriptionStatus: BillingSyncSettings['subscriptionStatus']): boolean {
  if (subscriptionStatus === 'all') return true;
  const status = record.fields.status;
  return typeof status === 'string' && SUBSCRIPTION_STATUS_FILTERS[subscriptionStatus].includes(status);
}

/** The cursor a page came from, checked against the run's window. */
function resumedListing(cursor: PageCursor, window: SyncWindow): BillingPageCursor {
  const parsed = BillingPageCursor.safeParse(cursor);
  if (!parsed.success) throw new TypeError('billing sync: the saved cursor is not a billing page cursor');
  if (parsed.data.mode !== window.mode) {
    throw new TypeError(`billing sync: the saved cursor belongs to a ${parsed.data.mode} run, not a ${window.mode} one`);
  }
  return parsed.data;
}

function listingOf(window: SyncWindow): Listing {
  return window.mode === 'full' ? { mode: 'full' } : { mode: 'incremental', since: billingSince(window.since) };
}

function isBillingObject(object: string): object is BillingObject {
  return (BILLING_OBJECTS as readonly string[]).includes(object);
}

export function billingSource(object: BillingObject, client: PlatformClient, settings: BillingSyncSettings): SyncSource {
  const path = LIST_PATHS[object];
  const rowKey = billingRowKey(object);

  function unusablePage(status: number, attempts: number, reason: string): PlatformError {
    return new PlatformError({ platform: 'billing', kind: 'invalid_response', status, attempts, method: 'GET', path, retryable: false, reason });
  }

  async function fetchPage(window: SyncWindow, cursor: PageCursor | undefined, range?: SliceRange): Promise<SyncPage> {
    const resumed = cursor === undefined ? undefined : resumedListing(cursor, window);
    // A resumed run keeps the listing it started with: its offset points into that list.
    const listing: Listing = resumed ?? listingOf(window);
    const response = await client.request({
      method: 'GET',
      path,
      query: billingListQuery(object, listing, settings, resumed?.offset, range),
      schema: BillingListEnvelope,
    });

    const records: NormalisedRecord[] = [];
    const deletedIds: string[] = [];
    const deletedVersions: Record<string, number> = {};
    const keys: number[] = [];
    response.body.list.forEach((row, index) => {
      const raw = row[rowKey];
      const identity = BillingRowIdentity.safeParse(raw);
      if (!identity.success) {
        throw unusablePage(response.status, response.attempts, `list row ${index} has no ${rowKey} with an id`);
      }
      const key = (raw as Record<string, unknown>)[ORDERING_FIELD[object]];
      if (typeof key === 'number') keys.push(key);
      if (identity.data.deleted === true) {
        deletedIds.push(identity.data.id);
        const version = identity.data.resource_version ?? (identity.data.updated_at ? identity.data.updated_at * 1000 : undefined);
        if (version !== undefined && version !== null) deletedVersions[identity.data.id] = version;
        return;
      }
      const reading = readBillingRecord(object, raw);
      if (!reading.ok) {
        throw unusablePage(
          response.status,
          response.attempts,
          `list row ${index} (${rowKey} ${identity.data.id}) does not have the expected shape (${reading.problem})`,
        );
      }
      records.push(reading.record);
    });

    // Only a page whose every row has its ordering key tells how far it reached.
    const span = keys.length > 0 && keys.length === response.body.list.length ? { span: { first: keys[0]!, last: keys.at(-1)! }, keys } : {};
    const nextOffset = response.body.next_offset;
    if (nextOffset === undefined) return { records, deletedIds, deletedVersions, ...span };
    if (nextOffset === resumed?.offset) {
      // The same offset again would page forever.
      throw unusablePage(response.status, response.attempts, 'the platform returned the offset it was given: paging would not advance');
    }
    const next: BillingPageCursor = listing.mode === 'full' ? { mode: 'full', offset: nextOffset } : { ...listing, offset: nextOffset };
    return { records, deletedIds, deletedVersions, next, ...span };
  }

  // Full listings are oldest first by creation time, which never changes: its ranges split them.
  const slicing = { order: 'oldest_first' as const };
  return object === 'subscriptions'
    ? { fetchPage, slicing, keeps: (record) => keepsSubscription(record, settings.subscriptionStatus) }
    : { fetchPage, slicing };
}

export const billingSync: ConnectorSync<BillingSyncSettings> = {
  objects: BILLING_OBJECTS,
  // The platform's payments are transactions, synced as `payments`.
  paymentObjects: ['payments'],
  source(object, client, settings) {
    if (!isBillingObject(object)) throw new TypeError(`billing sync: unknown data object '${object}'`);
    return billingSource(object, client, settings);
  },
};
