import type { ClientPace } from '../http/platform-client';
import type { Logger } from '../log/logger';
import type { RecordWrite, SyncCounts } from '../store/items';
import type { Store, StoredVersion } from '../store/store';
import type { ConnectorName } from '../connectors';
import type { SweepInMemory } from './deletion-sweep';
import { addToProfile, MAX_SLICES, onPageGrid, PAGE_RECORDS, pageDensity, plannedSlices, recordSpread, remainingRange, splitRemaining, wantedSlices, type ListingView, type SampledPiece } from './slice-plan';
import { planPage, seenPageNumber, slicesOf, type ListingProfile, type RunCursor } from './sync-decisions';
import { FullSyncNeeded, type NormalisedRecord, type SliceOrder, type SliceRange, type SyncPage, type SyncSource } from './sync-source';

/**
 * The paging part of a sync run: one data object's listing, as slices paged side by side
 * (shared/sync/slice-plan.ts decides the slices), each page compared with what is stored and written,
 * and the run's place saved as it goes. I/O only; every decision is in the pure modules.
 *
 * - Each slice fetches its next page while it writes the ones before (up to WRITES_PER_SLICE at once).
 * - A page is written before the slice's cursor moves past it, and the saved cursor only ever names
 *   written pages: a run stopped anywhere resumes every slice where its last written page ended.
 * - Saves are coalesced (one in flight, at most one every `CHECKPOINT_EVERY_MS`): a connection at
 *   100 requests a second would otherwise write its checkpoint 100 times a second. A kill loses at
 *   most that much progress, which the next run lists again (compared, not rewritten).
 * - Records go in BatchWriteItems when nothing else can write them meanwhile (API Direct: webhooks
 *   are not applied, and one run per data object holds its checkpoint), else as conditional puts.
 *   A page is compared with what is stored through one BatchGetItem, or, in an API Direct full run
 *   starting afresh, in memory once the run has read every stored version (one Query per 1,000).
 * - Writes of one data object share one partition key, which DynamoDB serves at about 1,000
 *   write units a second: each write request is paced to `STORE_WRITES_PER_SECOND` as it leaves
 *   (records are not spread over several partition keys: every reader would then need one query
 *   per shard).
 * - Memory: at most four pages per slice (one fetched ahead, up to WRITES_PER_SLICE being written)
 *   and the ids of the pages being written.
 */

/**
 * Write units per second into one data object's partition key: below the ~1,000 DynamoDB serves
 * per partition key value before it throttles (a unit is 1 KB of item: a record of 1.5 KB takes 2),
 * with room for writes that leave a little later than their turn. Each write request takes its
 * turn right before it leaves (the store awaits the pace), yet a busy event loop still sends some
 * a few milliseconds late: the busiest second measured is about 50 units over the pace
 * (`sync.full.max_writes_per_key_second`; 100 over when the turn was taken for a whole page before
 * its four requests).
 */
export const STORE_WRITES_PER_SECOND = 850;

/** DynamoDB's write units for a record's item: its size in KB, rounded up (keys and index included). */
export function writeUnits(record: { id: string; body: unknown }): number {
  return Math.max(1, Math.ceil((JSON.stringify(record).length + 200) / 1024));
}
/** At most one checkpoint save per this long while pages flow. */
export const CHECKPOINT_EVERY_MS = 500;
/** Pages of one slice written at once: the store answers faster with a few writes in flight. */
export const WRITES_PER_SLICE = 3;

export interface PagingContext {
  store: Store;
  place: { accountId: string; connector: ConnectorName; object: string };
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

export type PagingOutcome = { complete: boolean; point: RunCursor; pages: number };

/**
 * At most `limit` write units in any one second, counted when they are sent: a write goes once the
 * last second's writes leave room for it. A timer that fires late only sends later, never denser.
 */
export class WritesPerSecond {
  private readonly sent: Array<{ at: number; units: number }> = [];
  private total = 0;
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Resolves when `units` may be sent now (callers take turns, in order). */
  take(units: number): Promise<void> {
    const mine = this.turn.then(async () => {
      for (;;) {
        const now = this.now();
        while (this.sent.length > 0 && this.sent[0]!.at <= now - 1000) this.total -= this.sent.shift()!.units;
        if (this.total + units <= this.limit || this.sent.length === 0) {
          this.sent.push({ at: now, units });
          this.total += units;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, this.sent[0]!.at + 1000 - now)));
      }
    });
    this.turn = mine;
    return mine;
  }
}

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

interface Slice {
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

type Fetched = SyncPage & { fetchedAt: string };

export async function pageSlices(context: PagingContext, start: RunCursor, counts: SyncCounts): Promise<PagingOutcome> {
  const { store, place, source } = context;
  let window = start.window;
  let order = window.mode === 'full' ? source.slicing?.order : undefined;
  const starting = startingSlices(context, start, order);
  const slices = starting.slices;
  let nextSlice = starting.nextSlice;
  /** Where the previous complete listing ended (newest first): see `ListingView.floor`. */
  const floor = starting.floor;
  /**
   * Where this full run's listed records lay (ascending key pieces), each with one page's keys when
   * this invocation listed one there (in memory only: the checkpoint keeps the pieces alone).
   */
  let profile: SampledPiece[] = window.mode === 'full' && order && start.profile?.order === order ? start.profile.pieces : [];
  let pageIndex = start.pageIndex;
  let listed = start.listed ?? 0;
  const density = { ...(start.density ?? { records: 0, seconds: 0 }) };
  const widths = { ...(start.widths ?? { pages: 0, sum: 0, squares: 0 }) };
  let reached = start.reached;
  let pagesFetched = 0;
  /** Write units a page brings, on average (moving): none when the data did not change. */
  let unitsPerPage = 0;
  /** Pages written so far in this invocation. */
  let writesDone = 0;
  let pagesThisInvocation = 0;
  let active = 0;
  let failure: { error: unknown } | undefined;
  // A test or benchmark holding the run (a "kill"): no step starts until it lets go.
  let hold: Promise<void> = Promise.resolve();
  const writePace = new WritesPerSecond(STORE_WRITES_PER_SECOND);
  /**
   * API Direct: records a page in flight is writing or deleting, with when they land. Another page
   * listing one of them (two slices meet at a boundary second) compares it once they landed; in a
   * run without the versions in memory (resumed), one whose read was already on its way writes it
   * conditionally.
   */
  const writing = new Map<string, Promise<void>>();
  /**
   * What a page is compared with. An API Direct run (the object's only writer) first waits for the
   * writes in flight of the page's records, then compares in memory once its listing of the stored
   * versions is whole (shared/sync/deletion-sweep.ts): no read a page; for a small object it waits
   * for that. Otherwise, and before that, one BatchGetItem, with what the run wrote meanwhile over it.
   */
  const storedVersions = async (ids: readonly string[]): Promise<ReadonlyMap<string, StoredVersion>> => {
    const inMemory = context.batchWrites ? context.inMemory : undefined;
    for (;;) {
      const inFlight = ids.flatMap((id) => writing.get(id) ?? []);
      if (inFlight.length === 0) break;
      await Promise.all(inFlight);
    }
    // A small object's listing is whole within a second: waiting for it costs less than a read.
    if (inMemory && context.awaitListing) await inMemory.listed();
    const listed = inMemory?.versionsOf(ids);
    if (listed) return listed;
    const read = await store.getStoredVersions(place.accountId, place.connector, place.object, ids);
    return inMemory?.versionsOf(ids, read) ?? read;
  };

  const cursorNow = (complete = false): RunCursor => ({
    window,
    pageIndex,
    slices: [...slices.values()].map((slice) => ({
      id: slice.id,
      pages: slice.pages,
      ...(slice.range.from === undefined ? {} : { from: slice.range.from }),
      ...(slice.range.to === undefined ? {} : { to: slice.range.to }),
      ...(slice.range.firstPage === undefined ? {} : { firstPage: slice.range.firstPage }),
      ...(slice.page ? { page: slice.page } : {}),
    })),
    nextSlice,
    listed,
    density: { ...density },
    widths: { ...widths },
    ...(reached === undefined ? {} : { reached }),
    ...(order && window.mode === 'full' ? { profile: profileNow(order, complete) } : {}),
  });
  /** The profile to save; once the listing is complete, re-cut on one page grid (`onPageGrid`) for the next full run's plan. */
  const profileNow = (listingOrder: NonNullable<typeof order>, complete = false): ListingProfile => {
    const latencyMs = context.pace()?.latencyMs;
    const pieces = complete ? onPageGrid(profile) : profile.map(({ from, to, records }) => ({ from, to, records }));
    return { order: listingOrder, pieces, ...(latencyMs === undefined ? {} : { latencyMs: Math.round(latencyMs) }) };
  };

  // ---- saving the run's place: one save in flight, coalesced ----
  let saving: Promise<void> | undefined;
  let dirty = false;
  let lastSavedAt = 0;
  /** Set once every slice has stopped: a run that is complete needs no save (finishing writes the checkpoint). */
  let stopped: { complete: boolean } | undefined;
  let wake: (() => void) | undefined;
  const markDirty = () => {
    dirty = true;
    saving ??= saveLoop().finally(() => {
      saving = undefined;
    });
  };
  const saveLoop = async () => {
    while (dirty && !failure) {
      const wait = lastSavedAt + (context.checkpointEveryMs ?? CHECKPOINT_EVERY_MS) - performance.now();
      if (wait > 0 && !stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      if (failure || stopped?.complete) return;
      dirty = false;
      const saved = cursorNow();
      try {
        await saveSeen();
        await context.save(saved, { ...counts });
      } catch (error) {
        failure ??= { error };
        return;
      }
      lastSavedAt = performance.now();
      const held = context.afterSave?.(saved.pageIndex);
      if (held) {
        hold = Promise.resolve(held);
        await hold;
      }
    }
  };

  // ---- what the slices know together ----
  const view = (): ListingView => {
    const pace = context.pace();
    // Pages a second this object can take: the platform's budget, or the store's write pace when
    // pages bring writes (a first sync), whichever is lower.
    const storePages = unitsPerPage > 0 ? STORE_WRITES_PER_SECOND / unitsPerPage : Infinity;
    const rate = pace?.ratePerSecond === undefined ? undefined : Math.min(pace.ratePerSecond, storePages);
    const known = { ratePerSecond: rate, latencyMs: pace?.latencyMs, waitMs: pace?.waitMs ?? 0 };
    const spread = recordSpread(widths);
    return {
      order: order ?? 'newest_first',
      density: density.seconds > 0 ? density.records / density.seconds : undefined,
      ...(spread === undefined ? {} : { spread }),
      reached,
      farEnd: order === 'oldest_first' ? context.runStartedAt + 1 : undefined,
      ...(floor === undefined ? {} : { floor }),
      active,
      wanted: wantedSlices(known, active, context.maxSlices ?? MAX_SLICES),
      listed,
    };
  };
  const learn = (page: SyncPage, relists = 0) => {
    listed += page.records.length + page.deletedIds.length;
    if (!page.span) return;
    const rows = page.records.length + page.deletedIds.length;
    // Rows listed before (the first, of the second the page it was split at ended in): counted once.
    const keys = wholeKeys(page);
    let again = 0;
    if (keys) while (again < Math.min(relists, rows) && keys[again] === page.span.first) again += 1;
    const pageRate = pageDensity(rows, page.span);
    if (pageRate !== undefined) {
      density.records += rows;
      density.seconds += rows / pageRate;
    }
    if (rows === PAGE_RECORDS) {
      const width = Math.abs(page.span.first - page.span.last);
      widths.pages += 1;
      widths.sum += width;
      widths.squares += width * width;
    }
    if (window.mode === 'full' && order && rows > again) {
      // The page's keys, ascending: their ranks in the listing are known once it completes.
      const sample = keys ? { sample: { keys: keys.slice(again).map(Math.floor).sort((a, b) => a - b), below: 0 } } : {};
      profile = addToProfile(profile, { from: Math.floor(Math.min(page.span.first, page.span.last)), to: Math.floor(Math.max(page.span.first, page.span.last)) + 1, records: rows - again, ...sample });
    }
    const last = page.span.last;
    reached = reached === undefined ? last : order === 'oldest_first' ? Math.max(reached, last) : Math.min(reached, last);
  };

  const fetchPage = (slice: Slice, cursor: RunCursor['page']): Promise<Fetched> => {
    pagesFetched += 1;
    const fetchedAt = new Date(context.now()).toISOString();
    const fetching = source
      .fetchPage(window, cursor, order && (slice.range.from !== undefined || slice.range.to !== undefined) ? slice.range : undefined)
      .then((page) => ({ ...page, fetchedAt }));
    // A page fetched ahead may be dropped unread (the run stopped); its failure is seen only if awaited.
    fetching.catch(() => undefined);
    return fetching;
  };

  /**
   * Seen ids of pages written since the last save. A checkpoint never moves a slice past a page
   * before its ids are stored (they go first, in BatchWriteItems): a page whose ids were lost with a
   * kill is listed again. One write per save instead of one per page.
   */
  const unsavedSeen = new Map<number, string[]>();
  const saveSeen = async () => {
    if (unsavedSeen.size === 0) return;
    const pages = [...unsavedSeen].map(([page, ids]) => ({ page, ids }));
    unsavedSeen.clear();
    await store.putSeenPages(context.seenScope, pages, context.seenExpiresAt());
  };

  const writePage = async (pageNumber: number, page: Fetched) => {
    const ids = [...page.records.map((record) => record.id), ...page.deletedIds];
    // What a full run saw is kept for its deletion sweep: saved with the next checkpoint, before it.
    if (window.mode === 'full') {
      const seen = page.records.filter((record) => context.keeps(record)).map((record) => record.id);
      unsavedSeen.set(pageNumber, seen);
      context.inMemory?.noteSeen(seen);
    }
    let stored = await storedVersions(ids);
    // Another page claimed some of these records while this one compared: again, once they landed
    // (in memory, or with the run's own writes over the read). Nothing is written twice then.
    while (context.batchWrites && context.inMemory && ids.some((id) => writing.has(id))) stored = await storedVersions(ids);
    const plan = planPage(page, stored, context.keeps, page.fetchedAt);
    const batched = context.batchWrites ? plan.writes.filter((write) => !writing.has(write.id)) : [];
    const conditional = context.batchWrites ? plan.writes.filter((write) => writing.has(write.id)) : plan.writes;
    // Claimed until they land (deletions included): another page listing one of them waits for them.
    const claimed = context.batchWrites ? [...batched.map((write) => write.id), ...plan.removals.map((removal) => removal.id).filter((id) => !writing.has(id))] : [];
    let landed = () => {};
    const landing = new Promise<void>((resolve) => (landed = resolve));
    for (const id of claimed) writing.set(id, landing);
    try {
      // Each record's size measured once (it serialises the record): for the page's pace estimate and each request's turn.
      const unitsOf = new Map(plan.writes.map((write) => [write.id, writeUnits(write)]));
      const units = [...unitsOf.values()].reduce((sum, n) => sum + n, 0);
      unitsPerPage = writesDone === 0 ? units : unitsPerPage * 0.8 + units * 0.2;
      // Paced as each write request leaves (the store awaits this right before it sends). A run held
      // (killed, in tests and benchmarks) sends no more writes; a run that failed meanwhile sends
      // none either (its cursor stays before this page).
      const pace = async (records: readonly RecordWrite[]) => {
        await writePace.take(records.reduce((sum, record) => sum + (unitsOf.get(record.id) ?? writeUnits(record)), 0));
        await hold;
        const stoppedBy = failure as { error: unknown } | undefined;
        if (stoppedBy) throw stoppedBy.error;
      };
      const knownNew = new Set(conditional.filter((write) => !stored.has(write.id)).map((write) => write.id));
      const [, outcomes] = await Promise.all([
        batched.length > 0 ? store.putRecordsBatch(place.accountId, place.connector, place.object, batched, { pace }) : undefined,
        conditional.length > 0 ? store.putRecordsIfChanged(place.accountId, place.connector, place.object, conditional, { knownNew, pace }) : [],
      ]);
      // What the run stored, for the pages after this one that compare in memory.
      if (context.batchWrites) context.inMemory?.noteWritten([...batched, ...conditional.filter((_, index) => outcomes?.[index] !== 'unchanged')]);
      // Compared a moment ago: absent means created, present (a tombstone included) updated.
      for (const write of batched) counts[stored.has(write.id) ? 'updated' : 'created'] += 1;
      for (const outcome of outcomes ?? []) counts[outcome] += 1;
      counts.unchanged += plan.unchanged;
      for (const { id, sourceVersion } of plan.removals) {
        const deletedAt = new Date(context.now());
        if (await store.markRecordDeleted(place.accountId, place.connector, place.object, id, { deletedAt, ...(sourceVersion === undefined ? {} : { sourceVersion }) })) {
          counts.deleted += 1;
          const before = stored.get(id)!;
          context.inMemory?.noteDeleted(id, { ...before, ...(sourceVersion === undefined ? {} : { sourceVersion }) });
        }
      }
    } finally {
      for (const id of claimed) writing.delete(id);
      landed();
    }
  };

  /**
   * Pages one slice until it ends, the run stops, or it is split (its worker then carries on with
   * the first piece). Up to WRITES_PER_SLICE of its pages are written at once (the store keeps up
   * better with several writes in flight); its cursor moves past each page only once it and every
   * page before it are written.
   */
  const work = async (first: Slice): Promise<void> => {
    let slice = first;
    let ahead: Promise<Fetched> | undefined;
    /** The cursor after the last page fetched (the slice's own cursor lags until its writes land). */
    let nextCursor = slice.page;
    const inWrite: Array<{ page: Fetched; done: Promise<void> }> = [];
    /** How long this slice last waited for the store to take its pages (its writes in flight were as many as it may have). */
    let storeWaitMs = 0;
    const commitOldest = async () => {
      const oldest = inWrite[0]!;
      await oldest.done;
      inWrite.shift();
      slice.pages += 1;
      pageIndex += 1;
      pagesThisInvocation += 1;
      if (oldest.page.next) {
        slice.page = oldest.page.next;
        markDirty();
      }
    };
    active += 1;
    try {
      for (;;) {
        await hold;
        if (failure) return;
        if (!ahead) {
          if (!context.mayFetch(pagesFetched)) {
            while (inWrite.length > 0) await commitOldest();
            return;
          }
          ahead = fetchPage(slice, nextCursor);
        }
        let page: Fetched;
        const awaitedFrom = performance.now();
        try {
          page = await ahead;
        } catch (error) {
          if (!(error instanceof FullSyncNeeded) || window.mode !== 'incremental') throw error;
          // Only incremental runs meet this, and they are never split: start over as a full run.
          while (inWrite.length > 0) await commitOldest();
          context.log.warn('incremental window out of the platform’s reach; syncing everything instead');
          window = { mode: 'full' };
          order = source.slicing?.order;
          profile = [];
          slices.clear();
          slice = { id: nextSlice++, range: {}, pages: 0 };
          slices.set(slice.id, slice);
          nextCursor = undefined;
          ahead = undefined;
          continue;
        }
        ahead = undefined;
        if (failure) return;
        learn(page, slice.relists);
        slice.relists = undefined;
        nextCursor = page.next;
        const waitedMs = performance.now() - awaitedFrom;
        // At a page boundary: go on, or split what this slice still has to list? Slices help when
        // they wait on the platform longer than on the store; when the store is what they wait on (a
        // fast platform, or a first sync at the store's write pace), more would only add part-filled
        // pages. Before the run's first write there is nothing to compare with, so its first page
        // decides after it is written.
        /** Rows of the second this page ended in that it listed: a piece split off from here lists them again. */
        const keys = wholeKeys(page);
        const repeated = page.span && keys ? keys.length - keys.findLastIndex((key) => key !== page.span!.last) - 1 : 0;
        const decide = (): SliceRange[] | undefined => {
          if (!order || !page.next || !page.span || waitedMs < storeWaitMs) return undefined;
          const pieces = splitRemaining(remainingRange(slice.range, order, page.span.last), { ...view(), repeated });
          // Capacity taken now, so other slices do not split for it too.
          if (pieces) active += pieces.length - 1;
          return pieces;
        };
        const known = writesDone > 0;
        let pieces = known ? decide() : undefined;

        const number = seenPageNumber({ id: slice.id, pages: slice.pages + inWrite.length });
        const done = (async () => {
          await hold;
          // Another slice failed meanwhile: this page is not written (the run stops as it is).
          const stoppedBy = failure as { error: unknown } | undefined;
          if (stoppedBy) throw stoppedBy.error;
          await writePage(number, page);
          writesDone += 1;
        })();
        // Seen when the slice commits it; a run that stops first has failed already.
        done.catch(() => undefined);
        inWrite.push({ page, done });
        // Before the run's first write the slice may yet split, which would drop a page fetched
        // ahead (a request wasted). When every slice wanted is already paging (a planned run), what
        // the first write tells (the store's pace) can only lower how many are wanted: the next page
        // is fetched now, so pages keep coming while the first write waits (in a reconcile, for the
        // stored versions' listing; the bench's four-object reconcile sent nothing for a quarter second).
        const mayNotSplit = known || view().wanted <= active;
        if (!pieces && mayNotSplit && page.next && context.mayFetch(pagesFetched)) ahead = fetchPage(slice, page.next);

        // The slice ends, is split, or has as many pages in writing as it may: wait for the oldest.
        const settling = !page.next || pieces !== undefined || !known;
        try {
          const storeFrom = performance.now();
          const full = inWrite.length >= WRITES_PER_SLICE;
          while (inWrite.length >= WRITES_PER_SLICE || (settling && inWrite.length > 0)) await commitOldest();
          storeWaitMs = full ? performance.now() - storeFrom : 0;
        } catch (error) {
          if (pieces) active -= pieces.length - 1;
          throw error;
        }
        if (!known) pieces = decide();

        if (!page.next) {
          slices.delete(slice.id);
          // The last slice done: finishing the run writes the checkpoint, no save needed.
          if (slices.size > 0) markDirty();
          return;
        }
        if (pieces) {
          // The slice's pages are written: its remaining range is now the pieces', listed afresh.
          slices.delete(slice.id);
          const fresh: Slice[] = pieces.map((range) => ({ id: nextSlice++, range, pages: 0 }));
          // The first piece lists this page's last second again: its rows there are this page's last ones.
          if (repeated > 0) fresh[0]!.relists = repeated;
          for (const piece of fresh) slices.set(piece.id, piece);
          markDirty();
          active -= pieces.length - 1;
          for (const piece of fresh.slice(1)) spawn(piece);
          slice = fresh[0]!;
          nextCursor = undefined;
          ahead = undefined;
          continue;
        }
      }
    } catch (error) {
      failure ??= { error };
    } finally {
      active -= 1;
      // A run never returns with its own writes still in flight: the next run (a retry) would list
      // those pages again and write them a second time.
      await Promise.allSettled(inWrite.map((write) => write.done));
    }
  };

  const workers = new Set<Promise<void>>();
  const spawn = (slice: Slice) => {
    const running = work(slice);
    workers.add(running);
    void running.finally(() => workers.delete(running));
  };
  for (const slice of slices.values()) spawn(slice);
  while (workers.size > 0) await Promise.all([...workers]);
  stopped = { complete: slices.size === 0 };
  wake?.();
  while (saving) await saving;
  // The last pages' ids: a complete run's sweep reads them next (a stopped run's next save would
  // store them too; storing them now costs nothing more).
  if (!failure) {
    try {
      await saveSeen();
    } catch (error) {
      failure = { error };
    }
  }

  if (failure) throw new PagingStopped(failure.error, cursorNow(), pagesThisInvocation);
  return { complete: slices.size === 0, point: cursorNow(slices.size === 0), pages: pagesThisInvocation };
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

/** The page's ordering keys when it reported one for every row it listed; otherwise none. */
function wholeKeys(page: SyncPage): number[] | undefined {
  return page.keys?.length === page.records.length + page.deletedIds.length ? page.keys : undefined;
}

function rangeOf(slice: { from?: number; to?: number; firstPage?: number }): SliceRange {
  return {
    ...(slice.from === undefined ? {} : { from: slice.from }),
    ...(slice.to === undefined ? {} : { to: slice.to }),
    ...(slice.firstPage === undefined ? {} : { firstPage: slice.firstPage }),
  };
}
