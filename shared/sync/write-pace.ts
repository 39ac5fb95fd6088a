/**
 * The pace of a sync run's writes into the store. Writes of one data object share one partition
 * key, which DynamoDB serves at about 1,000 write units a second: each write request is paced to
 * `STORE_WRITES_PER_SECOND` as it leaves (records are not spread over several partition keys: every
 * reader would then need one query per shard).
 */

/**
 * Write units per second into one data object's partition key: below the ~1,000 DynamoDB serves
 * per partition key value before it throttles (a unit is 1 KB of item: a record of 1.5 KB takes 2),
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
 * At most `limit` write units in any one second, counted when they are sent: a write goes once the
 * last second's writes leave room for it. A timer that fires late only sends later, never denser.
 */
export class WritesPerSecond {
  private readonly sent: Array<{ at: number; units: number }> = [];
  private total = 0;
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Resolves when `units` may be sent now (callers take turns, in order). */
  take(units: number): Promise<void> {
    const mine = this.turn.then(async () => {
      for (;;) {
        const now = this.now();
        while (this.sent.length > 0 && this.sent[0]!.at <= now - 1000) this.total -= this.sent.shift()!.units;
        if (this.total + units <= this.limit || this.sent.length === 0) {
          this.sent.push({ at: now, units });
          this.total += units;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, this.sent[0]!.at + 1000 - now)));
      }
    });
    this.turn = mine;
    return mine;
  }
}
