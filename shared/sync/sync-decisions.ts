import * as z from 'zod/mini';
import type { RecordWrite, SyncCheckpoint } from '../store/items';
import type { StoredVersion } from '../store/store';
import { recordHash } from './record-hash';
import type { NormalisedRecord, PageCursor, SyncPage, SyncWindow } from './sync-source';

/**
 * How far each incremental window reaches back before the previous run's start. It covers records
 * changed during that run (whose pages were already passed), records changed in the cursor's exact
 * second, and clock skew between the gateway and the platform. Duplicates it brings are free: an
 * unchanged record costs a read, not a write.
 */
export const SYNC_OVERLAP_SECONDS = 300;

/**
 * A full sync runs at least this often even when incremental syncs succeed: it reconciles what no
 * incremental window can see (records without an updated timestamp, hard deletions, events past
 * the platform's 30-day horizon).
 */
export const FULL_RECONCILE_AFTER_SECONDS = 7 * 24 * 60 * 60;

/**
 * Where a full listing's records lay by ordering key (pieces of the key range and the records
 * listed in each, at most PROFILE_PIECES, in ascending key order), and the platform's answer time
 * then: kept from one complete full run so the next one cuts its slices at the start
 * (shared/sync/slice-plan.ts, `plannedSlices`) instead of waiting for a first page.
 */
export const ListingProfile = z.object({
  order: z.enum(['newest_first', 'oldest_first']),
  pieces: z.array(z.object({ from: z.number().check(z.int()), to: z.number().check(z.int()), records: z.number().check(z.int(), z.nonnegative()) })),
  latencyMs: z.optional(z.number().check(z.nonnegative())),
});
export type ListingProfile = z.infer<typeof ListingProfile>;

/** Where the next incremental run starts, kept in the checkpoint between runs; and the last full listing's profile (one unreadable is dropped, not the watermark). */
export const Watermark = z.object({
  since: z.number().check(z.int()),
  lastFullSyncAt: z.number().check(z.int()),
  listing: z.catch(z.optional(ListingProfile), undefined),
});
export type Watermark = z.infer<typeof Watermark>;

/** One slice of a listing in progress: its range of the ordering key and where its paging stands. */
export const SliceCursor = z.object({
  id: z.number().check(z.int(), z.nonnegative()),
  from: z.optional(z.number().check(z.int())),
  to: z.optional(z.number().check(z.int())),
  /** Records its first page asks for, fewer than a page (SliceRange.firstPage). */
  firstPage: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(99))),
  /** The connector's cursor after the slice's last saved page; absent before its first. */
  page: z.optional(z.record(z.string(), z.json())),
  /** Pages of this slice saved so far. */
  pages: z.number().check(z.int(), z.nonnegative()),
});
export type SliceCursor = z.infer<typeof SliceCursor>;

/** Where a run stands, saved after every page: the window it pages and the connector's cursor(s). */
export const RunCursor = z.object({
  window: z.union([z.object({ mode: z.literal('full') }), z.object({ mode: z.literal('incremental'), since: z.number().check(z.int()) })]),
  /** A run paging one listing (written before slices existed): where it stands. */
  page: z.optional(z.record(z.string(), z.json())),
  /** Pages this run has saved. */
  pageIndex: z.number().check(z.int(), z.nonnegative()),
  /** The slices still to list, each resumed where it stopped; absent for a run not split yet. */
  slices: z.optional(z.array(SliceCursor)),
  /** The next slice's id (ids number the slices' pages in the run's list of seen ids). */
  nextSlice: z.optional(z.number().check(z.int(), z.nonnegative())),
  /** What the pages so far showed: records listed, and how densely (records and seconds of ordering key). */
  listed: z.optional(z.number().check(z.int(), z.nonnegative())),
  density: z.optional(z.object({ records: z.number().check(z.nonnegative()), seconds: z.number().check(z.nonnegative()) })),
  /** Full pages' widths (seconds of ordering key): how unevenly records lie (shared/sync/slice-plan.ts, `recordSpread`). */
  widths: z.optional(
    z.object({ pages: z.number().check(z.int(), z.nonnegative()), sum: z.number().check(z.nonnegative()), squares: z.number().check(z.nonnegative()) }),
  ),
  /** The farthest ordering key a page reached (shared/sync/slice-plan.ts, ListingView.reached). */
  reached: z.optional(z.number().check(z.int())),
  /** Where this full run's listed records lay so far (kept with the watermark when it completes); one unreadable is dropped, not the cursor. */
  profile: z.catch(z.optional(ListingProfile), undefined),
});
export type RunCursor = z.infer<typeof RunCursor>;

/** The slices a run continues with: a run not split yet is one slice, the whole listing. Pure. */
export function slicesOf(point: RunCursor): { slices: SliceCursor[]; nextSlice: number } {
  if (point.slices) return { slices: point.slices, nextSlice: point.nextSlice ?? Math.max(0, ...point.slices.map((slice) => slice.id + 1)) };
  return { slices: [{ id: 0, pages: point.pageIndex, ...(point.page ? { page: point.page } : {}) }], nextSlice: 1 };
}

/** Slice pages apart in the run's list of seen ids: a slice's n-th page is always saved under one number. */
export const SEEN_PAGES_PER_SLICE = 1_000_000;

export function seenPageNumber(slice: Pick<SliceCursor, 'id' | 'pages'>): number {
  return slice.id * SEEN_PAGES_PER_SLICE + slice.pages;
}

export function watermarkOf(checkpoint: SyncCheckpoint | undefined): Watermark | undefined {
  const parsed = Watermark.safeParse(checkpoint?.watermark);
  return parsed.success ? parsed.data : undefined;
}

/** The mode a new run claims: full until a full sync finished, and again when a reconcile is due. */
export function modeForNewRun(checkpoint: SyncCheckpoint | undefined, nowSeconds: number): SyncCheckpoint['mode'] {
  const watermark = watermarkOf(checkpoint);
  if (!watermark) return 'full';
  return nowSeconds - watermark.lastFullSyncAt >= FULL_RECONCILE_AFTER_SECONDS ? 'full' : 'incremental';
}

/** The window and page a claimed checkpoint continues from: a crashed run's cursor, or a fresh start. */
export function startingPoint(checkpoint: SyncCheckpoint): RunCursor {
  const saved = RunCursor.safeParse(checkpoint.cursor);
  if (saved.success) return saved.data;
  const watermark = watermarkOf(checkpoint);
  const window: SyncWindow = checkpoint.mode === 'incremental' && watermark ? { mode: 'incremental', since: watermark.since } : { mode: 'full' };
  return { window, pageIndex: 0 };
}

/** `listing`: a complete full run's profile (replaces the one kept); an incremental run keeps the previous. */
export function nextWatermark(previous: Watermark | undefined, window: SyncWindow, runStartedAtSeconds: number, listing?: ListingProfile): Watermark {
  const kept = window.mode === 'full' ? listing : previous?.listing;
  return {
    since: runStartedAtSeconds - SYNC_OVERLAP_SECONDS,
    lastFullSyncAt: window.mode === 'full' ? runStartedAtSeconds : (previous?.lastFullSyncAt ?? runStartedAtSeconds),
    ...(kept ? { listing: kept } : {}),
  };
}

/**
 * Within one page, one record per id: the highest source version, or on a tie (or with none) the
 * one listed last, which is the latest in both platforms' change-ordered listings.
 */
export function latestPerId(records: readonly NormalisedRecord[]): NormalisedRecord[] {
  const byId = new Map<string, NormalisedRecord>();
  for (const record of records) {
    const held = byId.get(record.id);
    if (!held || (record.sourceVersion ?? -Infinity) >= (held.sourceVersion ?? -Infinity)) byId.set(record.id, record);
  }
  return [...byId.values()];
}

export interface PagePlan {
  /** Records to write: new, changed, or back after a deletion. */
  writes: RecordWrite[];
  /** Records to mark deleted (deleted on the platform, or no longer kept), at the version it happened. */
  removals: Array<{ id: string; sourceVersion?: number }>;
  unchanged: number;
}

/**
 * Decides what a page changes in the store, given what is stored: nothing is written for a
 * record whose hash is unchanged, nor over a newer version a webhook already applied.
 */
export function planPage(
  page: Pick<SyncPage, 'records' | 'deletedIds' | 'deletedVersions'>,
  stored: ReadonlyMap<string, StoredVersion>,
  keeps: (record: NormalisedRecord) => boolean,
  syncedAt: string,
): PagePlan {
  const plan: PagePlan = { writes: [], removals: [], unchanged: 0 };
  const removed = new Set<string>();
  const remove = (id: string, sourceVersion: number | undefined) => {
    const held = stored.get(id);
    if (held && !held.deleted && !removed.has(id)) {
      removed.add(id);
      plan.removals.push({ id, ...(sourceVersion === undefined ? {} : { sourceVersion }) });
    }
  };
  for (const record of latestPerId(page.records)) {
    if (!keeps(record)) {
      remove(record.id, record.sourceVersion);
      continue;
    }
    const hash = recordHash(record.fields);
    const held = stored.get(record.id);
    const sameData = held !== undefined && !held.deleted && held.hash === hash;
    const olderThanStored = held?.sourceVersion !== undefined && record.sourceVersion !== undefined && record.sourceVersion < held.sourceVersion;
    if (sameData || olderThanStored) {
      plan.unchanged += 1;
      continue;
    }
    plan.writes.push({
      id: record.id,
      hash,
      body: record.fields,
      syncedAt,
      ...(record.email ? { email: record.email } : {}),
      ...(record.customerId ? { customerId: record.customerId } : {}),
      ...(record.sourceVersion !== undefined ? { sourceVersion: record.sourceVersion } : {}),
      ...(record.updatedAt ? { updatedAt: record.updatedAt } : {}),
    });
  }
  for (const id of page.deletedIds) remove(id, page.deletedVersions?.[id]);
  return plan;
}
