import * as z from 'zod';

/**
 * A simulated platform's rate limit. Give `perSecond` (payment platform style) or `perMinute`
 * (billing platform style). `burst` is the bucket size: how many requests may arrive at once
 * (defaults to one second's worth, or one minute's worth for per-minute limits, like the platforms).
 * `retryAfterSeconds` adds a Retry-After header to the 429; absent by default because neither
 * real platform reliably sends one.
 */
export const RateLimit = z
  .object({
    perSecond: z.number().positive().optional(),
    perMinute: z.number().positive().optional(),
    burst: z.number().positive().optional(),
    retryAfterSeconds: z.number().int().min(0).optional(),
  })
  .refine((limit) => (limit.perSecond === undefined) !== (limit.perMinute === undefined), {
    message: 'give exactly one of perSecond or perMinute',
  });
export type RateLimit = z.input<typeof RateLimit>;

/** A rate limit reduced to the two numbers a token bucket needs. */
export interface BucketShape {
  refillPerMs: number;
  capacity: number;
}

export function bucketShape(limit: RateLimit): BucketShape {
  const parsed = RateLimit.parse(limit);
  const perSecond = parsed.perSecond ?? (parsed.perMinute ?? 0) / 60;
  const defaultBurst = parsed.perMinute ?? perSecond;
  return { refillPerMs: perSecond / 1000, capacity: Math.max(1, parsed.burst ?? defaultBurst) };
}

/** A token bucket on an injectable clock: full at the start, refilled continuously. */
export class TokenBucket {
  private tokens: number;
  private lastRefill: number;

  constructor(
    private readonly shape: BucketShape,
    private readonly now: () => number,
  ) {
    this.tokens = shape.capacity;
    this.lastRefill = now();
  }

  tryTake(cost = 1): boolean {
    const now = this.now();
    const elapsed = Math.max(0, now - this.lastRefill);
    this.tokens = Math.min(this.shape.capacity, this.tokens + elapsed * this.shape.refillPerMs);
    this.lastRefill = now;
    if (this.tokens < cost) return false;
    this.tokens -= cost;
    return true;
  }
}

/**
 * One bucket per caller key (an API key), created on first use with the limit that applies to
 * that key. Counts the requests it refused so tests and benchmarks can read them.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  /** 429s served because a bucket was empty, in all and by caller key. */
  rejected = 0;
  readonly rejectedFor = new Map<string, number>();

  constructor(
    private readonly limitFor: (key: string) => RateLimit | undefined,
    private readonly now: () => number,
  ) {}

  /** Returns undefined when the request may go ahead, or the limit it broke. */
  check(key: string): RateLimit | undefined {
    const limit = this.limitFor(key);
    if (!limit) return undefined;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket(bucketShape(limit), this.now);
      this.buckets.set(key, bucket);
    }
    if (bucket.tryTake()) return undefined;
    this.rejected += 1;
    this.rejectedFor.set(key, (this.rejectedFor.get(key) ?? 0) + 1);
    return limit;
  }

  /** Forget every bucket, e.g. after the limits changed. */
  reset(): void {
    this.buckets.clear();
  }
}
