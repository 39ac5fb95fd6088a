import type { ListingProfile } from './sync-decisions';
import type { SliceOrder, SliceRange } from './sync-source';

/**
 * How a full listing is split into slices paged side by side. Pure: the engine
 * (shared/sync/page-slices.ts; shared/sync/slice-worker.ts) asks at each page of a slice whether to
 * split what the slice still has to list, and into which ranges. A completed listing's profile is
 * re-cut on one page grid for the next run's plan in shared/sync/page-grid.ts.
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
/**
 * Fewest records a first sync's split cuts a piece to (a full run with no complete listing before
 * it: `ListingView.pieceRecords`). Every slice ends on a part-filled page, about half a request
 * lost, and a first sync knows too little to cut whole pages: with pieces of the minimum, a run of
 * 150-page objects ended some 40 slices each, 10% over one request per 100 records
 * (`sync.latency300.first5.over.*` in `npm run bench -- sync`).
 */
export const FIRST_SYNC_PIECE_RECORDS = 3_000;
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
   * Records per second where the splitting slice's last page lay: its remaining range starts there,
   * and records are not spread evenly over a listing's years (invoices crowd into the last month).
   * Cuts in the range known to hold records use it; undefined: `density`.
   */
  localDensity?: number;
  /** Records per second of the page that reached farthest (`reached`): cuts beyond it use it; undefined: `density`. */
  edgeDensity?: number;
  /**
   * How unevenly records lie (`recordSpread`): 0 evenly spaced, 1 at random; undefined is taken as
   * at random. A piece cut by estimate aims this much short of its whole pages (`cutMargin`).
   */
  spread?: number;
  /**
   * The farthest ordering key a listed page has reached: the lowest for newest-first listings,
   * the highest for oldest-first ones. Ranges beyond it may be empty.
   */
  reached: number | undefined;
  /** Where an open far end stands for estimates: the run's start for oldest-first listings (nothing was created after it); undefined when unknown. */
  farEnd: number | undefined;
  /**
   * Newest-first listings: the lowest key of the previous complete listing. Records are not
   * created in the past, so below it the listing holds only what a changed filter lets in: a split
   * probes no deeper (its pieces would come back empty) and leaves the rest to one open piece.
   */
  floor?: number;
  /** Slices being paged now, this one included. */
  active: number;
  /** Slices wanted in flight (`wantedSlices`). */
  wanted: number;
  /** Records listed so far in this run. */
  listed: number;
  /** Fewest records a piece is cut to (default MIN_SLICE_RECORDS; a first sync: FIRST_SYNC_PIECE_RECORDS). */
  pieceRecords?: number;
  /**
   * Rows of the remaining range's first second that the slice already listed (its page ended in
   * it): the first piece lists them again, so it is cut that many records narrower, else a piece of
   * exactly whole pages would be that many over (a request more).
   */
  repeated?: number;
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
  const firstSync = view.pieceRecords !== undefined;
  // A first sync cuts by the density where it cuts (a planned run's slices already follow its profile).
  const density = (firstSync ? positive(view.localDensity) : undefined) ?? view.density!;
  const farDensity = (firstSync ? positive(view.edgeDensity) : undefined) ?? view.density!;
  const reached = Math.min(view.reached ?? top, top);
  const bottomKnown = remaining.from === undefined ? reached : Math.max(remaining.from, reached);
  // A first sync cuts a bounded range only where pages showed records (what lies below them may be
  // past the listing's end: pieces there came back empty), the deepest piece keeping the rest of it;
  // cut to the size listed, it left a sliver above the range's end to a slice of its own.
  const hasUnknown = remaining.from === undefined || (!firstSync && remaining.from < reached);
  // Known to hold records (a page reached below it): cut evenly.
  const least = leastPiece(view);
  const known = evenPieces(top - bottomKnown, density, hasUnknown ? want : want + 1, hasUnknown ? 1 : 2, view.spread, least) ?? [];
  // Every cut moves up by the repeated rows' width (the first piece narrows, the last known keeps its end).
  const shift = repeatedWidth(view, known[0] ?? least / density);
  const ranges = piecesDown(top + shift, known);
  const narrowed = () => (ranges.length >= 2 ? [{ from: ranges[0]!.from, to: top }, ...ranges.slice(1)] : undefined);
  if (!hasUnknown) {
    if (ranges.length > 0) ranges[ranges.length - 1] = { from: remaining.from!, to: ranges[ranges.length - 1]!.to };
    return narrowed();
  }
  // Beyond what any page reached, records may have ended: cut pieces that double in size going
  // further (so a handful of pieces brackets where the listing ends, and at most the deepest come
  // back empty), and leave the rest to the last one, open-ended if the range is. A first sync
  // (`pieceRecords`) cuts one piece as deep as what it listed so far and leaves the rest to one new
  // slice: only that one can come back empty, and a page or two tells it whether to split again.
  let to = ranges.length > 0 ? ranges[ranges.length - 1]!.from! : top + shift;
  let size = firstSync ? Math.max(least, view.listed) : least;
  let depth = 0;
  const reach = firstSync ? size : Math.max(want * least, 2 * view.listed);
  for (let cut = 0; ranges.length < want && depth < reach; cut += 1) {
    const from = Math.floor(to - Math.max(1, (size - cutMargin(size, view.spread)) / farDensity));
    // The range's own end first: a floor below it is another slice's (a piece cut to the floor
    // there overlapped the slice below, and the rest came out inverted).
    if (remaining.from !== undefined && from <= remaining.from) break;
    if (view.floor !== undefined && from < view.floor) {
      // The stretch left above the floor: a piece of its own if it is worth a slice, else the open rest takes it.
      if ((to - view.floor) * farDensity >= least) {
        ranges.push({ from: view.floor, to });
        to = view.floor;
      }
      break;
    }
    ranges.push({ from, to });
    to = from;
    depth += size;
    if (cut >= 1) size *= 2;
  }
  ranges.push(remaining.from === undefined ? { to } : { from: remaining.from, to });
  return narrowed();
}

function splitAscending(remaining: SliceRange, view: ListingView, want: number): SliceRange[] | undefined {
  const bottom = remaining.from!;
  const top = remaining.to ?? view.farEnd;
  if (top === undefined || top <= bottom) return undefined;
  const pieces = evenPieces(top - bottom, view.density!, want + 1, 2, view.spread, leastPiece(view));
  if (!pieces) return undefined;
  const ranges: SliceRange[] = [];
  // Every cut moves down by the repeated rows' width: the first piece narrows.
  let from = bottom - repeatedWidth(view, pieces[0]!);
  for (const width of pieces) {
    ranges.push({ from, to: from + width });
    from += width;
  }
  ranges[0] = { from: bottom, to: ranges[0]!.to };
  // The last piece keeps the range's own end: open for records created while the run pages.
  ranges[ranges.length - 1] = { from: ranges[ranges.length - 1]!.from, ...withTo(remaining.to) };
  return ranges;
}

function positive(value: number | undefined): number | undefined {
  return value !== undefined && value > 0 ? value : undefined;
}

function leastPiece(view: ListingView): number {
  return Math.max(MIN_SLICE_RECORDS, view.pieceRecords ?? MIN_SLICE_RECORDS);
}

/** Seconds the first piece of a split narrows by for the rows it lists again (`ListingView.repeated`), under half its width. */
function repeatedWidth(view: ListingView, firstWidth: number): number {
  if (!view.repeated || !(view.density! > 0)) return 0;
  return Math.min(Math.round(view.repeated / view.density!), Math.floor((firstWidth - 1) / 2));
}

/**
 * How unevenly a listing's records lie, from the widths (seconds of ordering key) of its full pages:
 * the variance of the records a stretch holds over the records it holds on average, estimated as
 * (records a page - 1) × the squared coefficient of variation of the widths. About 1 for records
 * created at random (a Poisson process), 0 for records evenly spaced; undefined (taken as at random)
 * before three full pages. Pure.
 */
export function recordSpread(widths: { pages: number; sum: number; squares: number } | undefined): number | undefined {
  if (!widths || widths.pages < 3 || !(widths.sum > 0)) return undefined;
  const mean = widths.sum / widths.pages;
  const variance = Math.max(0, widths.squares / widths.pages - mean * mean);
  return ((PAGE_RECORDS - 1) * variance) / (mean * mean);
}

/**
 * Records a piece cut by estimate aims short of `records` (its whole pages): one record over costs
 * a whole request more, and each record short a hundredth of one. About 1.3 standard deviations of
 * the records such a piece holds (90% of pieces then end inside their last page), at most a quarter
 * of a page: with records at random a piece of three pages aims 23 short, with records evenly spaced
 * none. Pure.
 */
export function cutMargin(records: number, spread: number | undefined): number {
  return Math.min(PAGE_RECORDS / 4, Math.round(1.3 * Math.sqrt((spread ?? 1) * records)));
}

/**
 * Widths (whole seconds) of up to `count` pieces of a stretch `width` seconds wide, each holding
 * whole pages (less `cutMargin`) and at least `least` records at `density`; undefined if fewer
 * than `fewest` fit.
 */
export function evenPieces(width: number, density: number, count: number, fewest = 2, spread?: number, least = MIN_SLICE_RECORDS): number[] | undefined {
  if (!(width > 0) || !(density > 0)) return undefined;
  const records = width * density;
  const pieces = Math.min(count, Math.floor(records / least));
  if (pieces < fewest || pieces < 1) return undefined;
  const pages = Math.max(least / PAGE_RECORDS, Math.round(records / pieces / PAGE_RECORDS));
  const each = Math.max(1, Math.round((pages * PAGE_RECORDS - cutMargin(pages * PAGE_RECORDS, spread)) / density));
  const widths: number[] = [];
  let left = Math.ceil(width);
  for (let i = 0; i < pieces && left > 0; i += 1) {
    const piece = i === pieces - 1 ? left : Math.min(each, left);
    widths.push(piece);
    left -= piece;
  }
  if (left > 0) widths[widths.length - 1]! += left;
  // Pages rounded up leave the last piece the rest: under `least`, it joins the one before.
  if (widths.length > fewest && widths.at(-1)! * density < least) widths.push(widths.pop()! + widths.pop()!);
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

/**
 * Pieces a listing's profile keeps: twice the most slices a plan cuts, so a small object's profile
 * keeps every page edge (a 10,000-record object has 100 pages) and a big one's cuts still fall on
 * piece edges; at most about 5 KB on the checkpoint whatever the object's size.
 */
export const PROFILE_PIECES = 2 * MAX_SLICES;

export type ProfilePiece = ListingProfile['pieces'][number];

/**
 * One page's ordering keys (ascending, whole seconds) inside a profile piece, and how many of the
 * piece's other records lie at or below its lowest key: the records' exact ranks there, so a completed
 * listing's profile can be cut where the global page grid crosses the piece (`onPageGrid`). In
 * memory only (never on the checkpoint): at most PROFILE_PIECES samples of PAGE_RECORDS keys.
 */
export interface PieceSample {
  keys: readonly number[];
  below: number;
}

/** A profile piece as a run holds it in memory: with one page's keys when it has them. */
export type SampledPiece = ProfilePiece & { sample?: PieceSample };

/**
 * A listing's profile with one more page's piece of the key range (`from` to `to`, `to` excluded),
 * in ascending key order, the pieces apart (a shared boundary second aside); past `most` pieces,
 * two adjacent pieces are merged: first a pair sharing a second (no slice can be cut between them),
 * then a pair where either holds whole pages (the edge between them leaves the same records over
 * whole pages as the edge beyond that piece, so a plan loses no way to cut whole pages), then any;
 * among those, the pair holding the fewest records. A piece's count stays exact (every record listed in its
 * range), so its edges are page edges a plan can cut at (`plannedSlices`). Slices list their pages
 * in any order, so a merge may span keys not listed yet: a page listed there later joins that piece
 * rather than sit inside it. A merged piece keeps one sample (the fullest), its `below` counting the
 * records merged in under it. Pure.
 */
export function addToProfile(pieces: readonly SampledPiece[], piece: SampledPiece, most = PROFILE_PIECES): SampledPiece[] {
  const overlap = (a: ProfilePiece, b: ProfilePiece) => Math.min(a.to, b.to) - Math.max(a.from, b.from) > 1;
  let next = [...pieces];
  const inside = next.filter((held) => overlap(held, piece));
  if (inside.length > 0) {
    const parts = [piece];
    // A merged piece spans more: it may now overlap others.
    for (let more = inside; more.length > 0; more = next.filter((held) => !parts.includes(held) && overlap(held, joined(parts)))) parts.push(...more);
    next = next.filter((held) => !parts.includes(held));
    piece = joined(parts);
  }
  let at = next.findIndex((held) => held.from > piece.from);
  if (at < 0) at = next.length;
  next.splice(at, 0, piece);
  return mergedTo(next, most);
}

/** Adjacent pieces merged until at most `most` are left, in the order `addToProfile` describes. */
export function mergedTo(next: SampledPiece[], most: number): SampledPiece[] {
  // First a pair sharing a second; then one of whole pages (the edge between them is a page edge
  // like the one before or after: it cuts the same number of records short of whole pages); then any.
  const rank = (a: ProfilePiece, b: ProfilePiece) => (a.to > b.from ? 0 : a.records % PAGE_RECORDS === 0 || b.records % PAGE_RECORDS === 0 ? 1 : 2);
  const cost = (i: number) => rank(next[i]!, next[i + 1]!) * 2 ** 40 + next[i]!.records + next[i + 1]!.records;
  while (next.length > Math.max(1, most)) {
    let pair = 0;
    for (let i = 1; i < next.length - 1; i += 1) if (cost(i) < cost(pair)) pair = i;
    next.splice(pair, 2, joined([next[pair]!, next[pair + 1]!]));
  }
  return next;
}

/** One piece of several (their records summed), keeping the fullest sample whose place among them is known. */
export function joined(parts: readonly SampledPiece[]): SampledPiece {
  const piece = {
    from: Math.min(...parts.map((part) => part.from)),
    to: Math.max(...parts.map((part) => part.to)),
    records: parts.reduce((sum, part) => sum + part.records, 0),
  };
  const sample = sampleOf(parts);
  return sample ? { ...piece, sample } : piece;
}

function sampleOf(parts: readonly SampledPiece[]): PieceSample | undefined {
  const holders = parts.filter((part) => part.sample && part.sample.keys.length > 0).sort((a, b) => b.sample!.keys.length - a.sample!.keys.length);
  for (const holder of holders) {
    const { keys, below } = holder.sample!;
    const lowest = keys[0]!;
    const highest = keys.at(-1)!;
    let under: number | undefined = below;
    for (const part of parts) {
      if (part === holder) continue;
      // Pages of one listing do not interleave: another part lies wholly at or below the sample's
      // lowest key, or at or above its highest (a shared second aside). Else (a merged piece around
      // it) the ranks are unknown with this sample: the next one is tried.
      if (part.to - 1 <= lowest) under += part.records;
      else if (part.from < highest) {
        under = undefined;
        break;
      }
    }
    if (under !== undefined) return { keys, below: under };
  }
  return undefined;
}

/**
 * Records a slice cut by estimate aims short of its whole pages: a slice one record over costs a
 * whole request more (a run at 300 ms then also waits on that straggler).
 */
export const PLAN_MARGIN_RECORDS = 10;

/**
 * The slices a full run starts with when a previous complete listing's profile is known (a
 * reconcile over data already stored): about `wanted` slices (`wantedSlices` at the rate and the
 * answer time the previous run saw, at most `most`), each about the same whole number of pages
 * (MIN_SLICE_RECORDS at least). The ends stay open (records created since, or before anything
 * listed, are in the first or last slice), so nothing depends on the profile being right: a wrong
 * one costs part-filled pages, and slices still split as they page. Undefined when fewer than two
 * slices fit: the run discovers the listing as a first sync does. Pure.
 *
 * Where: at the profile's piece edges (`cutsAtPieceEdges`), whose record counts are exact, so that
 * each slice holds whole pages when nothing changed (after a run whose pages were all full, every
 * piece is whole pages); when the pieces are too coarse for that (a profile of few pieces), where the
 * profile's records reach each multiple of the pages, taken as even within a piece (`cutsByEstimate`).
 */
export function plannedSlices(profile: ListingProfile, wanted: number, most = MAX_SLICES): SliceRange[] | undefined {
  const pieces = profile.pieces.filter((piece) => piece.records > 0 && piece.to > piece.from).sort((a, b) => a.from - b.from);
  const total = pieces.reduce((sum, piece) => sum + piece.records, 0);
  const aimed = Math.min(wanted, Math.floor(total / MIN_SLICE_RECORDS), Math.max(2, most));
  if (aimed < 2) return undefined;
  const pages = Math.max(MIN_SLICE_RECORDS / PAGE_RECORDS, Math.round(total / aimed / PAGE_RECORDS));
  const descending = profile.order === 'newest_first';
  // In the listing's order: the pieces it lists first come first.
  const walk = descending ? [...pieces].reverse() : pieces;
  // A piece merged past the slices' length (the profile's merges to PROFILE_PIECES) may leave no
  // way to tile the edges with slices of `pages` to a quarter more: longer slices then, before estimates.
  const exact = cutsAtPieceEdges(walk, descending, aimed, pages, most) ?? cutsAtPieceEdges(walk, descending, aimed, pages, most, 2 * pages);
  const cuts = exact ?? cutsByEstimate(walk, descending, total, pages, most).map((key) => ({ key, before: undefined }));
  if (cuts.length === 0) return undefined;
  // Where whole pages lie, counted from the listing's stable end (records are created at the other:
  // the newest), as records from an edge to the next page edge in the listing's order.
  const toGrid = (before: number) => (((descending ? total - before : -before) % PAGE_RECORDS) + PAGE_RECORDS) % PAGE_RECORDS;
  const ranges: SliceRange[] = [];
  for (let i = 0; i <= cuts.length; i += 1) {
    const near = cuts[i - 1];
    const far = cuts[i];
    // A slice whose first page takes the records up to a grid line then ends its pages on the grid:
    // as many requests as from its near edge when its far edge is nearer a grid line than its near
    // one is (the part-filled page moves from its end to its start), and the next plan finds page
    // edges on one grid to cut whole pages at. Else it pages from its near edge as always.
    const first = near?.before === undefined ? 0 : toGrid(near.before);
    // The far end of the last slice: newest first, the oldest record (on the grid: it is its anchor).
    const last = far?.before === undefined ? (descending && far === undefined && exact ? 0 : PAGE_RECORDS) : toGrid(far.before);
    const firstPage = first > 0 && first > last ? { firstPage: first } : {};
    ranges.push(
      descending
        ? { ...(far === undefined ? {} : { from: far.key }), ...(near === undefined ? {} : { to: near.key }), ...firstPage }
        : { ...(near === undefined ? {} : { from: near.key }), ...(far === undefined ? {} : { to: far.key }), ...firstPage },
    );
  }
  return ranges;
}

/**
 * How a planned slice's length away from the pages aimed at weighs against records left short of
 * whole pages: this times the squared difference in pages (four pages where three are aimed at: 10
 * records; five: 40). A longer slice may end the run later (its pages follow one another); a
 * slice of an object of a million records, hundreds of pages, is kept as even as the edges allow.
 */
export const UNEVEN_SLICE_RECORDS = 10;

/**
 * Cuts at piece edges (keys, in the listing's order, with the records listed before each) into about `aimed` slices (a quarter fewer to
 * an eighth more) of about `pages` pages (MIN_SLICE_RECORDS to `longest`: by default a quarter more, one page at least), chosen to leave the fewest records short of whole
 * pages, then to keep the slices even: a slice of exactly whole pages ends on a full page. An edge
 * between pieces that share a second cannot be cut at. Dynamic programming over the edges (at
 * most PROFILE_PIECES + 1 of them, so at most a few hundred thousand steps). Undefined when no such
 * cut exists (pieces coarser than the slices). Pure.
 */
export function cutsAtPieceEdges(
  walk: readonly ProfilePiece[],
  descending: boolean,
  aimed: number,
  pages: number,
  most = MAX_SLICES,
  longest = pages + Math.max(1, Math.ceil(pages / 4)),
): Array<{ key: number; before: number }> | undefined {
  const m = walk.length;
  const before = [0];
  for (const piece of walk) before.push(before.at(-1)! + piece.records);
  // Edge k lies between walk[k - 1] and walk[k]; its key is where the higher-keyed of the two starts.
  const apart = (k: number) => (descending ? walk[k]!.to <= walk[k - 1]!.from : walk[k - 1]!.to <= walk[k]!.from);
  const keyAt = (k: number) => (descending ? walk[k - 1]!.from : walk[k]!.from);
  const stops = [0];
  for (let k = 1; k < m; k += 1) if (apart(k)) stops.push(k);
  stops.push(m);
  // A few fewer than aimed is no loss: `wanted` counts the connection's whole rate, which the
  // connection's other objects share.
  const fewest = Math.max(2, Math.ceil(aimed * 0.75));
  const slices = Math.min(Math.max(2, most), aimed + Math.ceil(aimed / 8) + 1);
  // cost[s][i]: the least cost of cutting the listing up to stops[i] into s slices; via[s][i] the stop before.
  const cost = Array.from({ length: slices + 1 }, () => new Array<number>(stops.length).fill(Infinity));
  const via = Array.from({ length: slices + 1 }, () => new Array<number>(stops.length).fill(-1));
  cost[0]![0] = 0;
  for (let s = 1; s <= slices; s += 1) {
    for (let i = 1; i < stops.length; i += 1) {
      for (let j = i - 1; j >= 0; j -= 1) {
        const records = before[stops[i]!]! - before[stops[j]!]!;
        const held = Math.ceil(records / PAGE_RECORDS);
        if (held > longest) break;
        if (held < MIN_SLICE_RECORDS / PAGE_RECORDS) continue;
        const previous = cost[s - 1]![j]!;
        if (previous === Infinity) continue;
        // Records short of whole pages, and how far the slice is from the pages aimed at: a longer
        // slice ends the run later (its pages follow one another), which costs more than a few records'
        // room (what a plan leaves short is mostly the listing's own: see plannedSlices).
        const step = previous + (held * PAGE_RECORDS - records) + UNEVEN_SLICE_RECORDS * (held - pages) ** 2;
        if (step < cost[s]![i]!) {
          cost[s]![i] = step;
          via[s]![i] = j;
        }
      }
    }
  }
  let best: number | undefined;
  for (let s = fewest; s <= slices; s += 1) if (cost[s]![stops.length - 1]! < (best === undefined ? Infinity : cost[best]![stops.length - 1]!)) best = s;
  if (best === undefined) return undefined;
  const cuts: Array<{ key: number; before: number }> = [];
  for (let s = best, i = via[best]![stops.length - 1]!; s > 1; s -= 1, i = via[s]![i]!) cuts.unshift({ key: keyAt(stops[i]!), before: before[stops[i]!]! });
  return cuts;
}

/**
 * Cuts (keys, in the listing's order) where the profile's records reach each multiple of `pages`
 * pages less PLAN_MARGIN_RECORDS, taking records as even within a piece, a second apart at least.
 */
function cutsByEstimate(walk: readonly ProfilePiece[], descending: boolean, total: number, pages: number, most: number): number[] {
  const each = pages * PAGE_RECORDS - PLAN_MARGIN_RECORDS;
  // As many as hold `each`, the last one no more than that: none is left paging the rest alone.
  const count = Math.min(Math.max(2, most), Math.ceil(total / each));
  const cuts: number[] = [];
  let before = 0;
  for (const piece of walk) {
    for (;;) {
      const target = (cuts.length + 1) * each;
      if (cuts.length >= count - 1 || target >= total || target > before + piece.records) break;
      const share = (target - before) / piece.records;
      const key = Math.round(descending ? piece.to - share * (piece.to - piece.from) : piece.from + share * (piece.to - piece.from));
      const last = cuts.at(-1);
      // Cuts move one way, a second apart at least (a second is the finest a key tells).
      if (last !== undefined && (descending ? key >= last : key <= last)) {
        if (descending ? last - 1 > piece.from : last + 1 < piece.to) cuts.push(descending ? last - 1 : last + 1);
        else break;
      } else cuts.push(key);
    }
    before += piece.records;
  }
  return cuts;
}

/** Records per second of ordering key a page shows, from its record count and key span. Pure. */
export function pageDensity(records: number, span: { first: number; last: number }): number | undefined {
  const width = Math.abs(span.first - span.last);
  if (records < 2) return undefined;
  // A page whose records all share a second is very dense; one second is the finest a key tells.
  if (width === 0) return records;
  // n records span n - 1 gaps: records / width read a page of one a minute 1% dense, and pieces cut
  // by it came out 1% short (a slice of three pages 97 records into its third).
  return (records - 1) / width;
}

function withFrom(from: number | undefined): SliceRange {
  return from === undefined ? {} : { from };
}

function withTo(to: number | undefined): SliceRange {
  return to === undefined ? {} : { to };
}
