import type { ConnectorName } from '../connectors';
import type { Store, StoredVersion } from '../store/store';
import type { ListingProfile, RunCursor } from './sync-decisions';

/**
 * The deletion sweep of a full sync: records still stored but no longer listed were deleted on
 * the platform (or left the settings' filter). Two ways to find them, the same answer:
 *
 * - In memory, while the pages are fetched (`SweepInMemory`): a full run starting afresh reads the
 *   ids stored before it side by side with its listing and notes every id its pages keep, so the
 *   sweep after the last page costs only the deletions. Without it a reconcile of 10,000 records
 *   per object waited ~0.4 s on the store after its last page (ten Query pages, then the seen
 *   pages), a sixth of the run at the platform's full rate.
 * - From the store (`sweepFromStore`): for a run that spanned several invocations, or an object
 *   too big for memory, the stored ids a chunk at a time against the run's seen pages.
 */

export interface SweepPlace {
  accountId: string;
  connector: ConnectorName;
  object: string;
}

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

/** Stored ids read per Query: DynamoDB reads up to 1 MB a page, about 700 records' items. */
const IDS_PER_QUERY = 1000;

/**
 * The deletion sweep in memory of a full run starting afresh, up to `limit` ids in all: the
 * versions stored before it (read side by side with its listing, tombstones included), what it
 * stored itself, and the ids its pages keep; `missing()` names the stored ids the run did not see
 * (not a tombstone, nor a record the run deleted itself). Past the limit, or if the stored
 * versions could not be read, it answers undefined and the run sweeps from the store.
 *
 * (Comparing each page with these versions instead of one BatchGetItem was tried: the faulty
 * benchmark then wrote some records twice in one run out of three; not kept.)
 */
export class SweepInMemory {
  private readonly stored = new Map<string, StoredVersion>();
  /** What this run wrote or deleted: newer than the listing, whenever the listing read those items. */
  private readonly own = new Map<string, StoredVersion>();
  private readonly seen = new Set<string>();
  private overflowed = false;
  private readonly listing: Promise<boolean>;

  constructor(
    store: Pick<Store, 'listStoredVersions'>,
    place: SweepPlace,
    private readonly limit: number,
  ) {
    this.listing = this.listStored(store, place).then(
      () => true,
      () => false,
    );
  }

  /** Ids a page of the run listed and keeps. */
  noteSeen(ids: readonly string[]): void {
    if (this.overflowed) return;
    for (const id of ids) this.seen.add(id);
    this.checkLimit();
  }

  /** What the run itself stored (a write, or a deletion). */
  noteStored(id: string, version: StoredVersion): void {
    if (this.overflowed) return;
    this.own.set(id, version);
    this.checkLimit();
  }

  /** Stored ids the run did not see (candidates: a record written since the run started is spared by the caller). */
  async missing(): Promise<string[] | undefined> {
    const listed = await this.listing;
    if (!listed || this.overflowed) return undefined;
    const missing: string[] = [];
    for (const [id, version] of this.stored) {
      if (!version.deleted && !this.seen.has(id) && !this.own.get(id)?.deleted) missing.push(id);
    }
    return missing;
  }

  private async listStored(store: Pick<Store, 'listStoredVersions'>, place: SweepPlace): Promise<void> {
    let startKey: string | undefined;
    do {
      const page = await store.listStoredVersions(place.accountId, place.connector, place.object, { limit: IDS_PER_QUERY, ...(startKey ? { startKey } : {}) });
      if (this.overflowed) return;
      for (const [id, version] of page.versions) this.stored.set(id, version);
      this.checkLimit();
      startKey = page.nextStartKey;
    } while (startKey && !this.overflowed);
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
  store: Pick<Store, 'listRecordIds' | 'seenAmong'>,
  place: SweepPlace,
  seenScope: SweepPlace & { run: string },
  chunkIds: number,
  markDeleted: (id: string) => Promise<boolean>,
): Promise<number> {
  let deleted = 0;
  let startKey: string | undefined;
  do {
    const chunk: string[] = [];
    do {
      const limit = Math.min(IDS_PER_QUERY, chunkIds - chunk.length);
      const page = await store.listRecordIds(place.accountId, place.connector, place.object, { limit, ...(startKey ? { startKey } : {}) });
      chunk.push(...page.ids);
      startKey = page.nextStartKey;
    } while (startKey && chunk.length < chunkIds);
    const seen = await store.seenAmong(seenScope, new Set(chunk));
    for (const id of chunk) if (!seen.has(id) && (await markDeleted(id))) deleted += 1;
  } while (startKey);
  return deleted;
}
