/**
 * Per-connection rate budgets: how fast the gateway may call one platform account.
 *
 * Platform limits belong to the customer's platform account (the payment platform allows about
 * 100 requests/s live and 25/s in test mode; small billing sites 150/min), so every caller in a
 * process that talks to the same account (a sync job, Test Connection, a conversational read)
 * draws from one budget, found by key through `rateBudgetFor`.
 *
 * The budget adapts (AIMD): each 429 halves the rate it hands out, each success adds a little back,
 * so a sync that keeps hitting 429 slows itself down and speeds up again once the platform is happy.
 *
 * Later, across Lambdas: this in-memory bucket only sees its own process. A DynamoDB-leased budget
 * can implement the same `RateBudget` interface: one item per connection
 * (`ACCOUNT#a` / `RATE#payment`) holds the shared bucket (tokens, last refill, effective rate,
 * paused-until); `take` serves from a small local block of tokens and, when the block runs out,
 * leases the next block (say 10 tokens) with one conditional UpdateItem that refills the shared
 * bucket by elapsed time and subtracts the block, waiting when the item has too few; `penalize`
 * writes the halved rate and the pause into the item so every Lambda slows down together; and
 * `recordSuccess` nudges the shared rate up every N successes to keep writes rare. Callers do not change.
 */

export interface RateBudget {
  /** Resolves when `cost` requests (default 1) may be sent now. */
  take(cost?: number): Promise<void>;
  /** The platform said 429: slow down, and send nothing for `retryAfterMs` when it said how long. */
  penalize(retryAfterMs?: number): void;
  /** A call succeeded: recover some of the rate a 429 took away. Optional for simple budgets. */
  recordSuccess?(): void;
}

export interface RateLimits {
  /** Sustained rate the platform allows this account, in requests per second. */
  ratePerSecond: number;
  /** Requests that may go out back to back after a quiet spell. */
  burst: number;
  /** The adaptive rate never drops below this. Default: a tenth of `ratePerSecond`. */
  minRatePerSecond?: number;
  /** Requests per second added back per success after a 429. Default: a fiftieth of `ratePerSecond`. */
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

const budgets = new Map<string, RateBudget>();

/**
 * The process's one budget for `key`. The first caller's limits create it; later callers share it
 * whatever limits they pass, so two code paths cannot accidentally double an account's rate.
 */
export function rateBudgetFor(key: string, limits: RateLimits, clock: Clock = systemClock): RateBudget {
  // The limits are part of the key: a connection whose plan changed (or a test key swapped for a
  // live one) gets a budget with its new limits at once, even in a warm process.
  const fullKey = `${key}|${limits.ratePerSecond}|${limits.burst}`;
  let budget = budgets.get(fullKey);
  if (!budget) {
    budget = new TokenBucketRateBudget(limits, clock);
    budgets.set(fullKey, budget);
  }
  return budget;
}

/** Tests, and a connection whose plan (and so its limits) changed: drop budgets so they are rebuilt. */
export function forgetRateBudgets(key?: string): void {
  for (const fullKey of [...budgets.keys()]) if (key === undefined || fullKey.startsWith(`${key}|`)) budgets.delete(fullKey);
}
