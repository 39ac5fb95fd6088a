import type { CheckpointSaves } from './checkpoint-saves';
import { wholeKeys, type ListingSoFar } from './listing-so-far';
import type { PageWrites } from './page-writes';
import type { Fetched, PagingContext, PagingRun, Slice } from './paging-run';
import { pageDensity, remainingRange, splitRemaining } from './slice-plan';
import { seenPageNumber, type RunCursor } from './sync-decisions';
import { FullSyncNeeded, type SliceRange, type SyncPage } from './sync-source';

/**
 * One slice's worker in a paging run (shared/sync/page-slices.ts): pages the slice until it ends,
 * the run stops, or it is split (the worker then carries on with the first piece, and the run starts
 * a worker for each other one). Up to WRITES_PER_SLICE of its pages are written at once (the store
 * keeps up better with several writes in flight); its cursor moves past each page only once it and
 * every page before it are written.
 */

/** Pages of one slice written at once: the store answers faster with a few writes in flight. */
export const WRITES_PER_SLICE = 3;

/** The parts of a run a slice's worker uses, and how it starts a worker for a piece it split off. */
export interface SliceWorkerParts {
  context: PagingContext;
  run: PagingRun;
  listing: ListingSoFar;
  writes: PageWrites;
  saves: CheckpointSaves;
  spawn: (slice: Slice) => void;
}

export class SliceWorker {
  private slice: Slice;
  /** The slice's next page, fetched while the pages before it are written. */
  private ahead: Promise<Fetched> | undefined;
  /** The cursor after the last page fetched (the slice's own cursor lags until its writes land). */
  private nextCursor: RunCursor['page'];
  /** Its pages being written, oldest first. */
  private readonly inWrite: Array<{ page: Fetched; done: Promise<void> }> = [];
  /** How long this slice last waited for the store to take its pages (its writes in flight were as many as it may have). */
  private storeWaitMs = 0;

  constructor(
    private readonly parts: SliceWorkerParts,
    first: Slice,
  ) {
    this.slice = first;
    this.nextCursor = first.page;
  }

  /** Pages the slice (and the first piece of each split) to its end; a failure is left on the run. */
  async work(): Promise<void> {
    const { context, run, listing } = this.parts;
    run.active += 1;
    try {
      for (;;) {
        await run.hold;
        if (run.failure) return;
        if (!this.ahead) {
          if (!context.mayFetch(run.pagesFetched)) {
            while (this.inWrite.length > 0) await this.commitOldest();
            return;
          }
          this.ahead = run.fetchPage(this.slice, this.nextCursor);
        }
        let page: Fetched;
        const awaitedFrom = performance.now();
        try {
          page = await this.ahead;
        } catch (error) {
          if (!(error instanceof FullSyncNeeded) || run.window.mode !== 'incremental') throw error;
          await this.startOverFull();
          continue;
        }
        this.ahead = undefined;
        if (run.failure) return;
        listing.learn(page, this.slice.relists);
        this.slice.relists = undefined;
        this.nextCursor = page.next;
        if (await this.pageListed(page, performance.now() - awaitedFrom)) return;
      }
    } catch (error) {
      run.failure ??= { error };
    } finally {
      run.active -= 1;
      // A run never returns with its own writes still in flight: the next run (a retry) would list
      // those pages again and write them a second time.
      await Promise.allSettled(this.inWrite.map((write) => write.done));
    }
  }

  /**
   * A page listed (after `waitedMs` for it): written, the next one fetched meanwhile, and at this page
   * boundary the slice goes on, ends, or is split. True when the slice ended.
   */
  private async pageListed(page: Fetched, waitedMs: number): Promise<boolean> {
    const { context, run, listing, writes } = this.parts;
    // Slices help when they wait on the platform longer than on the store; when the store is what
    // they wait on (a fast platform, or a first sync at the store's write pace), more would only add
    // part-filled pages. Before the run's first write there is nothing to compare with, so its first
    // page decides after it is written.
    const repeated = rowsOfLastSecond(page);
    const known = writes.writesDone > 0;
    let pieces = known ? this.split(page, waitedMs, repeated) : undefined;
    this.write(page);
    // Before the run's first write the slice may yet split, which would drop a page fetched
    // ahead (a request wasted). When every slice wanted is already paging (a planned run), what
    // the first write tells (the store's pace) can only lower how many are wanted: the next page
    // is fetched now, so pages keep coming while the first write waits (in a reconcile, for the
    // stored versions' listing; the bench's four-object reconcile sent nothing for a quarter second).
    const mayNotSplit = known || listing.view().wanted <= run.active;
    if (!pieces && mayNotSplit && page.next && context.mayFetch(run.pagesFetched)) this.ahead = run.fetchPage(this.slice, page.next);

    // The slice ends, is split, or has as many pages in writing as it may: wait for the oldest.
    const settling = !page.next || pieces !== undefined || !known;
    try {
      const storeFrom = performance.now();
      const full = this.inWrite.length >= WRITES_PER_SLICE;
      while (this.inWrite.length >= WRITES_PER_SLICE || (settling && this.inWrite.length > 0)) await this.commitOldest();
      this.storeWaitMs = full ? performance.now() - storeFrom : 0;
    } catch (error) {
      if (pieces) run.active -= pieces.length - 1;
      throw error;
    }
    if (!known) pieces = this.split(page, waitedMs, repeated);

    if (!page.next) {
      run.slices.delete(this.slice.id);
      // The last slice done: finishing the run writes the checkpoint, no save needed.
      if (run.slices.size > 0) this.parts.saves.markDirty();
      return true;
    }
    if (pieces) this.carryOnAsPieces(pieces, repeated);
    return false;
  }

  /**
   * Whether to split what the slice still has to list after `page`: the pieces, or undefined to go
   * on. `repeated`: rows of the second the page ended in that it listed (`ListingView.repeated`).
   */
  private split(page: SyncPage, waitedMs: number, repeated: number): SliceRange[] | undefined {
    const { run, listing } = this.parts;
    if (!run.order || !page.next || !page.span || waitedMs < this.storeWaitMs) return undefined;
    const rows = page.records.length + page.deletedIds.length;
    const localDensity = pageDensity(rows, page.span);
    const pieces = splitRemaining(remainingRange(this.slice.range, run.order, page.span.last), { ...listing.view(), repeated, ...(localDensity === undefined ? {} : { localDensity }) });
    // Capacity taken now, so other slices do not split for it too.
    if (pieces) run.active += pieces.length - 1;
    return pieces;
  }

  /** The slice's pages are written: its remaining range is now the pieces', listed afresh; this worker takes the first. */
  private carryOnAsPieces(pieces: SliceRange[], repeated: number): void {
    const { run, saves, spawn } = this.parts;
    run.slices.delete(this.slice.id);
    const fresh = run.addSlices(pieces);
    // The first piece lists this page's last second again: its rows there are this page's last ones.
    if (repeated > 0) fresh[0]!.relists = repeated;
    saves.markDirty();
    run.active -= pieces.length - 1;
    for (const piece of fresh.slice(1)) spawn(piece);
    this.slice = fresh[0]!;
    this.nextCursor = undefined;
    this.ahead = undefined;
  }

  /** Writes `page` behind the ones in writing; another slice's failure meanwhile stops it unwritten. */
  private write(page: Fetched): void {
    const { run, writes } = this.parts;
    const number = seenPageNumber({ id: this.slice.id, pages: this.slice.pages + this.inWrite.length });
    const done = (async () => {
      await run.hold;
      // Another slice failed meanwhile: this page is not written (the run stops as it is).
      const stoppedBy = run.failure;
      if (stoppedBy) throw stoppedBy.error;
      await writes.writePage(number, page);
    })();
    // Seen when the slice commits it; a run that stops first has failed already.
    done.catch(() => undefined);
    this.inWrite.push({ page, done });
  }

  /** Once the oldest page in writing landed, the slice's cursor moves past it. */
  private async commitOldest(): Promise<void> {
    const { run, saves } = this.parts;
    const oldest = this.inWrite[0]!;
    await oldest.done;
    this.inWrite.shift();
    this.slice.pages += 1;
    run.pageIndex += 1;
    run.pagesThisInvocation += 1;
    if (oldest.page.next) {
      this.slice.page = oldest.page.next;
      saves.markDirty();
    }
  }

  /** Only incremental runs meet `FullSyncNeeded`, and they are never split: start over as a full run. */
  private async startOverFull(): Promise<void> {
    const { context, run, listing } = this.parts;
    while (this.inWrite.length > 0) await this.commitOldest();
    context.log.warn('incremental window out of the platform’s reach; syncing everything instead');
    listing.forgetProfile();
    this.slice = run.startOverFull();
    this.nextCursor = undefined;
    this.ahead = undefined;
  }
}

/** Rows of the second this page ended in that it listed: a piece split off from here lists them again. */
function rowsOfLastSecond(page: SyncPage): number {
  const keys = wholeKeys(page);
  return page.span && keys ? keys.length - keys.findLastIndex((key) => key !== page.span!.last) - 1 : 0;
}
