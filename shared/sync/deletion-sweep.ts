import type { ConnectorName } from '../connectors';
import type { RecordPlace, Table, StoredVersion } from '../store/store';
import * as store from '../store/store';
import type { ListingProfile, RunCursor } from './sync-decisions';

/**
 * The deletion sweep of a full sync: records still stored but no longer listed were deleted on
 * the platform (or left the settings' filter). Two ways to find them, the same answer:
 *
 * - In memory, while the pages are fetched (`SweepInMemory`): a full run starting afresh reads the
 *   versions stored before it side by side with its listing (an API Direct run compares its pages
 *   with them too) and notes every id its pages keep, so the
 *   sweep after the last page costs only the deletions. Without it a reconcile of 10,000 records
 *   per object waited ~0.4 s on the store after its last page (ten Query pages, then the seen
 *   pages), a sixth of the run at the platform's full rate.
 * - From the store (`sweepFromStore`): for a run that spanned several invocations, or an object
 *   too big for memory, the stored ids a chunk at a time against the run's seen pages.
 */

/** The data object swept, in its connection's record layout. */
export type SweepPlace = RecordPlace;

/**
 * Pure: whether a run sweeps in memory. Only a full run starting afresh (a resumed one saw its
 * earlier pages in another invocation), and only when the previous complete listing says the
 * object's stored and seen ids fit in `limit`: a bigger one would read its stored ids twice, once
 * until memory overflows and again from the store.
 */
export function sweepsInMemory(point: RunCursor, previousListing: ListingProfile | undefined, limit: number): boolean {
  const fresh = point.window.mode === 'full' && point.pageIndex === 0 && point.slices === undefined && !point.page;
  const expected = previousListing?.pieces.reduce((sum, piece) => sum + piece.records, 0) ?? 0;
  return fresh && 2 * expected <= limit;
}

/**
 * Most records the previous complete listing held for a page to wait for the stored versions
 * rather than read the store: about 20 Queries, a second at most (0.35 s for 10,000 on dynalite
 * alone), while a run's slices hold up to 192 pages (48 x 4, 19,200 records) fetched meanwhile.
 * Reading the store instead cost one BatchGetItem a page that the listing then queued behind: on
 * the local store, a 300 ms payment reconcile of 2 x 10,000 records compared 12 to 195 of its 209
 * pages through the store and took 2.3 to 3.1 s, against 2.35 to 2.48 s, none through the store,
 * waiting (`bench/sync-profile.ts latency`).
 */
export const LISTING_AWAITED_RECORDS = 20_000;

/**
 * Pure: whether a page of a run that holds the stored versions in memory waits for that listing to
 * be whole rather than read the store. Only when the previous complete listing says it is small;
 * unknown (a first sync: an empty object's listing is one Query, whole before the first page),
 * or bigger, pages read the store until the listing is whole.
 */
export function pagesAwaitListing(previousListing: ListingProfile | undefined): boolean {
  const expected = previousListing?.pieces.reduce((sum, piece) => sum + piece.records, 0);
  return expected !== undefined && expected <= LISTING_AWAITED_RECORDS;
}

/** Stored ids read per Query: DynamoDB reads up to 1 MB a page, about 700 records' items. */
const IDS_PER_QUERY = 1000;

/** Where the in-memory sweep reads the stored versions: the table's (`store.listStoredVersions`), or a test's own. */
export interface StoredVersionListing {
  listStoredVersions(place: SweepPlace, options: { limit: number; shard: number; startKey?: string }): ReturnType<typeof store.listStoredVersions>;
}

/** The listing of the table's stored versions. */
export function storedVersionsIn(table: Table): StoredVersionListing {
  return { listStoredVersions: (place, options) => store.listStoredVersions(table, place, options) };
}

/**
 * What a full run starting afresh holds of its data object in memory, up to `limit` entries in all:
 * the versions stored before it (hash, source version, tombstone: read side by side with its
 * listing), what it wrote and deleted itself since, and the ids its pages keep. Two uses:
 *
 * - the deletion sweep: `missing()` names the stored records the run neither saw nor deleted
 *   itself (a record deleted from a page must not be marked and counted a second time);
 * - each page's comparison (`versionsOf`): once every stored version is read, the listing with the
 *   run's own writes over it answers what a BatchGetItem a page would. Only for a run that is its
 *   object's only writer (API Direct: shared/sync/page-writes.ts asks only then); under webhooks a
 *   record may change after the listing read it.
 *
 * Past the limit, or if the stored versions could not be read, both answer undefined: the run
 * compares through the store and sweeps from the store.
 */
export class SweepInMemory {
  /** The listing (tombstones included); once it is whole, the run's own writes go straight in. */
  private readonly stored = new Map<string, StoredVersion>();
  /** What the run stored while the listing was still being read: newer than whatever it read of those items. */
  private readonly own = new Map<string, StoredVersion>();
  private readonly seen = new Set<string>();
  private overflowed = false;
  private listedWhole = false;
  private readonly listing: Promise<boolean>;

  constructor(
    listing: StoredVersionListing,
    place: SweepPlace,
    private readonly limit: number,
  ) {
    this.listing = this.listStored(listing, place).then(
      () => {
        if (this.overflowed) return false;
        for (const [id, version] of this.own) this.stored.set(id, version);
        this.own.clear();
        this.listedWhole = true;
        return true;
      },
      () => false,
    );
  }

  /** Ids a page of the run listed and keeps. */
  noteSeen(ids: readonly string[]): void {
    if (this.overflowed) return;
    for (const id of ids) this.seen.add(id);
    this.checkLimit();
  }

  /** Records the run wrote (they landed). */
  noteWritten(writes: ReadonlyArray<{ id: string; hash: string; sourceVersion?: number }>): void {
    for (const write of writes) this.noteOwn(write.id, { hash: write.hash, ...(write.sourceVersion === undefined ? {} : { sourceVersion: write.sourceVersion }), deleted: false });
  }

  /** A record the run marked deleted itself, as it is stored now (a tombstone). */
  noteDeleted(id: string, version: StoredVersion): void {
    this.noteOwn(id, { ...version, deleted: true });
  }

  /**
   * What these ids are compared with (absent: not stored). Once the listing is whole: the listing
   * with the run's own writes over it. Before that: `read` (the store's answer for them) with the
   * run's own writes over it (a write that landed while the read was on its way), or undefined
   * without one.
   */
  versionsOf(ids: readonly string[], read?: ReadonlyMap<string, StoredVersion>): Map<string, StoredVersion> | undefined {
    const found = new Map<string, StoredVersion>();
    if (this.listedWhole && !this.overflowed) {
      for (const id of ids) {
        const version = this.stored.get(id);
        if (version) found.set(id, version);
      }
      return found;
    }
    if (!read) return undefined;
    for (const id of ids) {
      const version = this.own.get(id) ?? read.get(id);
      if (version) found.set(id, version);
    }
    return found;
  }

  /** Resolves once the listing is whole (true), or given up (false: it failed, or memory overflowed). */
  listed(): Promise<boolean> {
    return this.listing;
  }

  /** Stored records the run did not see (candidates: a record written since the run started is spared by the caller). */
  async missing(): Promise<string[] | undefined> {
    const listed = await this.listing;
    if (!listed || this.overflowed) return undefined;
    const missing: string[] = [];
    // The run's own deletions are tombstones here by now: they are not missing.
    for (const [id, version] of this.stored) if (!version.deleted && !this.seen.has(id)) missing.push(id);
    return missing;
  }

  private noteOwn(id: string, version: StoredVersion): void {
    if (this.overflowed) return;
    // The listing may read this item before or after the run stored it: the run's version wins.
    (this.listedWhole ? this.stored : this.own).set(id, version);
    this.checkLimit();
  }

  /**
   * Every shard key paged on its own, side by side: the map needs no order, so nothing is merged,
   * and a 10,000-record object is two Queries deep rather than ten (pages of a small object wait
   * for this listing: `pagesAwaitListing`).
   */
  private async listStored(listing: StoredVersionListing, place: SweepPlace): Promise<void> {
    await Promise.all(
      Array.from({ length: place.shards }, async (_, shard) => {
        let startKey: string | undefined;
        do {
          const page = await listing.listStoredVersions(place, { limit: IDS_PER_QUERY, shard, ...(startKey ? { startKey } : {}) });
          if (this.overflowed) return;
          for (const [id, version] of page.versions) this.stored.set(id, version);
          this.checkLimit();
          startKey = page.nextStartKey;
        } while (startKey && !this.overflowed);
      }),
    );
  }

  private checkLimit(): void {
    if (this.stored.size + this.own.size + this.seen.size <= this.limit) return;
    // Too big to hold: let everything go (bounded memory); the store does the work instead.
    this.overflowed = true;
    this.stored.clear();
    this.own.clear();
    this.seen.clear();
  }
}

/**
 * The sweep from the store: stored ids a chunk at a time, checked against the run's seen pages,
 * so memory stays bounded however many records the object has.
 */
export async function sweepFromStore(
  table: Table,
  place: SweepPlace,
  seenScope: { accountId: string; connector: ConnectorName; object: string; run: string },
  chunkIds: number,
  markDeleted: (id: string) => Promise<boolean>,
): Promise<number> {
  let deleted = 0;
  let startKey: string | undefined;
  do {
    const chunk: string[] = [];
    do {
      const limit = Math.min(IDS_PER_QUERY, chunkIds - chunk.length);
      const page = await store.listRecordIds(table, place, { limit, ...(startKey ? { startKey } : {}) });
      chunk.push(...page.ids);
      startKey = page.nextStartKey;
    } while (startKey && chunk.length < chunkIds);
    const seen = await store.seenAmong(table, seenScope, new Set(chunk));
    for (const id of chunk) if (!seen.has(id) && (await markDeleted(id))) deleted += 1;
  } while (startKey);
  return deleted;
}
