import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SyncCheckpoint } from '../../shared/store/items';
import { recordHash } from '../../shared/sync/record-hash';
import {
  FULL_RECONCILE_AFTER_SECONDS,
  SYNC_OVERLAP_SECONDS,
  latestPerId,
  modeForNewRun,
  nextWatermark,
  planPage,
  startingPoint,
  watermarkOf,
} from '../../shared/sync/sync-decisions';
import type { NormalisedRecord } from '../../shared/sync/sync-source';

const checkpoint = (extra: Partial<SyncCheckpoint>): SyncCheckpoint => ({
  accountId: 'acme',
  connector: 'payment',
  object: 'customers',
  mode: 'full',
  counts: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
  version: 1,
  ...extra,
});
const record = (id: string, fields: Record<string, string | number>, extra: Partial<NormalisedRecord> = {}): NormalisedRecord => ({ id, fields: { id, ...fields }, ...extra });
const keepAll = () => true;
const now = '2026-11-22T00:00:00.000Z';

describe('which window a run syncs', () => {
  it('is full until a full sync has finished, then incremental, and full again when a reconcile is due', () => {
    expect(modeForNewRun(undefined, 1_000)).toBe('full');
    const synced = checkpoint({ watermark: { since: 700, lastFullSyncAt: 1_000 } });
    expect(modeForNewRun(synced, 2_000)).toBe('incremental');
    expect(modeForNewRun(synced, 1_000 + FULL_RECONCILE_AFTER_SECONDS)).toBe('full');
  });

  it('an incremental run starts at the watermark; a crashed run resumes its own window, page and page count', () => {
    const fresh = startingPoint(checkpoint({ mode: 'incremental', watermark: { since: 700, lastFullSyncAt: 1_000 } }));
    expect(fresh).toEqual({ window: { mode: 'incremental', since: 700 }, pageIndex: 0 });
    const resumed = startingPoint(checkpoint({ mode: 'full', cursor: { window: { mode: 'full' }, page: { after: 'cus_9' }, pageIndex: 3 } }));
    expect(resumed).toEqual({ window: { mode: 'full' }, page: { after: 'cus_9' }, pageIndex: 3 });
  });

  it('the next window reaches back by the overlap from when this run started, so changes during the run are caught', () => {
    expect(nextWatermark(undefined, { mode: 'full' }, 10_000)).toEqual({ since: 10_000 - SYNC_OVERLAP_SECONDS, lastFullSyncAt: 10_000 });
    expect(nextWatermark({ since: 1, lastFullSyncAt: 5_000 }, { mode: 'incremental', since: 1 }, 10_000)).toEqual({
      since: 10_000 - SYNC_OVERLAP_SECONDS,
      lastFullSyncAt: 5_000,
    });
  });

  it('keeps the last complete full listing\'s profile: a full run replaces it, an incremental one carries it; an unreadable one is dropped, not the watermark', () => {
    const listing = { order: 'newest_first' as const, pieces: [{ from: 1, to: 100, records: 50 }], latencyMs: 300 };
    const fresher = { ...listing, pieces: [{ from: 1, to: 200, records: 80 }] };
    expect(nextWatermark(undefined, { mode: 'full' }, 10_000, listing).listing).toEqual(listing);
    expect(nextWatermark({ since: 1, lastFullSyncAt: 5_000, listing }, { mode: 'full' }, 10_000, fresher).listing).toEqual(fresher);
    expect(nextWatermark({ since: 1, lastFullSyncAt: 5_000, listing }, { mode: 'incremental', since: 1 }, 10_000, fresher).listing).toEqual(listing);
    expect(watermarkOf(checkpoint({ watermark: { since: 1, lastFullSyncAt: 5_000, listing: { order: 'sideways' } } }))).toEqual({ since: 1, lastFullSyncAt: 5_000 });
  });
});

describe('what a page writes', () => {
  it('writes new and changed records only; unchanged cost nothing', () => {
    const same = record('a', { name: 'Ann' });
    const changed = record('b', { name: 'Bob 2' });
    const created = record('c', { name: 'Cy' });
    const stored = new Map([
      ['a', { hash: recordHash(same.fields), deleted: false }],
      ['b', { hash: recordHash({ id: 'b', name: 'Bob' }), deleted: false }],
    ]);
    const plan = planPage({ records: [same, changed, created], deletedIds: [] }, stored, keepAll, now);
    expect(plan.writes.map((w) => w.id)).toEqual(['b', 'c']);
    expect(plan.unchanged).toBe(1);
    expect(plan.writes[0]).toMatchObject({ hash: recordHash(changed.fields), syncedAt: now, body: changed.fields });
  });

  it('never overwrites a newer version already stored (a webhook got there first)', () => {
    const older = record('a', { status: 'active' }, { sourceVersion: 100 });
    const plan = planPage({ records: [older], deletedIds: [] }, new Map([['a', { hash: 'other', sourceVersion: 200, deleted: false }]]), keepAll, now);
    expect(plan.writes).toEqual([]);
    expect(plan.unchanged).toBe(1);
  });

  it('brings back a record that was marked deleted', () => {
    const back = record('a', { name: 'Ann' });
    const plan = planPage({ records: [back], deletedIds: [] }, new Map([['a', { hash: recordHash(back.fields), deleted: true }]]), keepAll, now);
    expect(plan.writes.map((w) => w.id)).toEqual(['a']);
  });

  it('removes deleted records and records that left the filter, once, and only if stored', () => {
    const cancelled = record('s1', { status: 'cancelled' });
    const stored = new Map([
      ['s1', { hash: 'x', deleted: false }],
      ['gone', { hash: 'y', deleted: false }],
      ['already', { hash: 'z', deleted: true }],
    ]);
    const plan = planPage({ records: [cancelled], deletedIds: ['gone', 'already', 'never-stored', 'gone'] }, stored, (r) => r.fields.status === 'active', now);
    expect(plan.removals).toEqual([{ id: 's1' }, { id: 'gone' }]);
    expect(plan.writes).toEqual([]);
  });

  it('keeps the latest version of an id listed twice in a page', () => {
    const page = [record('a', { v: 1 }, { sourceVersion: 5 }), record('a', { v: 2 }, { sourceVersion: 9 }), record('a', { v: 3 }, { sourceVersion: 7 })];
    expect(latestPerId(page).map((r) => r.fields.v)).toEqual([2]);
    expect(latestPerId([record('b', { v: 1 }), record('b', { v: 2 })]).map((r) => r.fields.v)).toEqual([2]);
  });

  it('property: a page applied to what it wrote changes nothing the second time', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd'), name: fc.string(), v: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }) }), { maxLength: 12 }),
        (rows) => {
          const records = rows.map((row) => record(row.id, { name: row.name }, row.v === undefined ? {} : { sourceVersion: row.v }));
          const first = planPage({ records, deletedIds: [] }, new Map(), keepAll, now);
          const stored = new Map(first.writes.map((w) => [w.id, { hash: w.hash, deleted: false, ...(w.sourceVersion === undefined ? {} : { sourceVersion: w.sourceVersion }) }]));
          const second = planPage({ records, deletedIds: [] }, stored, keepAll, now);
          expect(second.writes).toEqual([]);
          expect(new Set(first.writes.map((w) => w.id)).size).toBe(first.writes.length);
        },
      ),
    );
  });
});
