import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_SLICES,
  MIN_SLICE_RECORDS,
  PAGE_RECORDS,
  PLAN_MARGIN_RECORDS,
  PROFILE_PIECES,
  addToProfile,
  evenPieces,
  pageDensity,
  plannedSlices,
  remainingRange,
  splitRemaining,
  wantedSlices,
  type ListingView,
} from '../../shared/sync/slice-plan';
import type { ListingProfile } from '../../shared/sync/sync-decisions';
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

  it('probes no deeper than where the previous complete listing ended (nothing is created in the past): one open piece below it', () => {
    // The same split, with the previous listing's bottom 900 records below the page.
    const floor = 6_000_000 - 900 * 60;
    const ranges = splitRemaining({ to: 6_000_000 }, view({ reached: 6_000_000, wanted: 8, listed: 100, floor }))!;
    expectTiles(ranges, { to: 6_000_000 }, 'newest_first');
    // 300 + 300 records, then the 300 left above the floor (not the 600 a probe would take), and the open rest.
    expect(ranges.slice(0, -1).map((range) => Math.round((range.to! - range.from!) / 60))).toEqual([300, 300, 300]);
    expect(ranges.at(-2)!.from).toBe(floor);
    expect(ranges.at(-1)).toEqual({ to: floor });
    // A slice less than a slice's worth above the floor does not split at all.
    expect(splitRemaining({ to: floor + 200 * 60 }, view({ reached: floor + 200 * 60, wanted: 8, floor }))).toBeUndefined();
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

describe('slices planned at the start from the previous full listing', () => {
  /** A listing of `records` records, one every `every` seconds from `start`, profiled page by page. */
  const profiled = (records: number, every: number, order: ListingProfile['order'], start = 1_600_000_000): ListingProfile => {
    let pieces: ListingProfile['pieces'] = [];
    for (let first = 0; first < records; first += PAGE_RECORDS) {
      const rows = Math.min(PAGE_RECORDS, records - first);
      pieces = addToProfile(pieces, { from: start + first * every, to: start + (first + rows - 1) * every + 1, records: rows });
    }
    return { order, pieces, latencyMs: 300 };
  };
  /** Records of an even listing (one every `every` seconds from `start`) in a range. */
  const inRange = (range: SliceRange, records: number, every: number, start = 1_600_000_000) => {
    let count = 0;
    for (let i = 0; i < records; i += 1) {
      const key = start + i * every;
      if ((range.from === undefined || key >= range.from) && (range.to === undefined || key < range.to)) count += 1;
    }
    return count;
  };

  it('a profile keeps at most PROFILE_PIECES pieces in key order, and every record it was given', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 100 })), { maxLength: 120 }), (pages) => {
        let pieces: ListingProfile['pieces'] = [];
        for (const [from, width, records] of pages) pieces = addToProfile(pieces, { from, to: from + width, records });
        expect(pieces.length).toBeLessThanOrEqual(PROFILE_PIECES);
        expect(pieces.reduce((sum, piece) => sum + piece.records, 0)).toBe(pages.reduce((sum, [, , records]) => sum + records, 0));
        for (let i = 1; i < pieces.length; i += 1) expect(pieces[i]!.from).toBeGreaterThanOrEqual(pieces[i - 1]!.from);
      }),
    );
  });

  it('10,000 records newest first, 36 wanted: 35 slices of three pages (the margin short of full), the ends open', () => {
    const ranges = plannedSlices(profiled(10_000, 60, 'newest_first'), 36)!;
    // 33 of the minimum fit; at 290 records each, 35 hold them all.
    expect(ranges).toHaveLength(Math.ceil(10_000 / (MIN_SLICE_RECORDS - PLAN_MARGIN_RECORDS)));
    // Records created since the listing are in the first slice, any older than it in the last.
    expect(ranges[0]!.to).toBeUndefined();
    expect(ranges.at(-1)!.from).toBeUndefined();
    expectTiles(ranges, {}, 'newest_first');
    const held = ranges.map((range) => inRange(range, 10_000, 60));
    // Every slice but the last holds three pages, none a record into a fourth; the last the rest (no more).
    for (const records of held.slice(0, -1)) expect(records).toBe(3 * PAGE_RECORDS - PLAN_MARGIN_RECORDS);
    expect(held.at(-1)).toBe(10_000 - 34 * 290);
    expect(held.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it('pages profiled in any order (slices list side by side) still cut slices holding their pages, none a record into one more', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
        // 10,000 records a minute apart, listed in pages of 100 that arrive in a shuffled order.
        const pages = Array.from({ length: 100 }, (_, page) => page);
        let state = seed;
        for (let i = pages.length - 1; i > 0; i -= 1) {
          state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
          const j = state % (i + 1);
          [pages[i], pages[j]] = [pages[j]!, pages[i]!];
        }
        let pieces: ListingProfile['pieces'] = [];
        const start = 1_600_000_000;
        for (const page of pages) pieces = addToProfile(pieces, { from: start + page * 100 * 60, to: start + (page * 100 + 99) * 60 + 1, records: 100 });
        const ranges = plannedSlices({ order: 'newest_first', pieces }, 36)!;
        for (const range of ranges) expect(inRange(range, 10_000, 60)).toBeLessThanOrEqual(3 * PAGE_RECORDS);
      }),
      { numRuns: 30 },
    );
  });

  it('oldest first the same, cut from the bottom: the last slice stays open for records created while the run pages', () => {
    const ranges = plannedSlices(profiled(5_000, 7, 'oldest_first'), 8)!;
    // Six pages each (5,000 / 8), 590 records: nine slices hold them.
    expect(ranges).toHaveLength(9);
    expect(ranges[0]!.from).toBeUndefined();
    expect(ranges.at(-1)!.to).toBeUndefined();
    expectTiles(ranges, {}, 'oldest_first');
    const held = ranges.map((range) => inRange(range, 5_000, 7));
    for (const records of held.slice(0, -1)) expect(records).toBe(590);
    expect(held.at(-1)).toBe(5_000 - 8 * 590);
  });

  it('no plan when fewer than two slices of the minimum fit, or one is wanted: the run discovers the listing as a first sync does', () => {
    expect(plannedSlices(profiled(2 * MIN_SLICE_RECORDS - 1, 60, 'newest_first'), 36)).toBeUndefined();
    expect(plannedSlices(profiled(10_000, 60, 'newest_first'), 1)).toBeUndefined();
    expect(plannedSlices({ order: 'newest_first', pieces: [] }, 36)).toBeUndefined();
  });

  it('any profile: the slices tile the whole key line with open ends, at most `most`, each cut a second apart at least', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1_000_000_000, max: 1_000_100_000 }), fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: 0, max: 100 })), { minLength: 1, maxLength: 80 }),
        fc.integer({ min: 1, max: MAX_SLICES }),
        fc.boolean(),
        (pages, wanted, newest) => {
          let pieces: ListingProfile['pieces'] = [];
          for (const [from, width, records] of pages) pieces = addToProfile(pieces, { from, to: from + width, records });
          const order = newest ? 'newest_first' : 'oldest_first';
          const ranges = plannedSlices({ order, pieces }, wanted, MAX_SLICES);
          if (!ranges) return;
          expect(ranges.length).toBeGreaterThanOrEqual(2);
          expect(ranges.length).toBeLessThanOrEqual(MAX_SLICES);
          expectTiles(ranges, {}, order);
        },
      ),
    );
  });
});
