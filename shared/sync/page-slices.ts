import type { SyncCounts } from '../store/items';
import { CheckpointSaves, SeenPages } from './checkpoint-saves';
import { ListingSoFar } from './listing-so-far';
import { PageWrites } from './page-writes';
import { PagingRun, type PagingContext, type Slice } from './paging-run';
import { SliceWorker } from './slice-worker';
import type { RunCursor } from './sync-decisions';

export { CHECKPOINT_EVERY_MS } from './checkpoint-saves';
export type { PagingContext } from './paging-run';
export { WRITES_PER_SLICE } from './slice-worker';
export { STORE_WRITES_PER_SECOND, writeUnits, WritesPerSecond } from './write-pace';

/**
 * The paging part of a sync run: one data object's listing, as slices paged side by side
 * (shared/sync/slice-plan.ts decides the slices), each page compared with what is stored and written,
 * and the run's place saved as it goes. I/O only; every decision is in the pure modules.
 *
 * - Each slice fetches its next page while it writes the ones before (up to WRITES_PER_SLICE at
 *   once): shared/sync/slice-worker.ts.
 * - A page is written before the slice's cursor moves past it, and the saved cursor only ever names
 *   written pages: a run stopped anywhere resumes every slice where its last written page ended.
 * - Saves are coalesced (one in flight, at most one every `CHECKPOINT_EVERY_MS`), the pages' seen ids
 *   stored before each: shared/sync/checkpoint-saves.ts.
 * - Pages are compared with what is stored and written (BatchWriteItems or conditional puts) at the
 *   store's write pace: shared/sync/page-writes.ts, shared/sync/write-pace.ts.
 * - What the slices know together about the listing (density, reach, profile) for their split
 *   decisions and the next run's plan: shared/sync/listing-so-far.ts. The state they share (window,
 *   slices, pages, failure, hold): shared/sync/paging-run.ts.
 * - Memory: at most four pages per slice (one fetched ahead, up to WRITES_PER_SLICE being written)
 *   and the ids of the pages being written.
 */

export type PagingOutcome = { complete: boolean; point: RunCursor; pages: number };

/** A failure while paging, with the place the run had reached (every page before it written). */
export class PagingStopped extends Error {
  override readonly name = 'PagingStopped';
  constructor(
    readonly error: unknown,
    readonly point: RunCursor,
    readonly pages: number,
  ) {
    super('sync paging stopped', { cause: error });
  }
}

/**
 * Pages the listing from `start` until it is complete, the invocation's budget ends (`mayFetch`) or
 * a slice fails (`PagingStopped`), counting into `counts`. Returns once no slice runs and no save or
 * write of the run is in flight.
 */
export async function pageSlices(context: PagingContext, start: RunCursor, counts: SyncCounts): Promise<PagingOutcome> {
  const run = new PagingRun(context, start);
  const seen = new SeenPages(context);
  const writes = new PageWrites(context, run, seen, counts);
  const listing = new ListingSoFar(context, run, start, () => writes.storePagesPerSecond());
  const saves = new CheckpointSaves(context, run, seen, () => run.cursor(listing.saved()), counts);

  const workers = new Set<Promise<void>>();
  const spawn = (slice: Slice) => {
    const running = new SliceWorker({ context, run, listing, writes, saves, spawn }, slice).work();
    workers.add(running);
    void running.finally(() => workers.delete(running));
  };
  for (const slice of run.slices.values()) spawn(slice);
  while (workers.size > 0) await Promise.all([...workers]);
  await saves.stop(run.slices.size === 0);
  // The last pages' ids: a complete run's sweep reads them next (a stopped run's next save would
  // store them too; storing them now costs nothing more).
  if (!run.failure) {
    try {
      await seen.save();
    } catch (error) {
      run.failure = { error };
    }
  }

  if (run.failure) throw new PagingStopped(run.failure.error, run.cursor(listing.saved()), run.pagesThisInvocation);
  const complete = run.slices.size === 0;
  return { complete, point: run.cursor(listing.saved(complete)), pages: run.pagesThisInvocation };
}
