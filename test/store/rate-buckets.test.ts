import { describe, expect, it } from 'vitest';
import { SharedRateBudget, connectionRateKey, forgetRateBudgets, rateBudgetFor } from '../../shared/http/rate-budget';
import { sdkTableClient } from '../../shared/store/sdk-table-client';
import { localDynamoClient, useTable } from '../support/dynamo';
import * as store from '../../shared/store/store';

const db = useTable();

/**
 * The connections' rate buckets in the table: what lets the sync job, Test Connection and the
 * webhook worker (each its own Lambda) draw from one budget per connection.
 */
describe('rate buckets in the table', () => {
  it('concurrent reservations from many callers never overlap: the rate is handed out once', async () => {
    const key = connectionRateKey('acct-rb1', 'payment');
    const now = Date.now();
    // 40 callers in 4 "processes" (each with its own client) reserve 100 ms each at once.
    const tables = Array.from({ length: 4 }, () => ({ client: sdkTableClient(localDynamoClient(db.dynamo.endpoint)), tableName: db.dynamo.tableName }));
    const reservations = await Promise.all(Array.from({ length: 40 }, (_, i) => store.reserveRate(tables[i % 4]!, key, 100, now)));
    const starts = reservations.map((r) => r.start).sort((a, b) => a - b);
    // Back to back from now, each 100 ms after the previous: 40 reservations, 4 s of the time line.
    expect(starts[0]).toBe(now);
    for (let i = 1; i < starts.length; i += 1) expect(starts[i]! - starts[i - 1]!).toBe(100);
    expect(Math.max(...reservations.map((r) => r.state.tat))).toBe(now + 4_000);
  });

  it('an idle bucket starts from now, not from its past', async () => {
    const key = connectionRateKey('acct-rb2', 'billing');
    await store.reserveRate(db.table, key, 100, 1_000);
    const later = await store.reserveRate(db.table, key, 100, 60_000);
    expect(later.start).toBe(60_000);
  });

  it('a 429 storm lowers the rate once per window; a Retry-After moves the time line past the pause', async () => {
    const key = connectionRateKey('acct-rb3', 'payment');
    await store.reserveRate(db.table, key, 100, 10_000);
    const first = await store.slowRate(db.table, key, { rate: 50, now: 10_050, unlessSlowedSince: 9_050 });
    expect(first).toMatchObject({ slowedTo: 50, slowedAt: 10_050 });
    // Another slice's 429 in the same window: the first halving stands.
    const second = await store.slowRate(db.table, key, { rate: 25, now: 10_100, unlessSlowedSince: 9_100 });
    expect(second).toMatchObject({ slowedTo: 50, slowedAt: 10_050 });
    const paused = await store.slowRate(db.table, key, { rate: 25, now: 11_200, unlessSlowedSince: 10_200, pausedUntil: 20_000 });
    expect(paused).toMatchObject({ slowedTo: 25, tat: 20_000 });
    expect((await store.reserveRate(db.table, key, 100, 11_300)).start).toBe(20_000);
  });

  it('keeps each connection apart, under its account', async () => {
    const a = connectionRateKey('acct-rb4', 'payment');
    const b = connectionRateKey('acct-rb5', 'payment');
    await store.slowRate(db.table, a, { rate: 1, now: 1_000, unlessSlowedSince: 0 });
    expect((await store.reserveRate(db.table, b, 100, 1_000)).state.slowedTo).toBeUndefined();
    await expect(store.reserveRate(db.table, 'payment:not#an-account', 100, 1_000)).rejects.toThrow();
  });

  it('in one process, every client of a connection over the table draws from one budget', () => {
    const key = connectionRateKey('acct-rb7', 'payment');
    const limits = { ratePerSecond: 25, burst: 5 };
    // As the sync job and the webhook worker make a client for each job and event.
    const first = rateBudgetFor(key, limits, { buckets: store.rateBucketsIn(db.table) });
    const next = rateBudgetFor(key, limits, { buckets: store.rateBucketsIn(db.table) });
    expect(next).toBe(first);
    // Another table is another place for the buckets, so another budget.
    expect(rateBudgetFor(key, limits, { buckets: store.rateBucketsIn({ ...db.table }) })).not.toBe(first);
    forgetRateBudgets(key);
  });

  it('two budgets over the table (two Lambdas) see each other\'s 429 on their next reservation', async () => {
    const key = connectionRateKey('acct-rb6', 'payment');
    const limits = { ratePerSecond: 1_000, burst: 10 };
    const syncJob = new SharedRateBudget(key, limits, store.rateBucketsIn(db.table));
    const webhookWorker = new SharedRateBudget(key, limits, store.rateBucketsIn({ client: sdkTableClient(localDynamoClient(db.dynamo.endpoint)), tableName: db.dynamo.tableName }));
    await syncJob.take();
    await webhookWorker.take();
    syncJob.penalize();
    // The worker uses up its reservation, then reserves again and learns the shared state.
    for (let i = 0; i < 400 && webhookWorker.effectiveRatePerSecond > 600; i += 1) await webhookWorker.take();
    expect(webhookWorker.effectiveRatePerSecond).toBeLessThan(600);
  });
});
