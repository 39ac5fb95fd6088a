import * as z from 'zod';
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

/** Where the next incremental run starts, kept in the checkpoint between runs. */
export const Watermark = z.object({ since: z.number().int(), lastFullSyncAt: z.number().int() });
export type Watermark = z.infer<typeof Watermark>;

/** Where a run stands, saved after every page: the window it pages and the connector's cursor. */
export const RunCursor = z.object({
  window: z.union([z.object({ mode: z.literal('full') }), z.object({ mode: z.literal('incremental'), since: z.number().int() })]),
  page: z.record(z.string(), z.json()).optional(),
  /** Pages this run has saved: the next page's number in the run's list of seen ids. */
  pageIndex: z.number().int().nonnegative(),
});
export type RunCursor = z.infer<typeof RunCursor>;

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

export function nextWatermark(previous: Watermark | undefined, window: SyncWindow, runStartedAtSeconds: number): Watermark {
  return {
    since: runStartedAtSeconds - SYNC_OVERLAP_SECONDS,
    lastFullSyncAt: window.mode === 'full' ? runStartedAtSeconds : (previous?.lastFullSyncAt ?? runStartedAtSeconds),
  };
}

export function cursorAfter(point: RunCursor, next: PageCursor | undefined): RunCursor {
  return { window: point.window, pageIndex: point.pageIndex + 1, ...(next ? { page: next } : {}) };
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
