import { describe, expect, it } from 'vitest';
import { LISTING_AWAITED_RECORDS, pagesAwaitListing, SweepInMemory, sweepsInMemory } from '../../shared/sync/deletion-sweep';
import type { RecordPlace, StoredVersion } from '../../shared/store/store';
import type { ListingProfile, RunCursor } from '../../shared/sync/sync-decisions';

const fresh: RunCursor = { window: { mode: 'full' }, pageIndex: 0 };
const profile = (records: number): ListingProfile => ({ order: 'newest_first', pieces: [{ from: 0, to: 100, records }] });

/** Stored versions served a page at a time, as the store's listStoredVersions does ('~' marks a tombstone); `gate` holds the first page back. */
function storedIds(ids: string[], pageSize = 3, gate: Promise<void> = Promise.resolve()) {
  return {
    async listStoredVersions(_place: RecordPlace, options: { limit?: number; startKey?: string } = {}) {
      await gate;
      const idOf = (entry: string) => entry.replace('~', '');
      const from = options.startKey === undefined ? 0 : ids.map(idOf).indexOf(options.startKey) + 1;
      const page = ids.slice(from, from + Math.min(pageSize, options.limit ?? pageSize));
      const more = from + page.length < ids.length;
      const versions = page.map((entry): [string, StoredVersion] => [idOf(entry), { hash: `h-${idOf(entry)}`, deleted: entry.startsWith('~') }]);
      return { versions, ...(more ? { nextStartKey: idOf(page.at(-1)!) } : {}) };
    },
  };
}
const place = { accountId: 'acct_1', connector: 'billing' as const, object: 'customers', shards: 1 };

describe('the deletion sweep in memory', () => {
  it('only a full run starting afresh, and only when the last listing says stored and seen ids fit', () => {
    expect(sweepsInMemory(fresh, undefined, 100)).toBe(true);
    expect(sweepsInMemory(fresh, profile(50), 100)).toBe(true);
    // 60 stored and about 60 seen: past the limit, so the stored ids would be read twice.
    expect(sweepsInMemory(fresh, profile(60), 100)).toBe(false);
    expect(sweepsInMemory({ ...fresh, pageIndex: 3 }, undefined, 100)).toBe(false);
    expect(sweepsInMemory({ ...fresh, slices: [{ id: 0, pages: 1 }] }, undefined, 100)).toBe(false);
    expect(sweepsInMemory({ window: { mode: 'incremental', since: 0 }, pageIndex: 0 }, undefined, 100)).toBe(false);
  });

  it('pages wait for the stored versions only when the last listing says the object is small', () => {
    expect(pagesAwaitListing(profile(450))).toBe(true);
    expect(pagesAwaitListing(profile(LISTING_AWAITED_RECORDS))).toBe(true);
    // Bigger: its listing takes longer than the slices can hold pages; unknown: maybe a million stored.
    expect(pagesAwaitListing(profile(LISTING_AWAITED_RECORDS + 1))).toBe(false);
    expect(pagesAwaitListing(undefined)).toBe(false);
  });

  it('stored ids not seen are missing, whatever the order listing and paging meet in', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', 'c', 'd', 'e']), place, 100);
    sweep.noteSeen(['e', 'a']);
    sweep.noteSeen(['c', 'new']);
    expect((await sweep.missing())?.sort()).toEqual(['b', 'd']);
  });

  it('a tombstone is not missing, nor a record the run deleted itself', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', '~c', 'd']), place, 100);
    sweep.noteSeen(['a']);
    sweep.noteDeleted('d', { hash: 'h-d', deleted: false });
    expect(await sweep.missing()).toEqual(['b']);
  });

  it('answers a page’s comparison from the listing only once it is whole, with the run’s own writes and deletions over it', async () => {
    let open = () => {};
    const sweep = new SweepInMemory(storedIds(['a', 'b', '~c', 'd', 'e', 'f'], 2, new Promise<void>((resolve) => (open = resolve))), place, 100);
    // Stored by the run before the listing reached them: the listing's older copies must not win.
    sweep.noteWritten([{ id: 'e', hash: 'h-new', sourceVersion: 4 }]);
    sweep.noteDeleted('f', { hash: 'h-f', sourceVersion: 2, deleted: false });
    expect(sweep.versionsOf(['a'])).toBeUndefined();
    // Before that, what the store read with the run's own writes over it.
    expect(sweep.versionsOf(['a', 'e'], new Map([['a', { hash: 'h-read', deleted: false }], ['e', { hash: 'h-e', deleted: false }]]))).toEqual(
      new Map([
        ['a', { hash: 'h-read', deleted: false }],
        ['e', { hash: 'h-new', sourceVersion: 4, deleted: false }],
      ]),
    );
    open();
    await sweep.missing();
    sweep.noteWritten([{ id: 'b', hash: 'h-b2' }]);
    expect(sweep.versionsOf(['a', 'b', 'c', 'e', 'f', 'x'])).toEqual(
      new Map([
        ['a', { hash: 'h-a', deleted: false }],
        ['b', { hash: 'h-b2', deleted: false }],
        ['c', { hash: 'h-c', deleted: true }],
        ['e', { hash: 'h-new', sourceVersion: 4, deleted: false }],
        ['f', { hash: 'h-f', sourceVersion: 2, deleted: true }],
      ]),
    );
  });

  it('past its limit it lets everything go and answers undefined: the run sweeps from the store', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', 'c', 'd', 'e']), place, 6);
    sweep.noteSeen(['a', 'b']);
    expect(await sweep.missing()).toBeUndefined();
    expect(sweep.versionsOf(['a'])).toBeUndefined();
    const read = new Map([['a', { hash: 'h-read', deleted: false }]]);
    expect(sweep.versionsOf(['a'], read)).toEqual(read);
  });

  it('a store that fails to list leaves the sweep to the store too', async () => {
    const sweep = new SweepInMemory({ listStoredVersions: () => Promise.reject(new Error('throttled')) }, place, 100);
    expect(await sweep.missing()).toBeUndefined();
  });
});
