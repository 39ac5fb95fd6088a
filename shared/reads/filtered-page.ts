import type { RecordPage } from '../store/store';
import type { SyncedRecord } from '../store/items';

/** One store page read: from `startKey` (exclusive), up to `limit` records in id order. */
export type PageReader = (startKey: string | undefined, limit: number) => Promise<RecordPage>;

export interface FilteredPage<T> {
  items: T[];
  /** Where the next call starts (a record id); absent when the object has been read to its end. */
  nextStartKey?: string;
}

/**
 * Fills one page of a filtered list ("active subscribers", "failed payments") from a data object
 * read in id order. It stops at `limit` matches, at the end, or after `maxReads` store reads, so
 * one request costs a bounded amount however rare matches are; a page may then hold fewer than
 * `limit` items and still have a next one. The next start key is the id of the last record
 * looked at, so resuming never skips or repeats a record.
 */
export async function readFilteredPage<T>(
  read: PageReader,
  keep: (record: SyncedRecord) => T | undefined,
  options: { limit: number; startKey?: string; maxReads: number; readSize: number },
): Promise<FilteredPage<T>> {
  const items: T[] = [];
  let startKey = options.startKey;
  for (let reads = 1; ; reads += 1) {
    const page = await read(startKey, options.readSize);
    for (const [index, record] of page.records.entries()) {
      const kept = keep(record);
      if (kept === undefined) continue;
      items.push(kept);
      if (items.length === options.limit) {
        const lastOfAll = index === page.records.length - 1 && page.nextStartKey === undefined;
        return lastOfAll ? { items } : { items, nextStartKey: record.id };
      }
    }
    if (page.nextStartKey === undefined) return { items };
    startKey = page.nextStartKey;
    if (reads >= options.maxReads) return { items, nextStartKey: startKey };
  }
}
