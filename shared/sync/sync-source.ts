import type { PlatformClient } from '../http/platform-client';

/** JSON as stored: what a normalised record's fields may hold. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * One platform record in the gateway's words (the same shape for both platforms where they
 * overlap: see shared/sync/normalised.ts), plus what the store indexes it by.
 */
export interface NormalisedRecord {
  /** The platform's id. */
  id: string;
  /** Customers: their email, so playbooks can find them by it. */
  email?: string;
  /** Subscriptions, invoices, payments: the customer they belong to. */
  customerId?: string;
  /**
   * The platform's own version order, one unit per connector (billing: `resource_version`, in
   * milliseconds; payment: seconds, the event's time, or for a listed record the second it was
   * fetched, since its state is at least that recent). A sync never overwrites a newer version a
   * webhook stored, nor a webhook an older one.
   */
  sourceVersion?: number;
  /** The platform's last-updated time, ISO 8601, when it has one. */
  updatedAt?: string;
  fields: JsonObject;
}

/**
 * Which records a run asks for: everything (the first sync, or a reconcile), or what changed at
 * or after `since` (epoch seconds). The engine already moved `since` back by the overlap.
 */
export type SyncWindow = { mode: 'full' } | { mode: 'incremental'; since: number };

/** Where paging stands inside a run: connector-defined, JSON, saved in the checkpoint after every page. */
export type PageCursor = JsonObject;

/**
 * Part of a full listing: the records whose ordering key (the second they were created, in epoch
 * seconds) lies in [from, to). An absent bound is open. The engine pages several ranges of one
 * data object side by side (shared/sync/slice-plan.ts).
 */
export interface SliceRange {
  from?: number;
  to?: number;
  /**
   * Records the slice's first page asks for (the list's `limit`), fewer than a page: a planned
   * slice starts with it so that its later pages end on whole pages counted from the listing's
   * stable end, where the next plan can cut (shared/sync/slice-plan.ts, `plannedSlices`).
   */
  firstPage?: number;
}

/**
 * The `limit` a list request asks for: a page, or on a slice's first page (`firstOfSlice`) the
 * fewer records its plan gave it (`SliceRange.firstPage`). Pure.
 */
export function listLimit(range: SliceRange | undefined, pageSize: number, firstOfSlice: boolean): number {
  return firstOfSlice && range?.firstPage !== undefined ? Math.min(pageSize, Math.max(1, range.firstPage)) : pageSize;
}

/** Which way a full listing pages through its ordering key. */
export type SliceOrder = 'newest_first' | 'oldest_first';

export interface SyncPage {
  /**
   * Oldest change first where the platform orders by change (an events page, newest-first, is
   * reversed): when one id appears twice with the same version, the later one wins.
   */
  records: NormalisedRecord[];
  /** Records the platform reports deleted (billing `deleted: true`, payment `*.deleted` events). */
  deletedIds: string[];
  /**
   * The version each deletion happened at, in the same unit as the connector's `sourceVersion`:
   * an older event arriving later cannot bring the record back.
   */
  deletedVersions?: Record<string, number>;
  /** Absent on the last page. */
  next?: PageCursor;
  /**
   * The ordering key of the first and the last record the page listed (a sliceable full listing
   * reports it): how far the page reached, and how densely records sit.
   */
  span?: { first: number; last: number };
  /**
   * The ordering key of every row the page listed, records and deleted rows, in the order listed (a
   * sliceable full listing reports them): the engine keeps one page's keys per profile piece, in
   * memory, to cut the listing's profile on one page grid when it completes (`onPageGrid`).
   */
  keys?: number[];
}

/** One data object of one connection, as the sync engine pages through it. */
export interface SyncSource {
  /**
   * Fetches the page `cursor` points at (the first page when undefined). With `range` (full
   * windows of a source that has `slicing`), only records whose ordering key lies in it; a cursor
   * always comes back with the range its listing was started with.
   */
  fetchPage(window: SyncWindow, cursor: PageCursor | undefined, range?: SliceRange): Promise<SyncPage>;
  /**
   * Present when a full listing can be split into ranges of its ordering key (creation time),
   * with the order it pages in; its pages then report their `span`. Absent: one listing, in order.
   */
  readonly slicing?: { order: SliceOrder };
  /**
   * The request a full listing pages with, for platforms that limit each endpoint on their own:
   * the engine plans its slices at that endpoint's pace before the first page.
   */
  readonly listing?: { method: 'GET'; path: string };
  /**
   * Whether a record the platform lists still belongs in the store under the connection's
   * settings (e.g. the subscription status filter). Records that leave it are removed.
   */
  keeps?(record: NormalisedRecord): boolean;
}

/** What a connector's sync module gives the engine. */
export interface ConnectorSync<Settings> {
  /** Every data object the connector can sync, in the spec's words. */
  objects: readonly string[];
  /**
   * The objects holding payments, preferred first (playbooks' payment history and failed payments
   * read one of them: a payment intent and its charge are the same payment seen twice).
   */
  paymentObjects?: readonly string[];
  source(object: string, client: PlatformClient, settings: Settings): SyncSource;
}

/**
 * Thrown by a source whose incremental window it cannot serve (the payment platform's events reach
 * back 30 days only): the engine syncs everything instead, in the same run.
 */
export class FullSyncNeeded extends Error {
  override readonly name: string = 'FullSyncNeeded';
}
