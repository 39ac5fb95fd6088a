/**
 * The pace of a sync run's writes into the store. DynamoDB serves about 1,000 write units a second
 * per partition key value; a data object's records are spread over a few keys, the shards of its
 * connection's record layout (shared/store/record-layout.ts), and each write request is paced, per
 * shard key it writes into, to `STORE_WRITES_PER_SECOND` as it leaves.
 */

/**
 * Write units per second into one partition key (one shard of a data object's records): below the ~1,000 DynamoDB serves
 * per partition key value before it throttles (a unit is 1 KB of item: a record of 1.5 KB takes 2; a payment record, 490–680 bytes, 1),
 * with room for writes that leave a little later than their turn. Each write request takes its
 * turn right before it leaves (the store awaits the pace), yet a busy event loop still sends some
 * a few milliseconds late: the busiest second measured is about 50 units over the pace
 * (`sync.full.max_writes_per_key_second`; 100 over when the turn was taken for a whole page before
 * its four requests).
 */
export const STORE_WRITES_PER_SECOND = 850;

/** DynamoDB's write units for a record's item: its size in KB, rounded up (keys and index included). */
export function writeUnits(record: { id: string; body: unknown }): number {
  return Math.max(1, Math.ceil((JSON.stringify(record).length + 200) / 1024));
}

/**
 * At most `limit` write units in any one second into each key, counted when they are sent: a write
 * request goes once the last second's writes into every key it touches leave room for it (a
 * BatchWriteItem spans several shards), and is counted in all of them at that one instant. A timer
 * that fires late only sends later, never denser.
 */
export class WritesPerSecond {
  private readonly keys = new Map<number, { sent: Array<{ at: number; units: number }>; total: number }>();
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly limit: number | (() => number),
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Units sent into `key` within the last second. */
  sentInLastSecond(key = 0): number {
    return this.windowOf(key, this.now()).total;
  }

  /** Resolves when these write units (by key; a number is one key's) may be sent now (callers take turns, in order). */
  take(units: number | ReadonlyMap<number, number>): Promise<void> {
    const wanted = typeof units === 'number' ? new Map([[0, units]]) : units;
    const mine = this.turn.then(async () => {
      for (;;) {
        const now = this.now();
        let wait = 0;
        const limit = typeof this.limit === 'number' ? this.limit : this.limit();
        for (const [key, n] of wanted) {
          const window = this.windowOf(key, now);
          if (window.total + n > limit && window.sent.length > 0) wait = Math.max(wait, window.sent[0]!.at + 1000 - now);
        }
        if (wait <= 0) {
          for (const [key, n] of wanted) {
            const window = this.windowOf(key, now);
            window.sent.push({ at: now, units: n });
            window.total += n;
          }
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, wait)));
      }
    });
    this.turn = mine;
    return mine;
  }

  /** One key's writes of the last second (older ones dropped). */
  private windowOf(key: number, now: number): { sent: Array<{ at: number; units: number }>; total: number } {
    let window = this.keys.get(key);
    if (!window) this.keys.set(key, (window = { sent: [], total: 0 }));
    while (window.sent.length > 0 && window.sent[0]!.at <= now - 1000) window.total -= window.sent.shift()!.units;
    return window;
  }
}

/**
 * A run's share of the table when DynamoDB refuses writes for the table's own throughput (a new
 * on-demand table takes 4,000 units a second for every tenant at once; docs/first-sync.md). No
 * limit until a write is refused; then at most half of what the run sent in the last second, grown
 * by a tenth each second without a refusal, and no limit again past `TABLE_SHARE_CEILING`. A run
 * that backs off when the table is full leaves room for the other tenants' small writes (their
 * webhook events and conversations), which otherwise wait behind its refusals (additive increase,
 * multiplicative decrease, as TCP shares a link).
 */
export class TableShare {
  private limit = Number.POSITIVE_INFINITY;
  private lastCut = Number.NEGATIVE_INFINITY;
  private grownTo = Number.NEGATIVE_INFINITY;
  private readonly window: WritesPerSecond;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.window = new WritesPerSecond(() => this.limit, now);
  }

  /** Resolves when these units may be sent within the run's share. */
  take(units: number): Promise<void> {
    this.grow();
    return this.window.take(units);
  }

  /** DynamoDB refused some of the run's writes (the SDK retried, or left items unprocessed): halve the share, once a second at most. */
  refused(): void {
    const now = this.now();
    // Refusals of writes sent before the last cut say nothing of the share since.
    if (now - this.lastCut < 1000) return;
    this.limit = Math.max(TABLE_SHARE_FLOOR, Math.min(this.limit, this.window.sentInLastSecond()) / 2);
    this.lastCut = now;
    this.grownTo = now;
  }

  /** The share now, in units a second (Infinity: none). */
  unitsPerSecond(): number {
    this.grow();
    return this.limit;
  }

  private grow(): void {
    if (!Number.isFinite(this.limit)) return;
    const now = this.now();
    const seconds = Math.floor((now - this.grownTo) / 1000);
    if (seconds < 1) return;
    this.limit *= 1.1 ** seconds;
    this.grownTo += seconds * 1000;
    if (this.limit > TABLE_SHARE_CEILING) this.limit = Number.POSITIVE_INFINITY;
  }
}

/**
 * The least share a run keeps, whatever it sent before a refusal: five pages of records (100 at 1
 * unit) a second, so a run refused at its first write does not start from nothing (at a tenth a
 * second it takes 22 s to grow to a new table's 4,000).
 */
export const TABLE_SHARE_FLOOR = 500;
/** Past this a run's share is no limit again: more than the store's pace allows one object (8 keys × 850). */
export const TABLE_SHARE_CEILING = 8 * STORE_WRITES_PER_SECOND;

/** At most `limit` of these tasks running at once; the others wait their turn, in order. */
export class AtMostAtOnce {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A turn handed over by a task that ended keeps `running` as it is.
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
