/**
 * Per-connection rate budgets: how fast the gateway may call one platform account.
 *
 * Platform limits belong to the customer's platform account (the payment platform allows about
 * 100 requests/s live and 25/s in test mode; billing sites 150 to 3,500 a minute by plan), so
 * every caller that talks to the same account draws from one budget: every slice of every sync
 * job, Test Connection in the API function, and the webhook worker's record fetches, whichever
 * Lambda they run in.
 *
 * How (`SharedRateBudget`): a token bucket kept in the table, one item per connection
 * (`ACCOUNT#a` / `RATE#payment`), in the GCRA form: the item holds the time up to which the
 * connection's rate is already spoken for (`tat`). A caller reserves a small block of requests
 * (about 100 ms' worth; more while the table answers slowly) with one conditional UpdateItem that
 * pushes `tat` on, then sends each request when its turn in the block comes, and reserves the next
 * block before this one runs out. A fixed share per caller was the alternative; it
 * was not chosen because a share a caller does not use is lost (the sync could never use more
 * than its share of the limit), and the webhook worker runs in as many Lambdas as there are
 * event batches, so no fixed split can bound their sum.
 *
 * It adapts (AIMD): a 429 halves the rate for every caller (at most once a second, so a burst of
 * 429s from many slices in flight counts once), and the rate climbs back linearly, a tenth of the
 * limit per second, with no write needed (it is computed from the time of the last 429).
 * A `Retry-After` pushes `tat` past the pause, so no caller sends until it ends.
 *
 * Without a table (unit tests, one-off tools) the same budget keeps its bucket in memory
 * (`MemoryRateBuckets`); `TokenBucketRateBudget` is the plain in-process bucket, for limits that
 * no other process shares (the store's per-partition write pace).
 */

export interface RateBudget {
  /** Resolves when `cost` requests (default 1) may be sent now. */
  take(cost?: number): Promise<void>;
  /** The platform said 429: slow down, and send nothing for `retryAfterMs` when it said how long. */
  penalize(retryAfterMs?: number): void;
  /** A call succeeded: recover some of the rate a 429 took away. Optional for simple budgets. */
  recordSuccess?(): void;
  /** How fast it hands out requests now, and how long the latest taker had to wait for its turn. */
  pace?(): BudgetPace;
}

export interface BudgetPace {
  /** The rate handed out now (below the limit after a 429). */
  ratePerSecond: number;
  /** How long the latest request waited for its turn: above zero, callers are held back by the budget. */
  waitMs: number;
}

export interface RateLimits {
  /** Sustained rate the platform allows this account, in requests per second. */
  ratePerSecond: number;
  /** Requests that may go out back to back after a quiet spell. */
  burst: number;
  /** The adaptive rate never drops below this. Default: a tenth of `ratePerSecond`. */
  minRatePerSecond?: number;
  /** Requests per second added back per success after a 429 (`TokenBucketRateBudget`). Default: a fiftieth of `ratePerSecond`. */
  recoveryPerSuccess?: number;
}

export interface Clock {
  /** Milliseconds; only differences matter. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** For one-off calls with no shared limit to respect, such as an OAuth code exchange. */
export const unlimitedRateBudget: RateBudget = {
  take: async () => {},
  penalize: () => {},
};

/**
 * A token bucket holding up to `burst` tokens, refilled at the effective rate. A caller that finds
 * too few tokens takes them anyway (the balance goes negative) and sleeps until its share has
 * accrued. Concurrent callers therefore queue in arrival order without a lock, and the bucket
 * never hands out more than its rate.
 */
export class TokenBucketRateBudget implements RateBudget {
  readonly limits: Readonly<Required<RateLimits>>;
  private tokens: number;
  private effectiveRate: number;
  /** Tokens have been accounted up to this time; it lies in the future while a Retry-After pause runs. */
  private accountedUntil: number;

  constructor(limits: RateLimits, private readonly clock: Clock = systemClock) {
    if (!(limits.ratePerSecond > 0) || !(limits.burst >= 1)) {
      throw new RangeError('a rate budget needs ratePerSecond > 0 and burst >= 1');
    }
    this.limits = {
      ratePerSecond: limits.ratePerSecond,
      burst: limits.burst,
      minRatePerSecond: Math.min(limits.minRatePerSecond ?? limits.ratePerSecond / 10, limits.ratePerSecond),
      recoveryPerSuccess: limits.recoveryPerSuccess ?? limits.ratePerSecond / 50,
    };
    this.tokens = limits.burst;
    this.effectiveRate = limits.ratePerSecond;
    this.accountedUntil = clock.now();
  }

  /** The rate currently handed out, in requests per second (lower than the limit after 429s). */
  get effectiveRatePerSecond(): number {
    return this.effectiveRate;
  }

  async take(cost = 1): Promise<void> {
    if (!(cost > 0)) throw new RangeError('cost must be positive');
    const now = this.clock.now();
    this.refill(now);
    this.tokens -= cost;
    const accrualStartsAt = Math.max(now, this.accountedUntil);
    const deficitMs = this.tokens < 0 ? (-this.tokens / this.effectiveRate) * 1000 : 0;
    const waitMs = accrualStartsAt - now + deficitMs;
    if (waitMs > 0) await this.clock.sleep(Math.ceil(waitMs));
  }

  penalize(retryAfterMs?: number): void {
    const now = this.clock.now();
    this.refill(now);
    this.effectiveRate = Math.max(this.limits.minRatePerSecond, this.effectiveRate / 2);
    // Whatever was saved up was evidently too much: start again from empty.
    this.tokens = Math.min(this.tokens, 0);
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      this.accountedUntil = Math.max(this.accountedUntil, now + retryAfterMs);
    }
  }

  recordSuccess(): void {
    this.refill(this.clock.now());
    this.effectiveRate = Math.min(this.limits.ratePerSecond, this.effectiveRate + this.limits.recoveryPerSuccess);
  }

  private refill(now: number): void {
    if (now <= this.accountedUntil) return;
    const accrued = ((now - this.accountedUntil) / 1000) * this.effectiveRate;
    this.tokens = Math.min(this.limits.burst, this.tokens + accrued);
    this.accountedUntil = now;
  }
}

/** The registry key for one account's connection to one platform, e.g. `payment:acme`. */
export function connectionRateKey(accountId: string, connector: string): string {
  return `${connector}:${accountId}`;
}

/**
 * The key of one endpoint's own budget within a connection's, for platforms that limit each
 * endpoint too (`payment:acme|GET /v1/customers`). It starts with the connection's key and `|`,
 * so forgetting a connection's budgets forgets its endpoints' as well.
 */
export function endpointRateKey(connectionKey: string, endpoint: string): string {
  return `${connectionKey}|${endpoint}`;
}

/** The account and connector a `connectionRateKey` names, and the endpoint an `endpointRateKey` adds. */
export function parseConnectionRateKey(key: string): { accountId: string; connector: string; endpoint?: string } {
  const at = key.indexOf(':');
  const bar = key.indexOf('|');
  const end = bar < 0 ? key.length : bar;
  if (at <= 0 || at >= end - 1 || bar === key.length - 1) throw new TypeError(`not a connection rate key: ${key}`);
  return { connector: key.slice(0, at), accountId: key.slice(at + 1, end), ...(bar < 0 ? {} : { endpoint: key.slice(bar + 1) }) };
}

// ---------- the shared budget ----------

/** One connection's bucket as every caller sees it. */
export interface RateBucketState {
  /** GCRA's "theoretical arrival time" (epoch ms): the connection's rate is spoken for up to here. */
  tat: number;
  /** The rate (requests/s) the last 429 set, and when (epoch ms); the rate recovers from there. */
  slowedTo?: number;
  slowedAt?: number;
}

/** Where the buckets live: the table (every Lambda shares them), or memory (one process). */
export interface RateBuckets {
  /** Atomically: the reservation starts at max(tat, now) and `tat` moves `spanMs` past it. */
  reserveRate(key: string, spanMs: number, now: number): Promise<{ start: number; state: RateBucketState }>;
  /**
   * Atomically records a 429: the rate drops to `rate` unless another caller already lowered it
   * after `unlessSlowedSince`; with `pausedUntil`, `tat` moves at least there (Retry-After).
   */
  slowRate(key: string, change: { rate: number; now: number; unlessSlowedSince: number; pausedUntil?: number }): Promise<RateBucketState>;
}

/** After a 429 the rate climbs back by this share of the limit per second (50% to 100% in 5 s). */
export const RECOVERY_SHARE_PER_SECOND = 0.1;
/** A 429 within this long of the previous one does not halve the rate again (one storm, one halving). */
export const SLOW_DOWN_WINDOW_MS = 1_000;
/** Each reservation covers at least this much of the connection's time line, and at most the longer. */
const BLOCK_MS = 100;
const LONGEST_BLOCK_MS = 1_000;

/** The rate a bucket hands out at `now`: the limit, or what the last 429 left, recovered linearly. Pure. */
export function currentRate(limits: Pick<Required<RateLimits>, 'ratePerSecond' | 'minRatePerSecond'>, state: Pick<RateBucketState, 'slowedTo' | 'slowedAt'>, now: number): number {
  if (state.slowedTo === undefined || state.slowedAt === undefined) return limits.ratePerSecond;
  const recovered = state.slowedTo + (Math.max(0, now - state.slowedAt) / 1000) * limits.ratePerSecond * RECOVERY_SHARE_PER_SECOND;
  return Math.max(limits.minRatePerSecond, Math.min(limits.ratePerSecond, recovered));
}

/**
 * How many requests one reservation covers at `rate`: about 100 ms' worth, or twice what a
 * reservation takes to make when the table answers slowly (so the next one is made before this
 * one runs out), or as many as callers are waiting for (`waiting`: a sync starting with ten slices
 * on one endpoint at 25/s wants ten at once, not three now and three a table round trip later), at
 * most a second's worth, at least one. Pure.
 */
export function blockSize(rate: number, reserveMs = 0, waiting = 0): number {
  const span = Math.min(LONGEST_BLOCK_MS, Math.max(BLOCK_MS, 2 * reserveMs));
  const longest = Math.max(1, Math.round((rate * LONGEST_BLOCK_MS) / 1000));
  return Math.max(1, Math.round((rate * span) / 1000), Math.min(waiting, longest));
}

/**
 * When each request of a reservation may go (GCRA): the k-th is due at start + (k + 1) intervals,
 * and may go `burst` intervals early, so an idle connection sends its first `burst` at once. Pure.
 */
export function sendTimes(start: number, count: number, intervalMs: number, burst: number, now: number): number[] {
  return Array.from({ length: count }, (_, k) => Math.max(now, start + (k + 1 - burst) * intervalMs));
}

/** Buckets in this process only. */
export class MemoryRateBuckets implements RateBuckets {
  private readonly states = new Map<string, RateBucketState>();

  async reserveRate(key: string, spanMs: number, now: number): Promise<{ start: number; state: RateBucketState }> {
    const state = this.states.get(key) ?? { tat: 0 };
    const start = Math.max(state.tat, now);
    const next = { ...state, tat: start + spanMs };
    this.states.set(key, next);
    return { start, state: { ...next } };
  }

  async slowRate(key: string, change: { rate: number; now: number; unlessSlowedSince: number; pausedUntil?: number }): Promise<RateBucketState> {
    const state = { ...(this.states.get(key) ?? { tat: 0 }) };
    if (state.slowedAt === undefined || state.slowedAt < change.unlessSlowedSince) {
      state.slowedTo = change.rate;
      state.slowedAt = change.now;
    }
    if (change.pausedUntil !== undefined) state.tat = Math.max(state.tat, change.pausedUntil);
    this.states.set(key, state);
    return { ...state };
  }

  /** Forgets every bucket, or a connection's and its endpoints'. */
  forget(key?: string): void {
    for (const held of [...this.states.keys()]) if (key === undefined || held === key || held.startsWith(`${key}|`)) this.states.delete(held);
  }
}

/**
 * A connection's budget over shared buckets: reserves a block of requests at a time (one write to
 * the table per block), hands them out in order, and tells the bucket about 429s.
 */
export class SharedRateBudget implements RateBudget {
  readonly limits: Readonly<Required<RateLimits>>;
  private slots: number[] = [];
  private leasing: Promise<void> | undefined;
  private state: RateBucketState = { tat: 0 };
  /** A slow-down being written: the next reservation waits for it, so it is made at the slower rate. */
  private slowing: Promise<void> = Promise.resolve();
  private lastWaitMs = 0;
  /** Requests in the latest reservation, and how long reservations take to make (moving average). */
  private lastBlock = 0;
  private reserveMs = 0;
  /** Bumped by each 429, so a reservation made before it is not handed out. */
  private generation = 0;
  /** Requests callers asked for that no reservation has covered yet: the next one covers them. */
  private waiting = 0;

  constructor(
    readonly key: string,
    limits: RateLimits,
    private readonly buckets: RateBuckets,
    private readonly clock: Clock = systemClock,
  ) {
    this.limits = checkedLimits(limits);
  }

  async take(cost = 1): Promise<void> {
    if (!(cost > 0)) throw new RangeError('cost must be positive');
    let due = 0;
    let taken = 0;
    this.waiting += cost;
    try {
      while (taken < cost) {
        const slot = this.slots.shift();
        if (slot === undefined) {
          await this.lease();
          continue;
        }
        due = Math.max(due, slot);
        taken += 1;
        this.waiting -= 1;
      }
    } finally {
      this.waiting -= cost - taken;
    }
    // Half a block left: reserve the next one now, so callers do not wait on the table.
    if (this.slots.length <= this.lastBlock / 2) void this.lease().catch(() => undefined);
    const waitMs = due - this.clock.now();
    this.lastWaitMs = Math.max(0, waitMs);
    if (waitMs > 0) await this.clock.sleep(Math.ceil(waitMs));
  }

  penalize(retryAfterMs?: number): void {
    const now = this.clock.now();
    // Requests reserved at the pace the platform just refused are given up (a reservation being
    // made now too: it was asked for at that pace).
    this.slots = [];
    this.generation += 1;
    const rate = Math.max(this.limits.minRatePerSecond, currentRate(this.limits, this.state, now) / 2);
    const lowered = this.state.slowedAt === undefined || this.state.slowedAt < now - SLOW_DOWN_WINDOW_MS;
    // Past the pause by a burst's worth: a reservation's first requests may go a burst early.
    const pausedUntil = retryAfterMs !== undefined && retryAfterMs > 0 ? now + retryAfterMs + (this.limits.burst * 1000) / rate : undefined;
    if (lowered) this.state = { ...this.state, slowedTo: rate, slowedAt: now };
    if (pausedUntil !== undefined) this.state = { ...this.state, tat: Math.max(this.state.tat, pausedUntil) };
    const change = { rate, now, unlessSlowedSince: now - SLOW_DOWN_WINDOW_MS, ...(pausedUntil === undefined ? {} : { pausedUntil }) };
    this.slowing = this.slowing
      .then(() => this.buckets.slowRate(this.key, change))
      .then((state) => {
        this.state = state;
      })
      // The slower pace already holds here; the next reservation's answer brings the shared state.
      .catch(() => undefined);
  }

  pace(): BudgetPace {
    return { ratePerSecond: currentRate(this.limits, this.state, this.clock.now()), waitMs: this.lastWaitMs };
  }

  /** The rate this budget hands out now (for tests and the benchmarks). */
  get effectiveRatePerSecond(): number {
    return currentRate(this.limits, this.state, this.clock.now());
  }

  private lease(): Promise<void> {
    this.leasing ??= (async () => {
      await this.slowing;
      // Callers arriving in the same turn of the event loop (a sync's slices starting together)
      // are counted before the reservation is sized.
      await new Promise((resolve) => setImmediate(resolve));
      const generation = this.generation;
      const now = this.clock.now();
      const rate = currentRate(this.limits, this.state, now);
      const intervalMs = 1000 / rate;
      const count = blockSize(rate, this.reserveMs, this.waiting);
      const { start, state } = await this.buckets.reserveRate(this.key, count * intervalMs, now);
      const took = Math.max(0, this.clock.now() - now);
      this.reserveMs = this.reserveMs === 0 ? took : this.reserveMs * 0.7 + took * 0.3;
      this.lastBlock = count;
      this.state = { ...state, ...(this.state.slowedAt !== undefined && (state.slowedAt ?? 0) < this.state.slowedAt ? { slowedTo: this.state.slowedTo, slowedAt: this.state.slowedAt } : {}) };
      if (generation === this.generation) this.slots.push(...sendTimes(start, count, intervalMs, this.limits.burst, now));
    })().finally(() => {
      this.leasing = undefined;
    });
    return this.leasing;
  }
}

function checkedLimits(limits: RateLimits): Required<RateLimits> {
  if (!(limits.ratePerSecond > 0) || !(limits.burst >= 1)) {
    throw new RangeError('a rate budget needs ratePerSecond > 0 and burst >= 1');
  }
  return {
    ratePerSecond: limits.ratePerSecond,
    burst: limits.burst,
    minRatePerSecond: Math.min(limits.minRatePerSecond ?? limits.ratePerSecond / 10, limits.ratePerSecond),
    recoveryPerSuccess: limits.recoveryPerSuccess ?? limits.ratePerSecond / 50,
  };
}

// ---------- one budget per connection and process ----------

const processBuckets = new MemoryRateBuckets();
/** Budgets by where their buckets live, then by connection and limits. */
const budgets = new Map<RateBuckets, Map<string, RateBudget>>();

export interface RateBudgetOptions {
  /** Where the connection's bucket lives: the gateway's store, so every Lambda shares it. Default: this process's memory. */
  buckets?: RateBuckets;
  clock?: Clock;
}

/**
 * The process's one budget for `key`, over `buckets` (the table: shared by every Lambda). The first
 * caller's limits create it; later callers with the same limits share it, so two code paths in one
 * process also reserve their requests from one queue.
 */
export function rateBudgetFor(key: string, limits: RateLimits, options: RateBudgetOptions = {}): RateBudget {
  const buckets = options.buckets ?? processBuckets;
  // The limits are part of the key: a connection whose plan changed (or a test key swapped for a
  // live one) gets a budget with its new limits at once, even in a warm process.
  const fullKey = `${key}|${limits.ratePerSecond}|${limits.burst}`;
  let held = budgets.get(buckets);
  if (!held) {
    held = new Map();
    budgets.set(buckets, held);
  }
  let budget = held.get(fullKey);
  if (!budget) {
    budget = new SharedRateBudget(key, limits, buckets, options.clock ?? systemClock);
    held.set(fullKey, budget);
  }
  return budget;
}

/** Tests, and a connection whose plan (and so its limits) changed: drop budgets so they are rebuilt. */
export function forgetRateBudgets(key?: string): void {
  for (const held of budgets.values()) {
    for (const fullKey of [...held.keys()]) if (key === undefined || fullKey.startsWith(`${key}|`)) held.delete(fullKey);
  }
  processBuckets.forget(key);
}
