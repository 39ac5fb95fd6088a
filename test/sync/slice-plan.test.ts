import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_SLICES,
  MIN_SLICE_RECORDS,
  PAGE_RECORDS,
  evenPieces,
  pageDensity,
  remainingRange,
  splitRemaining,
  wantedSlices,
  type ListingView,
} from '../../shared/sync/slice-plan';
import type { SliceRange } from '../../shared/sync/sync-source';

const view = (extra: Partial<ListingView>): ListingView => ({
  order: 'newest_first',
  density: 1 / 60,
  reached: undefined,
  farEnd: undefined,
  active: 1,
  wanted: 10,
  listed: 100,
  ...extra,
});

/** The ranges, in order, tile [from, to) exactly: no gap, no overlap. */
function expectTiles(ranges: SliceRange[], whole: SliceRange, order: 'newest_first' | 'oldest_first') {
  const sorted = [...ranges].sort((a, b) => (a.from ?? -Infinity) - (b.from ?? -Infinity));
  expect(sorted[0]!.from).toBe(whole.from);
  expect(sorted.at(-1)!.to).toBe(whole.to);
  for (let i = 1; i < sorted.length; i += 1) expect(sorted[i]!.from).toBe(sorted[i - 1]!.to);
  for (const range of ranges) if (range.from !== undefined && range.to !== undefined) expect(range.to).toBeGreaterThan(range.from);
  // The first range is the one next to where the slice stands: the top for newest-first listings.
  if (order === 'newest_first') expect(ranges[0]!.to).toBe(whole.to);
  else expect(ranges[0]!.from).toBe(whole.from);
}

describe('how many slices a connection keeps in flight', () => {
  it('rate × answer time (Little), a little more: 100/s at 300 ms wants 36, a fast platform one', () => {
    expect(wantedSlices({ ratePerSecond: 100, latencyMs: 300, waitMs: 0 }, 1)).toBe(36);
    expect(wantedSlices({ ratePerSecond: 25, latencyMs: 300, waitMs: 0 }, 1)).toBe(9);
    expect(wantedSlices({ ratePerSecond: 100, latencyMs: 3, waitMs: 0 }, 1)).toBe(1);
    expect(wantedSlices({ ratePerSecond: undefined, latencyMs: undefined, waitMs: 0 }, 1)).toBe(1);
  });

  it('no more once requests wait for the rate budget, and never past the cap', () => {
    expect(wantedSlices({ ratePerSecond: 100, latencyMs: 300, waitMs: 200 }, 12)).toBe(12);
    expect(wantedSlices({ ratePerSecond: 3_000, latencyMs: 600, waitMs: 0 }, 1)).toBe(MAX_SLICES);
    expect(wantedSlices({ ratePerSecond: 100, latencyMs: 300, waitMs: 0 }, 1, 1)).toBe(1);
  });
});

describe('splitting what a slice still has to list', () => {
  it('keeps the second the page ended in: the cursor may not have finished it', () => {
    expect(remainingRange({ from: 100, to: 900 }, 'newest_first', 500)).toEqual({ from: 100, to: 501 });
    expect(remainingRange({}, 'newest_first', 500)).toEqual({ to: 501 });
    expect(remainingRange({ from: 100, to: 900 }, 'oldest_first', 500)).toEqual({ from: 500, to: 900 });
    expect(remainingRange({}, 'oldest_first', 500)).toEqual({ from: 500 });
  });

  it('does not split when no more slices are wanted, or the pages so far say nothing of density', () => {
    expect(splitRemaining({ from: 0, to: 600_000 }, view({ active: 10, wanted: 10 }))).toBeUndefined();
    expect(splitRemaining({ from: 0, to: 600_000 }, view({ density: undefined }))).toBeUndefined();
  });

  it('a known stretch (reached by pages) in even pieces of whole pages, none below the minimum', () => {
    // 10,000 records at one a minute, all reached: 5 pieces wanted.
    const ranges = splitRemaining({ from: 0, to: 600_000 }, view({ reached: 0, active: 1, wanted: 5 }))!;
    expect(ranges).toHaveLength(5);
    expectTiles(ranges, { from: 0, to: 600_000 }, 'newest_first');
    for (const range of ranges.slice(0, -1)) expect(((range.to! - range.from!) / 60) % PAGE_RECORDS).toBe(0);
    // Too little left for two pieces of the minimum: go on as one.
    expect(splitRemaining({ from: 0, to: 60 * (2 * MIN_SLICE_RECORDS - 1) }, view({ reached: 0, wanted: 30 }))).toBeUndefined();
  });

  it('past what pages reached (the far end unknown), pieces double and the last stays open', () => {
    const ranges = splitRemaining({ to: 6_000_000 }, view({ reached: 6_000_000, wanted: 8, listed: 100 }))!;
    expectTiles(ranges, { to: 6_000_000 }, 'newest_first');
    expect(ranges.at(-1)).toEqual({ to: ranges.at(-2)!.from });
    const sizes = ranges.slice(0, -1).map((range) => Math.round((range.to! - range.from!) / 60));
    // Reaching as far as the 7 wanted pieces of the minimum would (7 x MIN_SLICE_RECORDS records); the rest is open.
    expect(sizes).toEqual([1, 1, 2, 4].map((times) => times * MIN_SLICE_RECORDS));
    // At most as many as wanted more, plus the open end.
    expect(ranges.length).toBeLessThanOrEqual(8);
  });

  it('an oldest-first listing splits up to the run start, the last piece left open for records created meanwhile', () => {
    const ranges = splitRemaining({ from: 1_000_000_000 }, view({ order: 'oldest_first', farEnd: 1_000_600_000, wanted: 4 }))!;
    expect(ranges).toHaveLength(4);
    expect(ranges[0]!.from).toBe(1_000_000_000);
    expect(ranges.at(-1)!.to).toBeUndefined();
    for (let i = 1; i < ranges.length; i += 1) expect(ranges[i]!.from).toBe(ranges[i - 1]!.to);
  });

  it('pieces always tile the remaining range exactly (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000_000_000, max: 1_700_000_000 }),
        fc.integer({ min: 1, max: 50_000_000 }),
        fc.double({ min: 0.0001, max: 50, noNaN: true }),
        fc.integer({ min: 2, max: MAX_SLICES }),
        fc.boolean(),
        fc.boolean(),
        (from, width, density, wanted, open, newest) => {
          const order = newest ? 'newest_first' : 'oldest_first';
          const whole: SliceRange = newest ? { ...(open ? {} : { from }), to: from + width } : { from, ...(open ? {} : { to: from + width }) };
          const ranges = splitRemaining(whole, view({ order, density, wanted, reached: newest ? from : undefined, farEnd: newest ? undefined : from + width }));
          if (!ranges) return;
          expect(ranges.length).toBeGreaterThanOrEqual(2);
          expect(ranges.length).toBeLessThanOrEqual(wanted);
          expectTiles(ranges, whole, order);
        },
      ),
    );
  });

  it('evenPieces and pageDensity', () => {
    // Records one a minute: room for two pieces of the minimum, and one record short of it.
    expect(evenPieces(60 * 2 * MIN_SLICE_RECORDS, 1 / 60, 10)).toEqual([60 * MIN_SLICE_RECORDS, 60 * MIN_SLICE_RECORDS]);
    expect(evenPieces(60 * (2 * MIN_SLICE_RECORDS - 1), 1 / 60, 10)).toBeUndefined();
    expect(pageDensity(100, { first: 6_000, last: 60 })).toBeCloseTo(100 / 5_940);
    expect(pageDensity(100, { first: 5, last: 5 })).toBe(100);
    expect(pageDensity(1, { first: 5, last: 5 })).toBeUndefined();
  });
});
