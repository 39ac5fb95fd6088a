import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../sandbox/faults';
import {
  FIRST_SYNC_PIECE_RECORDS,
  MAX_SLICES,
  MIN_SLICE_RECORDS,
  PAGE_RECORDS,
  PLAN_MARGIN_RECORDS,
  PROFILE_PIECES,
  addToProfile,
  cutMargin,
  cutsAtPieceEdges,
  evenPieces,
  pageDensity,
  plannedSlices,
  recordSpread,
  remainingRange,
  splitRemaining,
  wantedSlices,
  type ListingView,
  type SampledPiece,
} from '../../shared/sync/slice-plan';
import { onPageGrid } from '../../shared/sync/page-grid';
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
  // Records one a minute, evenly: pieces cut by estimate need no margin.
  spread: 0,
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

/** A slice's remaining range, newest first, and what its pages showed: the split properties' cases. */
const remainingCase = fc.record({
  from: fc.integer({ min: 1_000_000_000, max: 1_700_000_000 }),
  width: fc.integer({ min: 1, max: 50_000_000 }),
  density: fc.double({ min: 0.0001, max: 50, noNaN: true }),
  wanted: fc.integer({ min: 2, max: MAX_SLICES }),
  open: fc.boolean(),
  reachedAt: fc.double({ min: 0, max: 1, noNaN: true }),
  listed: fc.integer({ min: 0, max: 200_000 }),
});

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

  it('the rows of the boundary second the slice already listed: the first piece is cut that much narrower, so with them it still holds whole pages', () => {
    // Records at 0, 60, 120... seconds; the page ended at second 599,940 having listed its 2 rows there
    // (as if two shared it): the first piece lists them again.
    const remaining = remainingRange({ from: 0, to: 900_000 }, 'newest_first', 599_940);
    const plain = splitRemaining(remaining, view({ reached: 0, wanted: 5 }))!;
    const ranges = splitRemaining(remaining, view({ reached: 0, wanted: 5, repeated: 2 }))!;
    expectTiles(ranges, remaining, 'newest_first');
    expect(ranges).toHaveLength(plain.length);
    // Every cut 2 records (120 s) higher: the first piece 2 narrower, the last 2 wider.
    expect(ranges[0]!.from).toBe(plain[0]!.from! + 120);
    for (let i = 1; i < ranges.length - 1; i += 1) expect(ranges[i]!.to! - ranges[i]!.from!).toBe(plain[i]!.to! - plain[i]!.from!);
    // Oldest first the same, mirrored: the first piece starts at the page's last second.
    const up = remainingRange({ from: 0, to: 900_000 }, 'oldest_first', 300_000);
    const upPlain = splitRemaining(up, view({ order: 'oldest_first', wanted: 4 }))!;
    const upRanges = splitRemaining(up, view({ order: 'oldest_first', wanted: 4, repeated: 3 }))!;
    expectTiles(upRanges, up, 'oldest_first');
    expect(upRanges[0]!.to).toBe(upPlain[0]!.to! - 180);
    // Past what pages reached (an open bottom, newest first): the first probe narrows the same.
    const open = remainingRange({}, 'newest_first', 6_000_000);
    const openPlain = splitRemaining(open, view({ reached: 6_000_000, wanted: 8 }))!;
    const openRanges = splitRemaining(open, view({ reached: 6_000_000, wanted: 8, repeated: 1 }))!;
    expectTiles(openRanges, open, 'newest_first');
    expect(openRanges[0]!.from).toBe(openPlain[0]!.from! + 60);
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

  it('a floor below the range\'s own end is another slice\'s: the pieces stop at the range', () => {
    // Pieces of 300, 300, 600 records a second: the third would reach past both the range's end and the floor.
    const whole = { from: 1_000, to: 2_000 };
    const ranges = splitRemaining(whole, view({ density: 1, wanted: 10, reached: 1_900, floor: 900, listed: 0 }))!;
    expect(ranges).toEqual([{ from: 1_700, to: 2_000 }, { from: 1_400, to: 1_700 }, { from: 1_000, to: 1_400 }]);
    expectTiles(ranges, whole, 'newest_first');
  });

  describe('a first sync (no plan: `pieceRecords`)', () => {
    const first = (extra: Partial<ListingView>) => view({ pieceRecords: FIRST_SYNC_PIECE_RECORDS, ...extra });
    const records = (range: SliceRange, perSecond: number) => Math.round((range.to! - range.from!) * perSecond);

    it('past what pages reached: one piece as deep as what was listed (FIRST_SYNC_PIECE_RECORDS at least), then the open rest: only that one can come back empty', () => {
      const early = splitRemaining({ to: 6_000_000 }, first({ reached: 6_000_000, wanted: 8, listed: 100 }))!;
      expectTiles(early, { to: 6_000_000 }, 'newest_first');
      expect(early).toHaveLength(2);
      expect(records(early[0]!, 1 / 60)).toBe(FIRST_SYNC_PIECE_RECORDS);
      expect(early[1]).toEqual({ to: early[0]!.from });
      // Later, deeper: as deep as the 5,000 listed, whatever the slices wanted.
      const later = splitRemaining({ to: 6_000_000 }, first({ reached: 6_000_000, wanted: 30, listed: 5_000 }))!;
      expect(later).toHaveLength(2);
      expect(records(later[0]!, 1 / 60)).toBe(5_000);
    });

    it('cuts past the reach at the density of the page that reached farthest, within it at the splitting page\'s own (records crowd into the last month)', () => {
      // The listing so far: one a minute on average; the farthest page one an hour.
      const far = splitRemaining({ to: 6_000_000 }, first({ reached: 6_000_000, wanted: 8, listed: 100, edgeDensity: 1 / 3_600 }))!;
      expect(records(far[0]!, 1 / 3_600)).toBe(FIRST_SYNC_PIECE_RECORDS);
      // A bounded range, the splitting page one every 10 s: pieces of whole pages at that density.
      const near = splitRemaining({ from: 6_000_000 - 9_000 * 10, to: 6_000_000 }, first({ reached: 5_000_000, wanted: 8, localDensity: 1 / 10 }))!;
      expect(near).toHaveLength(3);
      for (const range of near) expect(records(range, 1 / 10)).toBeGreaterThanOrEqual(FIRST_SYNC_PIECE_RECORDS);
      // A planned run (no `pieceRecords`) keeps cutting by the listing's density: pieces of the minimum at one a minute.
      const planned = splitRemaining({ from: 6_000_000 - 9_000 * 10, to: 6_000_000 }, view({ reached: 5_000_000, wanted: 8, localDensity: 1 / 10 }))!;
      expect(records(planned[1]!, 1 / 60)).toBe(MIN_SLICE_RECORDS);
    });

    it('a bounded range is cut only where pages showed records, evenly, none under FIRST_SYNC_PIECE_RECORDS; the deepest piece keeps the rest', () => {
      // 6,150 records one a minute, a page of another slice reached below it: two pieces of about 3,075 (not 3,000 and a sliver of 150).
      const whole = { from: 6_000_000 - 6_150 * 60, to: 6_000_000 };
      const ranges = splitRemaining(whole, first({ reached: 5_000_000, wanted: 8, listed: 100 }))!;
      expectTiles(ranges, whole, 'newest_first');
      expect(ranges).toHaveLength(2);
      for (const range of ranges) expect(records(range, 1 / 60)).toBeGreaterThanOrEqual(FIRST_SYNC_PIECE_RECORDS);
      // Pages reached only 100 records down into it: below may be past the listing's end, so no piece starts there.
      expect(splitRemaining(whole, first({ reached: 6_000_000 - 100 * 60, wanted: 8, listed: 100 }))).toBeUndefined();
      // 6,500 records shown of a range of 20,000's worth: two pieces in them, the deeper one keeping the rest of the range.
      const deep = { from: 6_000_000 - 20_000 * 60, to: 6_000_000 };
      const cut = splitRemaining(deep, first({ reached: 6_000_000 - 6_500 * 60, wanted: 8, listed: 100 }))!;
      expectTiles(cut, deep, 'newest_first');
      expect(cut).toHaveLength(2);
      expect(cut[0]!.from).toBeGreaterThanOrEqual(6_000_000 - 6_500 * 60);
      // Under two pieces' worth: paged on as one slice.
      expect(splitRemaining({ from: 6_000_000 - 5_900 * 60, to: 6_000_000 }, first({ reached: 5_000_000, wanted: 8 }))).toBeUndefined();
    });

    it('pieces always tile the remaining range exactly, none under FIRST_SYNC_PIECE_RECORDS but the open rest (property)', () => {
      fc.assert(
        fc.property(remainingCase, ({ from, width, density, wanted, open, reachedAt, listed }) => {
            const whole: SliceRange = { ...(open ? {} : { from }), to: from + width };
            const reached = Math.round(from + reachedAt * width);
            const ranges = splitRemaining(whole, first({ density, spread: 0, wanted, reached, listed }));
            if (!ranges) return;
            expect(ranges.length).toBeLessThanOrEqual(wanted);
            expectTiles(ranges, whole, 'newest_first');
            // Every bounded piece holds the minimum (a second's rounding aside).
            for (const range of ranges) if (range.from !== undefined) expect((range.to! - range.from) * density).toBeGreaterThanOrEqual(FIRST_SYNC_PIECE_RECORDS - 2 * density - 1);
          },
        ),
      );
    });
  });

  it('newest first past what pages reached, with a floor anywhere: pieces still tile the remaining range exactly (property)', () => {
    fc.assert(
      fc.property(remainingCase, fc.double({ min: -0.5, max: 1, noNaN: true }), ({ from, width, density, wanted, open, reachedAt, listed }, floorAt) => {
          const whole: SliceRange = { ...(open ? {} : { from }), to: from + width };
          const reached = Math.round(from + reachedAt * width);
          const floor = Math.round(from + floorAt * width);
          const ranges = splitRemaining(whole, view({ density, wanted, reached, floor, listed }));
          if (!ranges) return;
          expect(ranges.length).toBeGreaterThanOrEqual(2);
          expect(ranges.length).toBeLessThanOrEqual(wanted);
          expectTiles(ranges, whole, 'newest_first');
        },
      ),
    );
  });

  it('how unevenly records lie, from full pages\' widths, and how short of whole pages a piece cut by estimate aims', () => {
    // Evenly spaced: every page as wide; no margin.
    expect(recordSpread({ pages: 4, sum: 4 * 5_940, squares: 4 * 5_940 ** 2 })).toBe(0);
    expect(cutMargin(300, 0)).toBe(0);
    // At random (a Poisson process): a page's width varies by 1/√99; about 1.
    const random = seededRandom(3);
    const pageWidths = Array.from({ length: 400 }, () => Array.from({ length: 99 }, () => -Math.log(1 - random()) * 60).reduce((a, b) => a + b, 0));
    const spread = recordSpread({ pages: pageWidths.length, sum: pageWidths.reduce((a, b) => a + b, 0), squares: pageWidths.reduce((a, b) => a + b * b, 0) })!;
    expect(spread).toBeGreaterThan(0.8);
    expect(spread).toBeLessThan(1.25);
    // Fewer than three full pages tell nothing: taken as at random.
    expect(recordSpread({ pages: 2, sum: 10, squares: 50 })).toBeUndefined();
    expect(cutMargin(300, undefined)).toBe(23);
    expect(cutMargin(300, 1)).toBe(23);
    // Never more than a quarter of a page.
    expect(cutMargin(3_000, 1)).toBe(PAGE_RECORDS / 4);
  });

  it('evenPieces and pageDensity', () => {
    // Records one a minute: room for two pieces of the minimum, and one record short of it.
    expect(evenPieces(60 * 2 * MIN_SLICE_RECORDS, 1 / 60, 10, 2, 0)).toEqual([60 * MIN_SLICE_RECORDS, 60 * MIN_SLICE_RECORDS]);
    expect(evenPieces(60 * (2 * MIN_SLICE_RECORDS - 1), 1 / 60, 10, 2, 0)).toBeUndefined();
    // Records at random (or how they lie unknown): the first piece aims 23 records short of its three pages, the last takes the rest.
    expect(evenPieces(60 * 2 * MIN_SLICE_RECORDS, 1 / 60, 10)).toEqual([60 * (MIN_SLICE_RECORDS - 23), 60 * (MIN_SLICE_RECORDS + 23)]);
    // 100 records a minute apart span 99 minutes: one a minute.
    expect(pageDensity(100, { first: 6_000, last: 60 })).toBeCloseTo(1 / 60);
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

  /** Requests a listing of each range takes (one per 100 records, a part-filled last page included). */
  const requests = (ranges: SliceRange[], held: (range: SliceRange) => number) => ranges.reduce((sum, range) => sum + Math.max(1, Math.ceil(held(range) / PAGE_RECORDS)), 0);

  it('10,000 records newest first, 36 wanted: slices of whole pages cut at page edges, so one request per 100 records; the ends open', () => {
    const ranges = plannedSlices(profiled(10_000, 60, 'newest_first'), 36)!;
    // 33 of the minimum fit (three pages): a quarter fewer to a few more slices.
    expect(ranges.length).toBeGreaterThanOrEqual(25);
    expect(ranges.length).toBeLessThanOrEqual(MAX_SLICES);
    // Records created since the listing are in the first slice, any older than it in the last.
    expect(ranges[0]!.to).toBeUndefined();
    expect(ranges.at(-1)!.from).toBeUndefined();
    expectTiles(ranges, {}, 'newest_first');
    const held = ranges.map((range) => inRange(range, 10_000, 60));
    // Every slice holds whole pages (three or four), none a record into one more.
    for (const records of held) {
      expect(records % PAGE_RECORDS).toBe(0);
      expect(records).toBeGreaterThanOrEqual(MIN_SLICE_RECORDS);
      expect(records).toBeLessThanOrEqual(4 * PAGE_RECORDS);
    }
    expect(held.reduce((a, b) => a + b, 0)).toBe(10_000);
    expect(requests(ranges, (range) => inRange(range, 10_000, 60))).toBe(100);
  });

  it('pages profiled in any order (slices list side by side) cost at most 4% more than one listing: whole pages unless the merges left the profile too coarse', () => {
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
        // Usually every slice holds whole pages (100 requests). In about 50 of 3,000 orders the merges
        // that keep the profile to 96 pieces leave it too coarse for the slices wanted (longer slices
        // are tried first), and the plan falls back to cuts by estimate: 104 requests in every such order tried.
        const wholePages = ranges.every((range) => inRange(range, 10_000, 60) % PAGE_RECORDS === 0);
        const cost = requests(ranges, (range) => inRange(range, 10_000, 60));
        if (wholePages) expect(cost).toBe(100);
        else expect(cost).toBeLessThanOrEqual(104);
      }),
      { numRuns: 30 },
    );
  });

  /**
   * 10,000 records at random seconds (about one a minute, some sharing a second), newest first, as a
   * first sync lists them when it discovers its slices: each slice `size()` records, ending on a
   * second apart from the next (a range edge), in pages of 100. Returns the keys, the profile the
   * listing kept, and the requests it took.
   */
  const discovered = (seed: number, size: (random: () => number) => number, options: { sampled?: boolean; distinct?: boolean } = {}) => {
    const random = seededRandom(seed);
    const start = 1_600_000_000;
    // Distinct: 10,000 of 600,000 seconds, none shared (a second apart at least).
    const keys = options.distinct
      ? [...new Set(Array.from({ length: 12_000 }, () => start + Math.floor(random() * 600_000)))].slice(0, 10_000).sort((a, b) => b - a)
      : Array.from({ length: 10_000 }, () => start + Math.floor(random() * 600_000)).sort((a, b) => b - a);
    let pieces: SampledPiece[] = [];
    let listed = 0;
    for (let at = 0; at < keys.length; ) {
      let end = Math.min(keys.length, at + size(random));
      while (end < keys.length && keys[end] === keys[end - 1]) end += 1;
      for (let first = at; first < end; first += PAGE_RECORDS) {
        const page = keys.slice(first, Math.min(end, first + PAGE_RECORDS));
        // As the engine learns a page: with its keys, ascending, when sampled.
        const sample = options.sampled ? { sample: { keys: [...page].reverse(), below: 0 } } : {};
        pieces = addToProfile(pieces, { from: page.at(-1)!, to: page[0]! + 1, records: page.length, ...sample });
        listed += 1;
      }
      at = end;
    }
    const inside = (range: SliceRange) => keys.filter((key) => (range.from === undefined || key >= range.from) && (range.to === undefined || key < range.to));
    const count = (range: SliceRange) => inside(range).length;
    /** The pages a listing of `range` answers (its first page of `range.firstPage` records, if given), as profile pieces. */
    const pagesOf = (range: SliceRange) => {
      const held = inside(range);
      const pages: ListingProfile['pieces'] = [];
      for (let first = 0; first < held.length; ) {
        const size = first === 0 && range.firstPage !== undefined ? range.firstPage : PAGE_RECORDS;
        const page = held.slice(first, first + size);
        pages.push({ from: page.at(-1)!, to: page[0]! + 1, records: page.length });
        first += size;
      }
      return pages;
    };
    /** Requests a listing of `ranges` takes, each paged as `pagesOf` does. */
    const listing = (ranges: SliceRange[]) => ranges.reduce((sum, range) => sum + Math.max(1, pagesOf(range).length), 0);
    return { keys, pieces, listed, count, pagesOf, listing };
  };

  it('from a first sync whose discovered slices each ended a few records short of whole pages: no more requests than that listing, nor the next plan than this one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 60 }), (seed, shortBy) => {
        const { pieces, count, listed, pagesOf, listing } = discovered(seed, (random) => 300 - shortBy - Math.floor(random() * 5));
        const ranges = plannedSlices({ order: 'newest_first', pieces }, 36)!;
        expect(ranges.length).toBeGreaterThanOrEqual(25);
        expect(ranges.reduce((sum, range) => sum + count(range), 0)).toBe(10_000);
        // The records short of whole pages are the listing's own (each slice's records are what they
        // are): together they cost no more requests than they did, rounded up; a slice's shorter
        // first page (to end its pages on whole pages from the oldest record) costs none more.
        expect(listing(ranges)).toBe(requests(ranges, count));
        expect(listing(ranges)).toBeLessThanOrEqual(Math.min(listed, 100 + Math.ceil((listed * PAGE_RECORDS - 10_000) / PAGE_RECORDS)));
        // Listed by that plan, its own profile plans no worse: the waste does not grow from run to run
        // (and shrinks where a slice's shorter first page moved its page edges onto the grid).
        let plan = ranges;
        const runs = [listing(plan)];
        for (let run = 0; run < 3; run += 1) {
          let next: ListingProfile['pieces'] = [];
          for (const range of plan) for (const page of pagesOf(range)) next = addToProfile(next, page);
          plan = plannedSlices({ order: 'newest_first', pieces: next }, 36)!;
          expect(plan.reduce((sum, range) => sum + count(range), 0)).toBe(10_000);
          runs.push(listing(plan));
          expect(runs.at(-1)).toBeLessThanOrEqual(runs.at(-2)!);
        }

      }),
      { numRuns: 20 },
    );
  });

  it('from a first sync whose slices ended anywhere (some a few records into one more page): no more requests than that listing took', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
        const { pieces, count, listed } = discovered(seed, (random) => 250 + Math.floor(random() * 200));
        const ranges = plannedSlices({ order: 'newest_first', pieces }, 36)!;
        expect(ranges.reduce((sum, range) => sum + count(range), 0)).toBe(10_000);
        expect(requests(ranges, count)).toBeLessThanOrEqual(listed);
      }),
      { numRuns: 20 },
    );
  });

  it('oldest first the same, cut from the bottom: the last slice stays open for records created while the run pages', () => {
    const ranges = plannedSlices(profiled(5_000, 7, 'oldest_first'), 8)!;
    expect(ranges.length).toBeGreaterThanOrEqual(8);
    expect(ranges[0]!.from).toBeUndefined();
    expect(ranges.at(-1)!.to).toBeUndefined();
    expectTiles(ranges, {}, 'oldest_first');
    const held = ranges.map((range) => inRange(range, 5_000, 7));
    for (const records of held) expect(records % PAGE_RECORDS).toBe(0);
    expect(requests(ranges, (range) => inRange(range, 5_000, 7))).toBe(50);
  });

  it('pieces coarser than the slices (a profile of few pieces): cut by estimate, each slice the margin short of its whole pages', () => {
    // 10,000 records a minute apart kept in 4 pieces: no piece edge makes a slice of three or four pages.
    let pieces: ListingProfile['pieces'] = [];
    const start = 1_600_000_000;
    for (let first = 0; first < 10_000; first += PAGE_RECORDS) pieces = addToProfile(pieces, { from: start + first * 60, to: start + (first + 99) * 60 + 1, records: 100 }, 4);
    expect(cutsAtPieceEdges([...pieces].reverse(), true, 33, 3)).toBeUndefined();
    const ranges = plannedSlices({ order: 'newest_first', pieces, latencyMs: 300 }, 36)!;
    expect(ranges).toHaveLength(Math.ceil(10_000 / (MIN_SLICE_RECORDS - PLAN_MARGIN_RECORDS)));
    const held = ranges.map((range) => inRange(range, 10_000, 60));
    for (const records of held.slice(0, -1)) expect(records).toBe(3 * PAGE_RECORDS - PLAN_MARGIN_RECORDS);
    expect(held.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it('pieces merged past the slices\' length (no tiling of three or four pages): longer slices, still of whole pages, before cuts by estimate', () => {
    // 10,000 records a minute apart; the oldest pieces 200, 300 and 200 records (as merges to 96 left them).
    const sizes = [200, 300, 200, ...Array.from({ length: 93 }, () => 100)];
    const start = 1_600_000_000;
    const pieces: ListingProfile['pieces'] = [];
    let first = 0;
    for (const records of sizes) {
      pieces.push({ from: start + first * 60, to: start + (first + records - 1) * 60 + 1, records });
      first += records;
    }
    expect(cutsAtPieceEdges([...pieces].reverse(), true, 33, 3)).toBeUndefined();
    const ranges = plannedSlices({ order: 'newest_first', pieces, latencyMs: 300 }, 36)!;
    const held = ranges.map((range) => inRange(range, 10_000, 60));
    for (const records of held) expect(records % PAGE_RECORDS).toBe(0);
    expect(requests(ranges, (range) => inRange(range, 10_000, 60))).toBe(100);
  });

  it('a profile merges pieces that share a second first (no slice can be cut between them), then next to whole pages, then the fewest records', () => {
    // Four pages: the second and third share second 200.
    const pages = [
      { from: 0, to: 100, records: 100 },
      { from: 100, to: 201, records: 100 },
      { from: 200, to: 300, records: 100 },
      { from: 300, to: 400, records: 40 },
    ];
    let pieces: ListingProfile['pieces'] = [];
    for (const page of pages) pieces = addToProfile(pieces, page, 3);
    expect(pieces).toEqual([{ from: 0, to: 100, records: 100 }, { from: 100, to: 300, records: 200 }, { from: 300, to: 400, records: 40 }]);
    // 40 and 30 are the fewest, but the edge between them is the only one 40 records over whole pages.
    expect(addToProfile(pieces, { from: 400, to: 500, records: 30 }, 3)).toEqual([{ from: 0, to: 100, records: 100 }, { from: 100, to: 400, records: 240 }, { from: 400, to: 500, records: 30 }]);
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

  describe('a completed listing\'s profile re-cut on one page grid (onPageGrid)', () => {
    /** Records of `keys` below `key`. */
    const rankOf = (ascending: readonly number[], key: number) => ascending.filter((k) => k < key).length;

    it('from a first sync whose slices each ended on part-filled pages: every piece but the newest holds whole pages counted from the oldest record, counts exact, and the next plan makes one request per 100 records', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
          const { pieces, count, listing } = discovered(seed, (random) => 250 + Math.floor(random() * 200), { sampled: true, distinct: true });
          // The first sync's own profile: its edges are its slices' page edges, rarely whole pages from the oldest record.
          expect(pieces.filter((piece) => piece.records % PAGE_RECORDS !== 0).length).toBeGreaterThan(10);
          const grid = onPageGrid(pieces);
          expect(grid.length).toBeLessThanOrEqual(PROFILE_PIECES);
          expect(grid.reduce((sum, piece) => sum + piece.records, 0)).toBe(10_000);
          for (const [i, piece] of grid.entries()) {
            // Exact: every record listed in its range (no sample, no key kept on it).
            expect(Object.keys(piece).sort()).toEqual(['from', 'records', 'to']);
            expect(count(piece), `piece ${i}`).toBe(piece.records);
            if (i < grid.length - 1) expect(piece.records % PAGE_RECORDS, `piece ${i}`).toBe(0);
            if (i > 0) expect(piece.from).toBeGreaterThanOrEqual(grid[i - 1]!.to);
          }
          // Fine enough to plan from: whole-page slices, one request per 100 records, either order.
          const ranges = plannedSlices({ order: 'newest_first', pieces: grid }, 36)!;
          expect(ranges.length).toBeGreaterThanOrEqual(25);
          expect(ranges.reduce((sum, range) => sum + count(range), 0)).toBe(10_000);
          expect(listing(ranges)).toBe(100);
          // Without the re-cut the same listing plans part-filled pages.
          expect(listing(plannedSlices({ order: 'newest_first', pieces }, 36)!)).toBeGreaterThan(100);
          const ascending = plannedSlices({ order: 'oldest_first', pieces: grid }, 36)!;
          expect(requests(ascending, count)).toBe(100);
        }),
        { numRuns: 15 },
      );
    });

    it('a grid record sharing its second with the one before: the cut moves up to the next second, the piece above a few records short of whole pages, counts exact', () => {
      // 60 records in [1000, 1060), then a page of 100 at seconds 1100.. with ranks 60..159: the
      // grid record (rank 100, the page's 41st) shares second 1140 with ranks 98 to 102.
      const keys = Array.from({ length: 100 }, (_, i) => (i >= 38 && i <= 42 ? 1140 : 1100 + i));
      const below = { from: 1000, to: 1060, records: 60, sample: { keys: Array.from({ length: 60 }, (_, i) => 1000 + i), below: 0 } };
      const page = { from: 1100, to: 1200, records: 100, sample: { keys, below: 0 } };
      // Cut at 1143 (rank 103): the piece below holds 103, 3 over its page, the one above 57 (3 short of 60).
      expect(onPageGrid([below, page])).toEqual([
        { from: 1000, to: 1143, records: 103 },
        { from: 1143, to: 1200, records: 57 },
      ]);
      // Without the tie the cut falls on the grid record itself.
      const apart = Array.from({ length: 100 }, (_, i) => 1100 + i);
      expect(onPageGrid([below, { ...page, sample: { keys: apart, below: 0 } }])).toEqual([
        { from: 1000, to: 1140, records: 100 },
        { from: 1140, to: 1200, records: 60 },
      ]);
      // A second shared up to the sample's top cannot be cut inside it: no cut, and the pieces merge.
      const tiedToTop = Array.from({ length: 100 }, (_, i) => (i >= 38 ? 1199 : 1100 + i));
      expect(onPageGrid([below, { ...page, sample: { keys: tiedToTop, below: 0 } }])).toEqual([{ from: 1000, to: 1200, records: 160 }]);
    });

    it('a merged piece keeps one sample with the records below it: the cut lands at the right rank', () => {
      // Three pages of one listing at one record a second (keys are ranks from the oldest): 0-59,
      // 60-159, 160-239, profiled in the order 160, 0, 60 and merged into one piece.
      let pieces: SampledPiece[] = [];
      const page = (first: number, rows: number) => ({ from: first, to: first + rows, records: rows, sample: { keys: Array.from({ length: rows }, (_, i) => first + i), below: 0 } });
      for (const listed of [page(160, 80), page(0, 60), page(60, 100)]) pieces = addToProfile(pieces, listed, 1);
      expect(pieces).toHaveLength(1);
      // The page listed last lies inside the merged piece (its ranks unknown with its own keys): the
      // piece keeps the top page's, the 160 records under it counted.
      expect(pieces[0]!.sample).toEqual({ keys: page(160, 80).sample.keys, below: 160 });
      expect(onPageGrid(pieces)).toEqual([
        { from: 0, to: 200, records: 200 },
        { from: 200, to: 240, records: 40 },
      ]);
      // Keeping the upper page's sample instead (the lower one gone): 100 records counted under it.
      const upper = addToProfile([{ from: 0, to: 100, records: 100 }], page(100, 100), 1);
      expect(upper).toEqual([{ from: 0, to: 200, records: 200, sample: { keys: page(100, 100).sample.keys, below: 100 } }]);
    });

    it('pieces without a sample (a run continued in another invocation) are left as they were', () => {
      const sampled = (from: number, records: number) => ({ from, to: from + records, records, sample: { keys: Array.from({ length: records }, (_, i) => from + i), below: 0 } });
      const unsampled = [
        { from: 1_000, to: 1_070, records: 70 },
        { from: 1_070, to: 1_130, records: 60 },
      ];
      const grid = onPageGrid([sampled(0, 90), sampled(90, 90), ...unsampled, sampled(2_000, 100)]);
      // The sampled pieces below are cut at rank 100 (key 100); the unsampled ones stay, edges and all.
      expect(grid).toEqual([
        { from: 0, to: 100, records: 100 },
        { from: 100, to: 180, records: 80 },
        ...unsampled,
        // Ranks 310 to 409: cut at 400 (key 2,090).
        { from: 2_000, to: 2_090, records: 90 },
        { from: 2_090, to: 2_100, records: 10 },
      ]);
    });

    it('records at random seconds (some sharing one): each edge is on the grid or a tied second\'s upper boundary, counts exact, and planned reconciles stay at one request per 100 records', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
          const { keys, pieces, count, listing, pagesOf } = discovered(seed, (random) => 250 + Math.floor(random() * 200), { sampled: true });
          const ascending = [...keys].reverse();
          let grid = onPageGrid(pieces);
          for (let run = 0; run < 3; run += 1) {
            expect(grid.reduce((sum, piece) => sum + piece.records, 0)).toBe(10_000);
            for (let i = 1; i < grid.length; i += 1) {
              const rank = rankOf(ascending, grid[i]!.from);
              expect(grid.slice(0, i).reduce((sum, piece) => sum + piece.records, 0)).toBe(rank);
              const onGrid = Math.floor(rank / PAGE_RECORDS) * PAGE_RECORDS;
              // Off the grid only where the grid record shares its second with the one before it: the cut is that second's upper edge.
              if (rank !== onGrid) {
                expect(ascending[onGrid]).toBe(ascending[onGrid - 1]);
                expect(ascending[rank - 1]).toBe(ascending[onGrid]);
              }
            }
            const ranges = plannedSlices({ order: 'newest_first', pieces: grid }, 36)!;
            expect(ranges.reduce((sum, range) => sum + count(range), 0)).toBe(10_000);
            // A tied cut costs a request if the plan takes it; it takes grid edges where it can.
            expect(listing(ranges)).toBeLessThanOrEqual(101);
            // That reconcile's own listing, sampled, re-cut for the next.
            let next: SampledPiece[] = [];
            for (const range of ranges) for (const page of pagesOf(range)) next = addToProfile(next, { ...page, sample: { keys: ascending.filter((key) => key >= page.from && key < page.to).slice(0, page.records), below: 0 } });
            grid = onPageGrid(next);
          }
        }),
        // 987973: a seed CI met whose re-cut once counted 8,299 records below a cut that had 8,300.
        { numRuns: 10, examples: [[987973]] },
      );
    });
  });
});
