/**
 * An in-memory record collection for the simulators: records by id, plus sorted views kept
 * up to date as records come and go, so a list page of 100 out of 10,000 records is a binary
 * search and a short walk, not a sort.
 */

/** Where a record sits in an ordering: the ordering field's value (absent sorts first), then its id. */
export type SortKey = readonly [value: number | null, id: string];

export function compareKeys(a: SortKey, b: SortKey): number {
  const av = a[0] ?? Number.NEGATIVE_INFINITY;
  const bv = b[0] ?? Number.NEGATIVE_INFINITY;
  if (av !== bv) return av < bv ? -1 : 1;
  if (a[1] === b[1]) return 0;
  return a[1] < b[1] ? -1 : 1;
}

export interface ScanOptions<T> {
  /** `asc` walks from the smallest key up; `desc` from the largest down. */
  direction: 'asc' | 'desc';
  /** Start just past this key (exclusive), in the walking direction. */
  after?: SortKey;
  limit: number;
  /** Records that fail this are skipped. */
  matches?: (record: T) => boolean;
  /** Ends the walk: no record from here on can match (e.g. past a `created` bound). */
  stopAt?: (record: T) => boolean;
  /**
   * Skips straight to a range bound: `asc` starts at the first key >= it, `desc` at the last key
   * below it. Saves walking past records a range filter excludes anyway (a sliced listing).
   */
  startBound?: SortKey;
}

export interface ScanResult<T> {
  records: T[];
  hasMore: boolean;
}

/**
 * Records of one kind. `orderings` names the numeric fields lists can be sorted on; each
 * ordering is a total order because ties are broken by id.
 */
export class RecordCollection<T extends { id: string }, O extends string = string> {
  private readonly byId = new Map<string, T>();
  /** Sorted ascending by key; built on first use, then maintained in place. */
  private readonly sortedBy = new Map<O, T[]>();

  constructor(private readonly orderings: Record<O, (record: T) => number | null | undefined>) {}

  get size(): number {
    return this.byId.size;
  }

  get(id: string): T | undefined {
    return this.byId.get(id);
  }

  values(): IterableIterator<T> {
    return this.byId.values();
  }

  keyOf(ordering: O, record: T): SortKey {
    return [this.orderings[ordering](record) ?? null, record.id];
  }

  /** Inserts a new record or replaces the one with the same id. */
  put(record: T): void {
    const previous = this.byId.get(record.id);
    this.byId.set(record.id, record);
    for (const [ordering, sorted] of this.sortedBy) {
      const newKey = this.keyOf(ordering, record);
      if (previous) {
        const oldKey = this.keyOf(ordering, previous);
        const at = lowerBound(sorted, oldKey, (r) => this.keyOf(ordering, r));
        if (compareKeys(oldKey, newKey) === 0 && sorted[at]?.id === record.id) {
          sorted[at] = record;
          continue;
        }
        if (sorted[at]?.id === previous.id) sorted.splice(at, 1);
      }
      sorted.splice(lowerBound(sorted, newKey, (r) => this.keyOf(ordering, r)), 0, record);
    }
  }

  /** Inserts many records at once (seeding): the sorted views are rebuilt on next use instead of spliced. */
  putMany(records: Iterable<T>): void {
    this.sortedBy.clear();
    for (const record of records) this.byId.set(record.id, record);
  }

  remove(id: string): T | undefined {
    const previous = this.byId.get(id);
    if (!previous) return undefined;
    this.byId.delete(id);
    for (const [ordering, sorted] of this.sortedBy) {
      const at = lowerBound(sorted, this.keyOf(ordering, previous), (r) => this.keyOf(ordering, r));
      if (sorted[at]?.id === id) sorted.splice(at, 1);
    }
    return previous;
  }

  /** All records in ascending key order (a shared array: do not modify). */
  sorted(ordering: O): readonly T[] {
    let sorted = this.sortedBy.get(ordering);
    if (!sorted) {
      const keyed = [...this.byId.values()].map((record) => ({ record, key: this.keyOf(ordering, record) }));
      keyed.sort((a, b) => compareKeys(a.key, b.key));
      sorted = keyed.map((entry) => entry.record);
      this.sortedBy.set(ordering, sorted);
    }
    return sorted;
  }

  /** Up to `limit` matching records after a cursor, and whether more exist. */
  scan(ordering: O, options: ScanOptions<T>): ScanResult<T> {
    const sorted = this.sorted(ordering);
    const keyOf = (r: T): SortKey => this.keyOf(ordering, r);
    const records: T[] = [];
    const step = options.direction === 'asc' ? 1 : -1;
    let index: number;
    if (options.direction === 'asc') {
      index = options.after ? upperBound(sorted, options.after, keyOf) : 0;
      if (options.startBound) index = Math.max(index, lowerBound(sorted, options.startBound, keyOf));
    } else {
      index = (options.after ? lowerBound(sorted, options.after, keyOf) : sorted.length) - 1;
      if (options.startBound) index = Math.min(index, lowerBound(sorted, options.startBound, keyOf) - 1);
    }

    for (; index >= 0 && index < sorted.length; index += step) {
      const record = sorted[index] as T;
      if (options.stopAt?.(record)) break;
      if (options.matches && !options.matches(record)) continue;
      if (records.length === options.limit) return { records, hasMore: true };
      records.push(record);
    }
    return { records, hasMore: false };
  }
}

/** First index whose key is >= `key`. */
function lowerBound<T>(sorted: readonly T[], key: SortKey, keyOf: (record: T) => SortKey): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(keyOf(sorted[mid] as T), key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** First index whose key is > `key`. */
function upperBound<T>(sorted: readonly T[], key: SortKey, keyOf: (record: T) => SortKey): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(keyOf(sorted[mid] as T), key) <= 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random-looking ids (`cus_` + base62) from a seeded generator, so seeded runs repeat exactly. */
export function base62Id(prefix: string, length: number, random: () => number): string {
  let id = prefix;
  for (let i = 0; i < length; i += 1) id += BASE62[Math.floor(random() * 62)];
  return id;
}

/** A deep copy of a JSON-shaped record, so an event keeps the record as it was. */
export function snapshot<T>(record: T): T {
  return structuredClone(record);
}

/** Adds whole months in UTC, as the platform's billing periods do. */
export function addMonths(unixSeconds: number, months: number): number {
  const date = new Date(unixSeconds * 1000);
  date.setUTCMonth(date.getUTCMonth() + months);
  return Math.floor(date.getTime() / 1000);
}

export interface SeedTiming {
  /** Unix seconds of the first record; default: far enough back that the last one is now. */
  fromSeconds?: number;
  /** Seconds between records. Default 60. */
  spacingSeconds?: number;
  /** How many consecutive records share one second (to test cursors on ties). Default 1. */
  perSecond?: number;
}

/** When the i-th of n seeded records was created. */
export function seededCreated(index: number, count: number, nowSeconds: number, timing: SeedTiming): number {
  const spacing = timing.spacingSeconds ?? 60;
  const perSecond = Math.max(1, timing.perSecond ?? 1);
  const steps = Math.ceil(count / perSecond);
  const from = timing.fromSeconds ?? nowSeconds - steps * spacing;
  return from + Math.floor(index / perSecond) * spacing;
}
