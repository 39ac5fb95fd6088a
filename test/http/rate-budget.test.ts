import { afterEach, describe, expect, it } from 'vitest';
import {
  TokenBucketRateBudget,
  connectionRateKey,
  forgetRateBudgets,
  rateBudgetFor,
  type Clock,
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
