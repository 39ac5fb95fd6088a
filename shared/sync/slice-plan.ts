import type { SliceOrder, SliceRange } from './sync-source';

/**
 * How a full listing is split into slices paged side by side. Pure: the engine
 * (shared/sync/page-slices.ts) asks at each page of a slice whether to split what the slice still
 * has to list, and into which ranges.
 *
 * Why and how much:
 * - Enough slices in flight to use the connection's rate (Little's law: rate × the platform's
 *   answer time, e.g. 100/s × 0.3 s = 30), and no more once requests wait for the budget. When
 *   pages bring writes (a first sync), the store's write pace is the rate instead if it is lower.
 * - Each slice ends on a part-filled page, so every slice costs about half a request more than one
 *   listing would; slices are never smaller than `MIN_SLICE_RECORDS`, and are cut in whole pages at
 *   the density the pages so far showed (records per second of creation time).
 * - Only what is known to hold records is cut evenly. A listing's far end may be unknown (the payment
 *   platform lists newest first and nothing tells how far back records go): past the deepest page
 *   listed, pieces double in size (300, 300, 600, 1,200... records at the density seen), so a few
 *   pieces bracket where records end and only the deepest come back empty; the last stays open.
 * - A slice is split at a page boundary: it ends there, and its remaining range (overlapping by the
 *   second its last record was created in, which the cursor had not finished) is listed afresh in
 *   pieces. The boundary second may list a record twice; the engine compares before writing.
 */

/**
 * Fewest records a slice is cut to: its part-filled last page then wastes at most a sixth of its
 * requests (half a page on average). Not more: a slice holding less than twice this cannot be split,
 * so at a run's end such slices page alone, one answer after another (at 500, runs at 300 ms spent
 * their last second or more on a few slices of 5 to 9 pages; `npm run bench -- sync`).
 */
export const MIN_SLICE_RECORDS = 300;
/** Most slices of one data object in flight: bounds memory (at most four pages each) and open connections. */
export const MAX_SLICES = 48;
/** Records per page of both platforms' lists. */
export const PAGE_RECORDS = 100;

/** What the engine knows about the listing so far. */
export interface ListingView {
  order: SliceOrder;
  /** Records per second of the ordering key, from the pages listed so far; undefined before any. */
  density: number | undefined;
  /**
   * The farthest ordering key a listed page has reached: the lowest for newest-first listings,
   * the highest for oldest-first ones. Ranges beyond it may be empty.
   */
  reached: number | undefined;
  /** Where an open far end stands for estimates: the run's start for oldest-first listings (nothing was created after it); undefined when unknown. */
  farEnd: number | undefined;
  /** Slices being paged now, this one included. */
  active: number;
  /** Slices wanted in flight (`wantedSlices`). */
  wanted: number;
  /** Records listed so far in this run. */
  listed: number;
}

/**
 * How many slices to keep in flight for a connection's rate and its platform's answer time
 * (each slice has one request out at a time), at most `most`. Pure.
 */
export function wantedSlices(pace: { ratePerSecond: number | undefined; latencyMs: number | undefined; waitMs: number }, active: number, most = MAX_SLICES): number {
  if (pace.ratePerSecond === undefined || pace.latencyMs === undefined) return 1;
  // Requests already wait for the budget: more slices would only wait longer (and waste part pages).
  if (pace.waitMs > pace.latencyMs / 2) return Math.max(1, Math.min(active, most));
  const needed = Math.ceil(pace.ratePerSecond * (pace.latencyMs / 1000) * 1.2);
  return Math.max(1, Math.min(most, needed));
}

/**
 * What a slice still has to list once a page ended at `last` (that second included: the cursor may
 * not have finished it). Pure.
 */
export function remainingRange(range: SliceRange, order: SliceOrder, last: number): SliceRange {
  return order === 'newest_first' ? { ...withFrom(range.from), to: last + 1 } : { from: last, ...withTo(range.to) };
}

/**
 * Whether, and how, to split a slice's remaining range: undefined to go on paging it, or the ranges
 * to list instead, the first adjacent to where the slice stands (its worker carries on with it). Pure.
 */
export function splitRemaining(remaining: SliceRange, view: ListingView): SliceRange[] | undefined {
  const want = view.wanted - view.active;
  if (want <= 0 || view.density === undefined || !(view.density > 0)) return undefined;
  return view.order === 'newest_first' ? splitDescending(remaining, view, want) : splitAscending(remaining, view, want);
}

function splitDescending(remaining: SliceRange, view: ListingView, want: number): SliceRange[] | undefined {
  const top = remaining.to!;
  const density = view.density!;
  const reached = Math.min(view.reached ?? top, top);
  const bottomKnown = remaining.from === undefined ? reached : Math.max(remaining.from, reached);
  const hasUnknown = remaining.from === undefined || remaining.from < reached;
  // Known to hold records (a page reached below it): cut evenly.
  const known = evenPieces(top - bottomKnown, density, hasUnknown ? want : want + 1, hasUnknown ? 1 : 2) ?? [];
  const ranges = piecesDown(top, known);
  if (!hasUnknown) return ranges.length >= 2 ? ranges : undefined;
  // Beyond what any page reached, records may have ended: cut pieces that double in size going
  // further (so a handful of pieces brackets where the listing ends, and at most the deepest come
  // back empty), and leave the rest to the last one, open-ended if the range is.
  let to = ranges.length > 0 ? ranges[ranges.length - 1]!.from! : top;
  let size = MIN_SLICE_RECORDS;
  let depth = 0;
  const reach = Math.max(want * MIN_SLICE_RECORDS, 2 * view.listed);
  for (let cut = 0; ranges.length < want && depth < reach; cut += 1) {
    const from = Math.floor(to - Math.max(1, size / density));
    if (remaining.from !== undefined && from <= remaining.from) break;
    ranges.push({ from, to });
    to = from;
    depth += size;
    if (cut >= 1) size *= 2;
  }
  ranges.push(remaining.from === undefined ? { to } : { from: remaining.from, to });
  return ranges.length >= 2 ? ranges : undefined;
}

function splitAscending(remaining: SliceRange, view: ListingView, want: number): SliceRange[] | undefined {
  const bottom = remaining.from!;
  const top = remaining.to ?? view.farEnd;
  if (top === undefined || top <= bottom) return undefined;
  const pieces = evenPieces(top - bottom, view.density!, want + 1);
  if (!pieces) return undefined;
  const ranges: SliceRange[] = [];
  let from = bottom;
  for (const width of pieces) {
    ranges.push({ from, to: from + width });
    from += width;
  }
  // The last piece keeps the range's own end: open for records created while the run pages.
  ranges[ranges.length - 1] = { from: ranges[ranges.length - 1]!.from, ...withTo(remaining.to) };
  return ranges;
}

/**
 * Widths (whole seconds) of up to `count` pieces of a stretch `width` seconds wide, each holding
 * whole pages and at least MIN_SLICE_RECORDS at `density`; undefined if fewer than two fit.
 */
export function evenPieces(width: number, density: number, count: number, fewest = 2): number[] | undefined {
  if (!(width > 0) || !(density > 0)) return undefined;
  const records = width * density;
  const pieces = Math.min(count, Math.floor(records / MIN_SLICE_RECORDS));
  if (pieces < fewest || pieces < 1) return undefined;
  const pages = Math.max(MIN_SLICE_RECORDS / PAGE_RECORDS, Math.round(records / pieces / PAGE_RECORDS));
  const each = Math.max(1, Math.round((pages * PAGE_RECORDS) / density));
  const widths: number[] = [];
  let left = Math.ceil(width);
  for (let i = 0; i < pieces && left > 0; i += 1) {
    const piece = i === pieces - 1 ? left : Math.min(each, left);
    widths.push(piece);
    left -= piece;
  }
  if (left > 0) widths[widths.length - 1]! += left;
  return widths.length >= fewest ? widths : undefined;
}

function piecesDown(top: number, widths: number[]): SliceRange[] {
  const ranges: SliceRange[] = [];
  let to = top;
  for (const width of widths) {
    ranges.push({ from: to - width, to });
    to -= width;
  }
  return ranges;
}

/** Records per second of ordering key a page shows, from its record count and key span. Pure. */
export function pageDensity(records: number, span: { first: number; last: number }): number | undefined {
  const width = Math.abs(span.first - span.last);
  if (records < 2) return undefined;
  // A page whose records all share a second is very dense; one second is the finest a key tells.
  return records / Math.max(1, width);
}

function withFrom(from: number | undefined): SliceRange {
  return from === undefined ? {} : { from };
}

function withTo(to: number | undefined): SliceRange {
  return to === undefined ? {} : { to };
}
