import type { ListingSaved, PagingContext, PagingRun } from './paging-run';
import { addToProfile, FIRST_SYNC_PIECE_RECORDS, MAX_SLICES, PAGE_RECORDS, pageDensity, recordSpread, wantedSlices, type ListingView, type SampledPiece } from './slice-plan';
import { onPageGrid } from './page-grid';
import type { ListingProfile, RunCursor } from './sync-decisions';
import type { SliceOrder, SyncPage } from './sync-source';

/**
 * What a run's slices know together about the listing they page (shared/sync/page-slices.ts): the
 * records listed, how densely and how evenly they lie, how far the pages reached, and (full runs)
 * where the listed records lay, its profile. Each page's slice tells it what the page showed
 * (`learn`); a slice deciding whether to split asks for the whole picture (`view`); the checkpoint
 * keeps it (`saved`), and a complete full run's profile plans the next one's slices.
 */
export class ListingSoFar {
  /**
   * Where this full run's listed records lay (ascending key pieces), each with one page's keys when
   * this invocation listed one there (in memory only: the checkpoint keeps the pieces alone).
   */
  private profile: SampledPiece[];
  private listed: number;
  private readonly density: { records: number; seconds: number };
  private readonly widths: { pages: number; sum: number; squares: number };
  private reached: number | undefined;
  /** Records per second of the page that reached farthest (in memory: a resumed run learns it again). */
  private edgeDensity: number | undefined;

  constructor(
    private readonly context: PagingContext,
    private readonly run: PagingRun,
    start: RunCursor,
    /** Pages a second the store's write pace lets through (`PageWrites.storePagesPerSecond`). */
    private readonly storePagesPerSecond: () => number,
  ) {
    const { window, order } = run;
    this.profile = window.mode === 'full' && order && start.profile?.order === order ? start.profile.pieces : [];
    this.listed = start.listed ?? 0;
    this.density = { ...(start.density ?? { records: 0, seconds: 0 }) };
    this.widths = { ...(start.widths ?? { pages: 0, sum: 0, squares: 0 }) };
    this.reached = start.reached;
  }

  /** What the slices know together, for a split decision (`splitRemaining`). */
  view(): ListingView {
    const { context, run } = this;
    const pace = context.pace();
    // Pages a second this object can take: the platform's budget, or the store's write pace when
    // pages bring writes (a first sync), whichever is lower.
    const storePages = this.storePagesPerSecond();
    const rate = pace?.ratePerSecond === undefined ? undefined : Math.min(pace.ratePerSecond, storePages);
    const known = { ratePerSecond: rate, latencyMs: pace?.latencyMs, waitMs: pace?.waitMs ?? 0 };
    const spread = recordSpread(this.widths);
    return {
      order: run.order ?? 'newest_first',
      density: this.density.seconds > 0 ? this.density.records / this.density.seconds : undefined,
      ...(spread === undefined ? {} : { spread }),
      reached: this.reached,
      ...(this.edgeDensity === undefined ? {} : { edgeDensity: this.edgeDensity }),
      farEnd: run.order === 'oldest_first' ? context.runStartedAt + 1 : undefined,
      ...(run.floor === undefined ? {} : { floor: run.floor }),
      active: run.active,
      wanted: wantedSlices(known, run.active, context.maxSlices ?? MAX_SLICES),
      listed: this.listed,
      // A first sync (no complete listing before it) cuts longer pieces: each slice ends on a
      // part-filled page it cannot plan away, and its writes, not the platform, set its pace.
      ...(context.previousListing ? {} : { pieceRecords: FIRST_SYNC_PIECE_RECORDS }),
    };
  }

  /** What one page showed. `relists`: its first rows that a page before listed already (`Slice.relists`). */
  learn(page: SyncPage, relists = 0): void {
    const { window, order } = this.run;
    this.listed += page.records.length + page.deletedIds.length;
    if (!page.span) return;
    const rows = page.records.length + page.deletedIds.length;
    // Rows listed before (the first, of the second the page it was split at ended in): counted once.
    const keys = wholeKeys(page);
    let again = 0;
    if (keys) while (again < Math.min(relists, rows) && keys[again] === page.span.first) again += 1;
    const pageRate = pageDensity(rows, page.span);
    if (pageRate !== undefined) {
      this.density.records += rows;
      this.density.seconds += rows / pageRate;
    }
    if (rows === PAGE_RECORDS) {
      const width = Math.abs(page.span.first - page.span.last);
      this.widths.pages += 1;
      this.widths.sum += width;
      this.widths.squares += width * width;
    }
    if (window.mode === 'full' && order && rows > again) {
      // The page's keys, ascending: their ranks in the listing are known once it completes.
      const sample = keys ? { sample: { keys: keys.slice(again).map(Math.floor).sort((a, b) => a - b), below: 0 } } : {};
      this.profile = addToProfile(this.profile, { from: Math.floor(Math.min(page.span.first, page.span.last)), to: Math.floor(Math.max(page.span.first, page.span.last)) + 1, records: rows - again, ...sample });
    }
    const last = page.span.last;
    const farther = this.reached === undefined || (order === 'oldest_first' ? last > this.reached : last < this.reached);
    if (farther) {
      this.reached = last;
      if (pageRate !== undefined) this.edgeDensity = pageRate;
    }
  }

  /** An incremental run starting over as a full one (`PagingRun.startOverFull`): its profile starts empty. */
  forgetProfile(): void {
    this.profile = [];
  }

  /** The checkpoint's part of it (`PagingRun.cursor`); `complete`: the listing was paged to its end. */
  saved(complete = false): ListingSaved {
    const { window, order } = this.run;
    return {
      listed: this.listed,
      density: { ...this.density },
      widths: { ...this.widths },
      ...(this.reached === undefined ? {} : { reached: this.reached }),
      ...(order && window.mode === 'full' ? { profile: this.profileNow(order, complete) } : {}),
    };
  }

  /** The profile to save; once the listing is complete, re-cut on one page grid (`onPageGrid`) for the next full run's plan. */
  private profileNow(listingOrder: SliceOrder, complete: boolean): ListingProfile {
    const latencyMs = this.context.pace()?.latencyMs;
    const pieces = complete ? onPageGrid(this.profile) : this.profile.map(({ from, to, records }) => ({ from, to, records }));
    return { order: listingOrder, pieces, ...(latencyMs === undefined ? {} : { latencyMs: Math.round(latencyMs) }) };
  }
}

/** The page's ordering keys when it reported one for every row it listed; otherwise none. */
export function wholeKeys(page: SyncPage): number[] | undefined {
  return page.keys?.length === page.records.length + page.deletedIds.length ? page.keys : undefined;
}
