import { afterEach, describe, expect, it } from 'vitest';
import {
  MemoryRateBuckets,
  RECOVERY_SHARE_PER_SECOND,
  SLOW_DOWN_WINDOW_MS,
  SharedRateBudget,
  TokenBucketRateBudget,
  blockSize,
  connectionRateKey,
  currentRate,
  endpointRateKey,
  forgetRateBudgets,
  parseConnectionRateKey,
  rateBudgetFor,
  sendTimes,
  type Clock,
  type RateBuckets,
} from '../../shared/http/rate-budget';

/** Simulated time: sleeping moves the clock forward at once and is recorded. */
function fakeClock(): Clock & { sleeps: number[]; advance(ms: number): void } {
  let t = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms) => {
      sleeps.push(ms);
      t += ms;
    },
    advance: (ms) => {
      t += ms;
    },
  };
}

/** Simulated time that passes only when every caller waits: sleeps end in time order, each at its own time. */
function virtualClock(): Clock & { runUntil(done: () => boolean): Promise<void> } {
  let t = 0;
  const timers: Array<{ at: number; wake: () => void }> = [];
  const settle = async () => {
    for (let i = 0; i < 10; i += 1) await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    now: () => t,
    sleep: (ms) => new Promise<void>((wake) => timers.push({ at: t + ms, wake })),
    async runUntil(done) {
      await settle();
      while (!done()) {
        if (timers.length === 0) throw new Error('every caller waits on something other than the clock');
        timers.sort((a, b) => a.at - b.at);
        const next = timers[0]!.at;
        t = Math.max(t, next);
        while (timers.length > 0 && timers[0]!.at <= t) timers.shift()!.wake();
        await settle();
      }
    },
  };
}

async function takeMany(budget: TokenBucketRateBudget, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await budget.take();
}

afterEach(() => forgetRateBudgets());

describe('TokenBucketRateBudget', () => {
  it('lets a burst through without waiting', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 5 }, clock);
    await takeMany(budget, 5);
    expect(clock.sleeps).toEqual([]);
  });

  it('N takes at rate R after the burst take (N - burst) / R simulated seconds', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 1 }, clock);
    await takeMany(budget, 101);
    expect(clock.now()).toBeGreaterThanOrEqual(10_000);
    expect(clock.now()).toBeLessThanOrEqual(10_100); // rounding up to whole ms per sleep
  });

  it('refills while idle, but never beyond the burst', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 3 }, clock);
    await takeMany(budget, 3);
    clock.advance(60_000); // a minute idle is worth 600 tokens, but the bucket holds 3
    await takeMany(budget, 3);
    expect(clock.sleeps).toEqual([]);
    await budget.take();
    expect(clock.sleeps).toEqual([100]);
  });

  it('queues concurrent callers in arrival order without overbooking', async () => {
    const clock = fakeClock();
    const sleeps: number[] = [];
    // A clock whose sleep does not move time, so we see the wait each caller was handed.
    const frozen: Clock = { now: () => 0, sleep: async (ms) => void sleeps.push(ms) };
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 1 }, frozen);
    await Promise.all([budget.take(), budget.take(), budget.take(), budget.take()]);
    expect(sleeps).toEqual([100, 200, 300]);
    expect(clock.sleeps).toEqual([]);
  });

  it('takes a cost of several tokens at once', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 1 }, clock);
    await budget.take(1);
    await budget.take(5);
    expect(clock.sleeps).toEqual([500]);
  });

  it('penalize halves the effective rate, so the same work takes twice as long', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 1, recoveryPerSuccess: 0.5 }, clock);
    budget.penalize();
    expect(budget.effectiveRatePerSecond).toBe(5);
    const start = clock.now();
    await takeMany(budget, 50);
    expect(clock.now() - start).toBeGreaterThanOrEqual(10_000); // 50 at 5/s, the bucket emptied by the 429
    expect(clock.now() - start).toBeLessThanOrEqual(10_050);

    budget.penalize();
    expect(budget.effectiveRatePerSecond).toBe(2.5);
  });

  it('never drops below the minimum rate', () => {
    const budget = new TokenBucketRateBudget({ ratePerSecond: 8, burst: 1, minRatePerSecond: 1 }, fakeClock());
    for (let i = 0; i < 10; i++) budget.penalize();
    expect(budget.effectiveRatePerSecond).toBe(1);
  });

  it('recovers additively on successes, up to the configured rate', () => {
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 1, recoveryPerSuccess: 1 }, fakeClock());
    budget.penalize();
    budget.penalize();
    expect(budget.effectiveRatePerSecond).toBe(2.5);
    budget.recordSuccess();
    expect(budget.effectiveRatePerSecond).toBe(3.5);
    for (let i = 0; i < 20; i++) budget.recordSuccess();
    expect(budget.effectiveRatePerSecond).toBe(10);
  });

  it('sends nothing during a Retry-After pause', async () => {
    const clock = fakeClock();
    const budget = new TokenBucketRateBudget({ ratePerSecond: 10, burst: 5 }, clock);
    await budget.take();
    budget.penalize(2_000);
    await budget.take();
    // 2 s pause, then one token at the halved rate (5/s): 200 ms.
    expect(clock.sleeps).toEqual([2_200]);
    expect(clock.now()).toBe(2_200);
  });

  it('rejects limits that could never hand out a token', () => {
    expect(() => new TokenBucketRateBudget({ ratePerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucketRateBudget({ ratePerSecond: 1, burst: 0 })).toThrow(RangeError);
  });
});

describe('rateBudgetFor', () => {
  it('gives every caller of the same connection one shared budget', async () => {
    const clock = fakeClock();
    const key = connectionRateKey('acme', 'payment');
    expect(key).toBe('payment:acme');
    // Every caller derives the limits from the same connection config.
    const syncJob = rateBudgetFor(key, { ratePerSecond: 10, burst: 1 }, { clock });
    const testConnection = rateBudgetFor(key, { ratePerSecond: 10, burst: 1 }, { clock });
    expect(testConnection).toBe(syncJob);

    await syncJob.take();
    await testConnection.take(); // shared: this one waits for the other's token
    expect(clock.sleeps).toEqual([100]);

    // A plan change (new limits) takes effect at once, in the same warm process.
    const afterUpgrade = rateBudgetFor(key, { ratePerSecond: 1_000, burst: 1_000 }, { clock });
    expect(afterUpgrade).not.toBe(syncJob);
  });

  it('keeps connections apart', () => {
    const a = rateBudgetFor(connectionRateKey('acme', 'payment'), { ratePerSecond: 10, burst: 1 });
    const b = rateBudgetFor(connectionRateKey('globex', 'payment'), { ratePerSecond: 10, burst: 1 });
    const c = rateBudgetFor(connectionRateKey('acme', 'billing'), { ratePerSecond: 10, burst: 1 });
    expect(new Set([a, b, c]).size).toBe(3);
  });
});

describe('SharedRateBudget: one bucket for every caller of a connection, wherever it runs', () => {
  const limits = { ratePerSecond: 10, burst: 2 };

  it('five processes with several callers each, all at once, are granted at most the rate and a burst in any second', async () => {
    const clock = virtualClock();
    const buckets = new MemoryRateBuckets();
    const grants: number[] = [];
    // Five sync jobs of one connection (five Lambdas: five budgets over its one bucket), each with three slices taking turns.
    const jobs = Array.from({ length: 5 }, () => new SharedRateBudget('payment:acme', limits, buckets, clock));
    let running = 0;
    const slices = jobs.flatMap((budget) =>
      Array.from({ length: 3 }, async () => {
        running += 1;
        for (let n = 0; n < 8; n += 1) {
          await budget.take();
          grants.push(clock.now());
        }
        running -= 1;
      }),
    );
    await clock.runUntil(() => running === 0);
    await Promise.all(slices);
    expect(grants).toHaveLength(120);
    let most = 0;
    for (let to = 0, from = 0; to < grants.length; to += 1) {
      while (grants[to]! - grants[from]! >= 1000) from += 1;
      most = Math.max(most, to - from + 1);
    }
    expect(most).toBeLessThanOrEqual(limits.ratePerSecond + limits.burst);
    // 120 requests at 10/s: about 12 s, however the five share them.
    expect(clock.now()).toBeGreaterThanOrEqual(11_700);
  });

  it('two processes drawing from one bucket together stay at its rate', async () => {
    const clock = fakeClock();
    const buckets = new MemoryRateBuckets();
    // Two Lambdas (a sync job and the webhook worker, say): two budgets over one shared bucket.
    const sync = new SharedRateBudget('payment:acme', limits, buckets, clock);
    const webhooks = new SharedRateBudget('payment:acme', limits, buckets, clock);
    for (let i = 0; i < 50; i += 1) {
      await sync.take();
      await webhooks.take();
    }
    // 100 requests at 10/s: about 10 s of simulated time however they are shared (burst 2 at once).
    expect(clock.now()).toBeGreaterThanOrEqual(9_700);
  });

  it('a 429 seen by one caller slows every caller of that connection, and no other connection', async () => {
    const clock = fakeClock();
    const buckets = new MemoryRateBuckets();
    const slice1 = new SharedRateBudget('payment:acme', limits, buckets, clock);
    const slice2 = new SharedRateBudget('payment:acme', limits, buckets, clock);
    const other = new SharedRateBudget('payment:globex', limits, buckets, clock);
    await Promise.all([slice1.take(), slice2.take(), other.take()]);
    slice1.penalize();
    await slice1.take(); // the slow-down is written to the bucket before the next reservation
    // The other caller uses up what it had reserved (about 100 ms' worth); its next reservation brings the shared state.
    for (let i = 0; i < 3; i += 1) await slice2.take();
    // Halved to 5/s, and climbing back a little as simulated time passes.
    expect(slice1.effectiveRatePerSecond).toBeLessThan(7);
    expect(slice2.effectiveRatePerSecond).toBeLessThan(7);
    await other.take();
    expect(other.effectiveRatePerSecond).toBe(10);
  });

  it('many 429s in one storm halve the rate once; later ones halve it again', async () => {
    const clock = fakeClock();
    const buckets = new MemoryRateBuckets();
    const budget = new SharedRateBudget('billing:acme', limits, buckets, clock);
    await budget.take();
    for (let i = 0; i < 30; i += 1) budget.penalize();
    await budget.take();
    expect(budget.effectiveRatePerSecond).toBe(5);
    clock.advance(SLOW_DOWN_WINDOW_MS + 1);
    budget.penalize();
    await budget.take();
    expect(budget.effectiveRatePerSecond).toBeLessThan(5);
  });

  it('recovers linearly with time, a tenth of the limit per second, up to the limit', () => {
    const slowed = { slowedTo: 5, slowedAt: 0 };
    const full = { ratePerSecond: 10, minRatePerSecond: 1 };
    expect(currentRate(full, slowed, 0)).toBe(5);
    expect(currentRate(full, slowed, 2_000)).toBeCloseTo(5 + 2 * 10 * RECOVERY_SHARE_PER_SECOND);
    expect(currentRate(full, slowed, 60_000)).toBe(10);
    expect(currentRate(full, { slowedTo: 0.1, slowedAt: 0 }, 0)).toBe(1);
  });

  it('a Retry-After holds every caller of the connection until it ends', async () => {
    const clock = fakeClock();
    const buckets = new MemoryRateBuckets();
    const one = new SharedRateBudget('payment:acme', limits, buckets, clock);
    const two = new SharedRateBudget('payment:acme', limits, buckets, clock);
    await one.take();
    one.penalize(5_000);
    await one.take();
    expect(clock.now()).toBeGreaterThanOrEqual(5_000);
    const before = clock.now();
    await two.take();
    expect(clock.now()).toBeGreaterThanOrEqual(before);
    expect(clock.now()).toBeGreaterThanOrEqual(5_000);
  });

  it('sends a reservation\'s requests one interval apart, the first `burst` at once (GCRA)', () => {
    expect(sendTimes(1_000, 4, 100, 2, 1_000)).toEqual([1_000, 1_000, 1_100, 1_200]);
    expect(sendTimes(2_000, 2, 100, 2, 1_000)).toEqual([1_900, 2_000]);
    expect(blockSize(100)).toBe(10);
    expect(blockSize(2.5)).toBe(1);
    // A slow table: reserve more at once, so the next reservation is made before this one runs out.
    expect(blockSize(100, 300)).toBe(60);
    // As many as callers wait for, up to a second's worth.
    expect(blockSize(25, 0, 10)).toBe(10);
    expect(blockSize(25, 0, 100)).toBe(25);
    expect(blockSize(100, 0, 3)).toBe(10);
  });

  it('one reservation covers every caller waiting when it is made: ten slices starting together wait for one table write, not four', async () => {
    const buckets = new MemoryRateBuckets();
    let reservations = 0;
    const counted: RateBuckets = {
      reserveRate: (...args) => {
        reservations += 1;
        return buckets.reserveRate(...args);
      },
      slowRate: (...args) => buckets.slowRate(...args),
    };
    // An endpoint at 25/s: 100 ms' worth is 3 requests, so ten callers took four reservations in turn.
    const budget = new SharedRateBudget('payment:acme|GET /v1/customers', { ratePerSecond: 25, burst: 1 }, counted, fakeClock());
    await Promise.all(Array.from({ length: 10 }, () => budget.take()));
    // The ten's, and at most the next one made ahead as their block ran low.
    expect(reservations).toBeLessThanOrEqual(2);
    expect(reservations).toBeGreaterThanOrEqual(1);
  });
});

describe('endpoint budgets within a connection\'s', () => {
  it('name the connection and the endpoint; forgetting the connection forgets its endpoints\' buckets, not another connection\'s', async () => {
    const connection = connectionRateKey('acme', 'payment');
    const endpoint = endpointRateKey(connection, 'GET /v1/customers');
    expect(parseConnectionRateKey(endpoint)).toEqual({ accountId: 'acme', connector: 'payment', endpoint: 'GET /v1/customers' });
    expect(parseConnectionRateKey(connection)).toEqual({ accountId: 'acme', connector: 'payment' });
    expect(() => parseConnectionRateKey('payment:acme|')).toThrow(TypeError);
    const buckets = new MemoryRateBuckets();
    await buckets.reserveRate(connection, 100, 0);
    await buckets.reserveRate(endpoint, 100, 0);
    await buckets.reserveRate(connectionRateKey('acme-two', 'payment'), 100, 0);
    buckets.forget(connection);
    // Forgotten buckets start again from now; the other connection's still holds its reservation.
    expect((await buckets.reserveRate(endpoint, 100, 0)).start).toBe(0);
    expect((await buckets.reserveRate(connectionRateKey('acme-two', 'payment'), 100, 0)).start).toBe(100);
  });
});
