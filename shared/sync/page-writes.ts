import type { RecordWrite, SyncCounts } from '../store/items';
import type { StoredVersion } from '../store/store';
import type { SeenPages } from './checkpoint-saves';
import type { Fetched, PagingContext, PagingRun } from './paging-run';
import { planPage } from './sync-decisions';
import { shardOf } from '../store/record-layout';
import { AtMostAtOnce, STORE_WRITES_PER_SECOND, TableShare, writeUnits, WritesPerSecond } from './write-pace';
import * as store from '../store/store';

/**
 * Writing one page of a paging run (shared/sync/page-slices.ts): compared with what is stored, only
 * what changed written, at the store's write pace, and counted.
 *
 * - Records go in BatchWriteItems when nothing else can write them meanwhile (API Direct: webhooks
 *   are not applied, and one run per data object holds its checkpoint), else as conditional puts.
 *   A page is compared with what is stored through one BatchGetItem, or, in an API Direct full run
 *   starting afresh, in memory once the run has read every stored version (one Query per 1,000).
 * - Each write request is paced to `STORE_WRITES_PER_SECOND` per shard key it writes into, as it leaves (shared/sync/write-pace.ts).
 */
/**
 * Pages of one run sending their writes at once: 8 pages are 32 requests of 25 records, which
 * DynamoDB answers in some 10–20 ms each, hundreds of pages a second, far above the 25 a payment
 * endpoint lists; locally they keep dynalite's queue short.
 */
export const PAGES_SENDING = 8;

export class PageWrites {
  /** Write units a page brings, on average (moving): none when the data did not change. */
  private unitsPerPage = 0;
  /** Pages written so far in this invocation (before the first, a slice cannot tell the store's pace yet). */
  writesDone = 0;
  private readonly writePace = new WritesPerSecond(STORE_WRITES_PER_SECOND);
  /** The run's share of the table, smaller while DynamoDB refuses its writes (a new table's own limit). */
  private readonly tableShare = new TableShare();
  /** Pages of this run whose write requests are on their way to the store (at most `PAGES_SENDING`). */
  private readonly sending = new AtMostAtOnce(PAGES_SENDING);
  /**
   * API Direct: records a page in flight is writing or deleting, with when they land. Another page
   * listing one of them (two slices meet at a boundary second) compares it once they landed; in a
   * run without the versions in memory (resumed), one whose read was already on its way writes it
   * conditionally.
   */
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly context: PagingContext,
    private readonly run: PagingRun,
    private readonly seen: SeenPages,
    private readonly counts: SyncCounts,
  ) {}

  /**
   * Pages a second the store's write pace lets through at what pages brought so far: unbounded while
   * they bring no writes. A page's records spread over the object's shards by a hash of their ids,
   * so each shard key takes about its share of them.
   */
  storePagesPerSecond(): number {
    return this.unitsPerPage > 0 ? (STORE_WRITES_PER_SECOND * this.context.place.shards) / this.unitsPerPage : Infinity;
  }

  /** Writes `page` (`pageNumber`: its number in the run's seen ids, `seenPageNumber`); resolves once it landed. */
  async writePage(pageNumber: number, page: Fetched): Promise<void> {
    const { context, run, writing, counts } = this;
    const { table, place } = context;
    const ids = [...page.records.map((record) => record.id), ...page.deletedIds];
    // What a full run saw is kept for its deletion sweep: saved with the next checkpoint, before it.
    if (run.window.mode === 'full') {
      const seen = page.records.filter((record) => context.keeps(record)).map((record) => record.id);
      this.seen.note(pageNumber, seen);
      context.inMemory?.noteSeen(seen);
    }
    let stored = await this.storedVersions(ids);
    // Another page claimed some of these records while this one compared: again, once they landed
    // (in memory, or with the run's own writes over the read). Nothing is written twice then.
    while (context.batchWrites && context.inMemory && ids.some((id) => writing.has(id))) stored = await this.storedVersions(ids);
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
      this.unitsPerPage = this.writesDone === 0 ? units : this.unitsPerPage * 0.8 + units * 0.2;
      // Paced as each write request leaves (the store awaits this right before it sends). A run held
      // (killed, in tests and benchmarks) sends no more writes; a run that failed meanwhile sends
      // none either (its cursor stays before this page).
      const pace = async (records: readonly RecordWrite[]) => {
        const byShard = unitsByShard(records, place.shards, (record) => unitsOf.get(record.id) ?? writeUnits(record));
        await this.tableShare.take([...byShard.values()].reduce((sum, n) => sum + n, 0));
        await this.writePace.take(byShard);
        await run.hold;
        const stoppedBy = run.failure;
        if (stoppedBy) throw stoppedBy.error;
      };
      // DynamoDB refused some of them for throughput: the run's share of the table shrinks.
      const onRefused = () => this.tableShare.refused();
      const knownNew = new Set(conditional.filter((write) => !stored.has(write.id)).map((write) => write.id));
      // A store slower than the slices (a busy local one) then holds their next pages, rather than
      // hundreds of requests queued in the client ahead of the run's rate reservations and checkpoints.
      const [, outcomes] = await this.sending.run(() =>
        Promise.all([
          batched.length > 0 ? store.putRecordsBatch(table, place, batched, { pace, onRefused }) : undefined,
          conditional.length > 0 ? store.putRecordsIfChanged(table, place, conditional, { knownNew, pace, onRefused }) : [],
        ]),
      );
      // What the run stored, for the pages after this one that compare in memory.
      if (context.batchWrites) context.inMemory?.noteWritten([...batched, ...conditional.filter((_, index) => outcomes?.[index] !== 'unchanged')]);
      // Compared a moment ago: absent means created, present (a tombstone included) updated.
      for (const write of batched) counts[stored.has(write.id) ? 'updated' : 'created'] += 1;
      for (const outcome of outcomes ?? []) counts[outcome] += 1;
      counts.unchanged += plan.unchanged;
      for (const { id, sourceVersion } of plan.removals) {
        const deletedAt = new Date(context.now());
        if (await store.markRecordDeleted(table, place, id, { deletedAt, ...(sourceVersion === undefined ? {} : { sourceVersion }) })) {
          counts.deleted += 1;
          const before = stored.get(id)!;
          context.inMemory?.noteDeleted(id, { ...before, ...(sourceVersion === undefined ? {} : { sourceVersion }) });
        }
      }
    } finally {
      for (const id of claimed) writing.delete(id);
      landed();
    }
    this.writesDone += 1;
  }

  /**
   * What a page is compared with. An API Direct run (the object's only writer) first waits for the
   * writes in flight of the page's records, then compares in memory once its listing of the stored
   * versions is whole (shared/sync/deletion-sweep.ts): no read a page; for a small object it waits
   * for that. Otherwise, and before that, one BatchGetItem, with what the run wrote meanwhile over it.
   */
  private async storedVersions(ids: readonly string[]): Promise<ReadonlyMap<string, StoredVersion>> {
    const { context, writing } = this;
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
    const read = await store.getStoredVersions(context.table, context.place, ids);
    return inMemory?.versionsOf(ids, read) ?? read;
  }
}

/** A write request's units by the shard key each record goes to (shared/store/record-layout.ts). */
export function unitsByShard(records: readonly RecordWrite[], shards: number, unitsOf: (record: RecordWrite) => number): Map<number, number> {
  const units = new Map<number, number>();
  for (const record of records) {
    const shard = shardOf(record.id, shards);
    units.set(shard, (units.get(shard) ?? 0) + unitsOf(record));
  }
  return units;
}
