import { joined, mergedTo, PAGE_RECORDS, PROFILE_PIECES, type ProfilePiece, type SampledPiece } from './slice-plan';

/**
 * A completed full listing's profile re-cut on one page grid, so that the next full run's plan
 * (`plannedSlices`, shared/sync/slice-plan.ts) can cut its slices where pages end. Pure.
 */

/**
 * A completed listing's profile re-cut on one page grid: ranks counted from the oldest record (the
 * listing's stable end, as `plannedSlices` counts), so that a later plan can cut whole pages at its
 * edges. A first sync's pieces are page edges of its own slices, each slice on its own grid, and an
 * edge lies on the global one only by chance (1 in 100): most of its slices' part-filled pages
 * could not be avoided by any plan. Each sampled piece is cut where its sample crosses a multiple of
 * PAGE_RECORDS (the sample's keys have known ranks: the pieces below, then `below`); a grid record
 * sharing its second with the one before it cannot be cut from it by a key range, so that cut goes to
 * the next second in the sample, leaving the piece above a few records short of whole pages rather
 * than over (one record over costs a whole request). Then the edges off the grid between sampled
 * pieces are merged away, so each piece holds whole pages but the newest (exact counts, at most
 * `most`). Pieces without a sample (a run continued in another invocation) are left as they were. Pure.
 */
export function onPageGrid(pieces: readonly SampledPiece[], most = PROFILE_PIECES): ProfilePiece[] {
  type Cut = ProfilePiece & { sampled: boolean; cutBelow: boolean };
  const cut: Cut[] = [];
  let base = 0;
  for (const piece of apartAtSeconds(pieces)) {
    const sampled = piece.sample !== undefined;
    let from = piece.from;
    let under = 0;
    let cutBelow = false;
    for (const at of gridCuts(piece, base)) {
      if (at.key <= from || at.key >= piece.to || at.below <= under || at.below >= piece.records) continue;
      cut.push({ from, to: at.key, records: at.below - under, sampled, cutBelow });
      from = at.key;
      under = at.below;
      cutBelow = true;
    }
    cut.push({ from, to: piece.to, records: piece.records - under, sampled, cutBelow });
    base += piece.records;
  }
  const kept: Cut[] = [];
  let ranked = 0;
  for (const piece of cut) {
    const previous = kept.at(-1);
    const onGrid = ranked % PAGE_RECORDS === 0;
    if (previous && !onGrid && !piece.cutBelow && previous.sampled && piece.sampled) {
      previous.to = Math.max(previous.to, piece.to);
      previous.records += piece.records;
    } else kept.push({ ...piece });
    ranked += piece.records;
  }
  const profile = kept.filter((piece) => piece.records > 0).map(({ from, to, records }) => ({ from, to, records }));
  return mergedTo(profile, most).map(({ from, to, records }) => ({ from, to, records }));
}

/**
 * The pieces in key order, none sharing a second with the next: where a page edge fell between two
 * records of one second, the upper piece's records of that second move down into the lower one when
 * its sample shows them (its lowest keys), else the two become one. A cut at the upper piece's
 * `from` then has exactly the records below it that the pieces count. Pure.
 */
function apartAtSeconds(pieces: readonly SampledPiece[]): SampledPiece[] {
  const apart: SampledPiece[] = [];
  for (const piece of [...pieces].sort((a, b) => a.from - b.from)) {
    const lower = apart.at(-1);
    if (!lower || piece.from >= lower.to) {
      apart.push(piece);
      continue;
    }
    const keys = piece.sample?.below === 0 ? piece.sample.keys : [];
    const tied = keys.filter((key) => key < lower.to).length;
    if (tied === 0 && keys.length > 0) {
      apart.push({ ...piece, from: lower.to });
      continue;
    }
    if (tied === 0 || tied >= keys.length) {
      apart[apart.length - 1] = joined([lower, piece]);
      continue;
    }
    const moved = keys.slice(0, tied);
    const lowerWhole = lower.sample && lower.sample.below + lower.sample.keys.length === lower.records;
    apart[apart.length - 1] = {
      ...lower,
      records: lower.records + tied,
      ...(lower.sample ? { sample: lowerWhole ? { keys: [...lower.sample.keys, ...moved], below: lower.sample.below } : lower.sample } : {}),
    };
    apart.push({ from: lower.to, to: piece.to, records: piece.records - tied, sample: { keys: keys.slice(tied), below: 0 } });
  }
  return apart;
}

/**
 * Where the global page grid crosses a sampled piece: keys to cut at and the piece's records below
 * each. `base`: the records of the pieces below. Only between the sample's lowest and highest keys
 * are ranks known (records outside it may share those seconds).
 */
function gridCuts(piece: SampledPiece, base: number): Array<{ key: number; below: number }> {
  if (!piece.sample) return [];
  const { keys, below } = piece.sample;
  const lowest = base + below;
  const cuts: Array<{ key: number; below: number }> = [];
  for (let grid = (Math.floor(lowest / PAGE_RECORDS) + 1) * PAGE_RECORDS; grid - lowest < keys.length; grid += PAGE_RECORDS) {
    let at = grid - lowest;
    // The grid record shares its second with the one before it: the next second boundary up.
    while (at < keys.length && keys[at] === keys[at - 1]) at += 1;
    if (at >= keys.length) break;
    cuts.push({ key: keys[at]!, below: below + at });
  }
  return cuts;
}
