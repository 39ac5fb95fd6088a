import type { ClientPace } from '../http/platform-client';
import type { Logger } from '../log/logger';
import type { SyncCounts } from '../store/items';
import type { RecordPlace, Table } from '../store/store';
import type { ConnectorName } from '../connectors';
import type { SweepInMemory } from './deletion-sweep';
import { MAX_SLICES, plannedSlices, wantedSlices } from './slice-plan';
import { slicesOf, type ListingProfile, type RunCursor } from './sync-decisions';
import type { NormalisedRecord, SliceOrder, SliceRange, SyncPage, SyncSource, SyncWindow } from './sync-source';

/**
 * One paging run (shared/sync/page-slices.ts): what it is given (`PagingContext`) and the state its
 * parts share (`PagingRun`): the window and order it pages, its slices, how far it got, and whether
 * it stopped (a failure, or a test holding it). The slices' workers, the page writes and the
 * checkpoint saves all read and change that one state.
 */

export interface PagingContext {
  table: Table;
  place: RecordPlace;
  source: SyncSource;
  keeps: (record: NormalisedRecord) => boolean;
  /** How fast the connection's budget goes and how long its platform takes to answer. */
  pace: () => ClientPace | undefined;
  /** Whether records may be written without conditions (no other writer: the sync method is API Direct). */
  batchWrites: boolean;
  /** Where the run's seen ids go (full windows). */
  seenScope: { accountId: string; connector: ConnectorName; object: string; run: string };
  seenExpiresAt: () => number;
  /**
   * The object held in memory by a full run starting afresh (shared/sync/deletion-sweep.ts): told
   * the ids each page keeps and what the run deletes; with `batchWrites` (the run is the only
   * writer) also what it writes, and it answers each page's comparison once it holds every stored version.
   */
  inMemory?: Pick<SweepInMemory, 'noteSeen' | 'noteWritten' | 'noteDeleted' | 'versionsOf' | 'listed'>;
  /** With `inMemory` and `batchWrites`: a page waits for the stored versions to be read whole instead of reading the store (`pagesAwaitListing`). */
  awaitListing?: boolean;
  /**
   * The last complete full listing's profile (kept with the watermark): a full run starting afresh
   * cuts its slices from it at once (`plannedSlices`) instead of waiting for a first page.
   */
  previousListing?: ListingProfile;
  /** Epoch seconds the run started at: the far end of an oldest-first listing. */
  runStartedAt: number;
  now: () => number;
  log: Logger;
  /** Saves the run's place (the checkpoint) with its counts; throws if the run lost its claim. */
  save: (point: RunCursor, counts: SyncCounts) => Promise<void>;
  /** Called after each save with the pages saved so far (tests and benchmarks stop a run here). */
  afterSave?: (pages: number) => void | Promise<void>;
  /** Whether another page may be fetched in this invocation (time and page budget). */
  mayFetch: (pagesFetched: number) => boolean;
  /** Most slices in flight (default MAX_SLICES); 1 pages the listing as one. */
  maxSlices?: number;
  /** At most one save per this long (default CHECKPOINT_EVERY_MS); 0 saves after every page (coalesced). */
  checkpointEveryMs?: number;
}

export interface Slice {
  id: number;
  range: SliceRange;
  page?: RunCursor['page'];
  pages: number;
  /**
   * A slice split off where another's page ended lists that page's last second again: the rows of
   * it that page had (its first rows), left out of the profile so that its counts stay exact. In
   * memory only.
   */
  relists?: number;
}

/** What the checkpoint keeps of what the run's pages showed of the listing. */
export type ListingSaved = Pick<RunCursor, 'listed' | 'density' | 'widths' | 'reached' | 'profile'>;

/** A page as the run holds it: with when it was fetched (the records' sync time). */
export type Fetched = SyncPage & { fetchedAt: string };

export class PagingRun {
  window: SyncWindow;
  /** The order a full listing pages in when it is sliced; undefined for one listing in order. */
  order: SliceOrder | undefined;
  readonly slices: Map<number, Slice>;
  nextSlice: number;
  /** Where the previous complete listing ended (newest first): see `ListingView.floor`. */
  readonly floor: number | undefined;
  /** Pages this run has written and moved its slices' cursors past. */
  pageIndex: number;
  /** Pages requested in this invocation (what `mayFetch` is asked about). */
  pagesFetched = 0;
  /** Pages written in this invocation. */
  pagesThisInvocation = 0;
  /** Slices being paged, with the capacity a split has taken for its pieces before they start. */
  active = 0;
  /** The first failure: every part stops at its next step, and the run throws `PagingStopped`. */
  failure: { error: unknown } | undefined;
  /** A test or benchmark holding the run (a "kill"): no step starts until it lets go. */
  hold: Promise<void> = Promise.resolve();

  constructor(
    readonly context: PagingContext,
    start: RunCursor,
  ) {
    this.window = start.window;
    this.order = start.window.mode === 'full' ? context.source.slicing?.order : undefined;
    const starting = startingSlices(context, start, this.order);
    this.slices = starting.slices;
    this.nextSlice = starting.nextSlice;
    this.floor = starting.floor;
    this.pageIndex = start.pageIndex;
  }

  /** Requests the page `cursor` names in `slice` (its first page when undefined). */
  fetchPage(slice: Slice, cursor: RunCursor['page']): Promise<Fetched> {
    this.pagesFetched += 1;
    const fetchedAt = new Date(this.context.now()).toISOString();
    const fetching = this.context.source
      .fetchPage(this.window, cursor, this.order && (slice.range.from !== undefined || slice.range.to !== undefined) ? slice.range : undefined)
      .then((page) => ({ ...page, fetchedAt }));
    // A page fetched ahead may be dropped unread (the run stopped); its failure is seen only if awaited.
    fetching.catch(() => undefined);
    return fetching;
  }

  /** New slices for `ranges`, added to the run's, with no page listed yet. */
  addSlices(ranges: readonly SliceRange[]): Slice[] {
    const fresh: Slice[] = ranges.map((range) => ({ id: this.nextSlice++, range, pages: 0 }));
    for (const slice of fresh) this.slices.set(slice.id, slice);
    return fresh;
  }

  /**
   * An incremental run whose window the platform cannot serve (`FullSyncNeeded`) pages everything
   * instead, in this run: one slice, the whole listing.
   */
  startOverFull(): Slice {
    this.window = { mode: 'full' };
    this.order = this.context.source.slicing?.order;
    this.slices.clear();
    return this.addSlices([{}])[0]!;
  }

  /** Where the run stands, to save: its slices' places, and what its pages showed of the listing (`ListingSoFar.saved`). */
  cursor(listing: ListingSaved): RunCursor {
    return {
      window: this.window,
      pageIndex: this.pageIndex,
      slices: [...this.slices.values()].map((slice) => ({
        id: slice.id,
        pages: slice.pages,
        ...(slice.range.from === undefined ? {} : { from: slice.range.from }),
        ...(slice.range.to === undefined ? {} : { to: slice.range.to }),
        ...(slice.range.firstPage === undefined ? {} : { firstPage: slice.range.firstPage }),
        ...(slice.page ? { page: slice.page } : {}),
      })),
      nextSlice: this.nextSlice,
      ...listing,
    };
  }
}

/**
 * The slices a run starts with: those of the run it resumes, or for a full run starting afresh over
 * a listing seen complete before, slices cut from that listing's profile at once (`plannedSlices`),
 * with where that listing ended (newest first: nothing new lies below it). Otherwise one listing.
 */
function startingSlices(context: PagingContext, start: RunCursor, order: SliceOrder | undefined): { slices: Map<number, Slice>; nextSlice: number; floor?: number } {
  const resumed = slicesOf(start);
  const slices = new Map<number, Slice>(
    resumed.slices.map((slice) => [slice.id, { id: slice.id, range: rangeOf(slice), pages: slice.pages, ...(slice.page ? { page: slice.page } : {}) }]),
  );
  let nextSlice = resumed.nextSlice;
  const previous = context.previousListing;
  if (!order || previous?.order !== order || start.slices !== undefined || start.pageIndex !== 0 || start.page) return { slices, nextSlice };
  const pace = { ratePerSecond: context.pace()?.ratePerSecond, latencyMs: previous.latencyMs, waitMs: 0 };
  const most = context.maxSlices ?? MAX_SLICES;
  const planned = plannedSlices(previous, wantedSlices(pace, 0, most), most);
  if (!planned) return { slices, nextSlice };
  slices.clear();
  for (const range of planned) slices.set(nextSlice, { id: nextSlice++, range, pages: 0 });
  // Records are never created in the past: a newest-first listing by creation time has nothing
  // new below where the previous complete one ended, so a split probes no further than that.
  const held = previous.pieces.filter((piece) => piece.records > 0);
  return { slices, nextSlice, ...(order === 'newest_first' && held.length > 0 ? { floor: Math.min(...held.map((piece) => piece.from)) } : {}) };
}

function rangeOf(slice: { from?: number; to?: number; firstPage?: number }): SliceRange {
  return {
    ...(slice.from === undefined ? {} : { from: slice.from }),
    ...(slice.to === undefined ? {} : { to: slice.to }),
    ...(slice.firstPage === undefined ? {} : { firstPage: slice.firstPage }),
  };
}
