import { describe, expect, it } from 'vitest';
import { SweepInMemory, sweepsInMemory } from '../../shared/sync/deletion-sweep';
import type { ListingProfile, RunCursor } from '../../shared/sync/sync-decisions';

const fresh: RunCursor = { window: { mode: 'full' }, pageIndex: 0 };
const profile = (records: number): ListingProfile => ({ order: 'newest_first', pieces: [{ from: 0, to: 100, records }] });

/** Stored ids served a page at a time, as the store's listRecordIds does. */
function storedIds(ids: string[], pageSize = 3) {
  return {
    async listRecordIds(_accountId: string, _connector: string, _object: string, options: { limit?: number; startKey?: string } = {}) {
      const from = options.startKey === undefined ? 0 : ids.indexOf(options.startKey) + 1;
      const page = ids.slice(from, from + Math.min(pageSize, options.limit ?? pageSize));
      const more = from + page.length < ids.length;
      return { ids: page, ...(more ? { nextStartKey: page.at(-1)! } : {}) };
    },
  };
}
const place = { accountId: 'acct_1', connector: 'billing' as const, object: 'customers' };

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

  it('stored ids not seen are missing, whatever the order listing and paging meet in', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', 'c', 'd', 'e']), place, 100);
    sweep.noteSeen(['e', 'a']);
    sweep.noteSeen(['c', 'new']);
    expect((await sweep.missing())?.sort()).toEqual(['b', 'd']);
  });

  it('a record the run deleted itself is not missing', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', 'd']), place, 100);
    sweep.noteSeen(['a']);
    sweep.noteDeleted('d');
    expect(await sweep.missing()).toEqual(['b']);
  });

  it('past its limit it lets everything go and answers undefined: the run sweeps from the store', async () => {
    const sweep = new SweepInMemory(storedIds(['a', 'b', 'c', 'd', 'e']), place, 6);
    sweep.noteSeen(['a', 'b']);
    expect(await sweep.missing()).toBeUndefined();
  });

  it('a store that fails to list leaves the sweep to the store too', async () => {
    const sweep = new SweepInMemory({ listRecordIds: () => Promise.reject(new Error('throttled')) }, place, 100);
    expect(await sweep.missing()).toBeUndefined();
  });
});
