import type { ConnectorName } from '../connectors';
import type { Store } from '../store/store';
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
 * The deletion sweep in memory of a full run starting afresh, up to `limit` ids in all: the ids
 * stored before it (read side by side with its listing), the ids its pages keep, and the ids it
 * deleted itself (a record that left the filter, or a deleted row: the listing may have read it
 * before, and it must not be marked and counted a second time). Past the limit, or if the stored
 * ids could not be read, `missing()` answers undefined and the run sweeps from the store.
 */
export class SweepInMemory {
  private readonly stored = new Set<string>();
  private readonly seen = new Set<string>();
  private readonly deleted = new Set<string>();
  private overflowed = false;
  private readonly listing: Promise<boolean>;

  constructor(
    store: Pick<Store, 'listRecordIds'>,
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

  /** A record the run marked deleted itself. */
  noteDeleted(id: string): void {
    if (this.overflowed) return;
    this.deleted.add(id);
    this.checkLimit();
  }

  /** Stored ids the run did not see (candidates: a record written since the run started is spared by the caller). */
  async missing(): Promise<string[] | undefined> {
    const listed = await this.listing;
    if (!listed || this.overflowed) return undefined;
    return [...this.stored].filter((id) => !this.seen.has(id) && !this.deleted.has(id));
  }

  private async listStored(store: Pick<Store, 'listRecordIds'>, place: SweepPlace): Promise<void> {
    let startKey: string | undefined;
    do {
      const page = await store.listRecordIds(place.accountId, place.connector, place.object, { limit: IDS_PER_QUERY, ...(startKey ? { startKey } : {}) });
      if (this.overflowed) return;
      for (const id of page.ids) this.stored.add(id);
      this.checkLimit();
      startKey = page.nextStartKey;
    } while (startKey && !this.overflowed);
  }

  private checkLimit(): void {
    if (this.stored.size + this.seen.size + this.deleted.size <= this.limit) return;
    // Too big to hold: let everything go (bounded memory); the store's sweep does the work instead.
    this.overflowed = true;
    this.stored.clear();
    this.seen.clear();
    this.deleted.clear();
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
