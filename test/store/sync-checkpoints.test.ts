import { describe, expect, it } from 'vitest';
import type { SyncCheckpoint } from '../../shared/store/items';
import { SyncRunLostError } from '../../shared/store/store';
import { claimSyncCheckpoint } from '../../shared/store/sync-checkpoints';
import { useTable } from '../support/dynamo';
import * as store from '../../shared/store/store';

const db = useTable();

const t0 = new Date('2025-06-01T12:00:00Z');
const seconds = (n: number) => new Date(t0.getTime() + n * 1000);
const scope = { accountId: 'acct-s0', connector: 'payment', object: 'customers' } as const;

describe('claimSyncCheckpoint (the decision)', () => {
  const held: SyncCheckpoint = {
    ...scope,
    runId: 'run-1',
    leaseExpiresAt: Math.floor(t0.getTime() / 1000) + 60,
    mode: 'full',
    cursor: { startingAfter: 'cus_50' },
    counts: { created: 50, updated: 0, unchanged: 0, deleted: 0 },
    version: 4,
  };

  it('refuses while another run holds an unexpired lease', () => {
    expect(claimSyncCheckpoint(held, scope, { runId: 'run-2', now: seconds(59), leaseSeconds: 60 })).toBeUndefined();
  });

  it("takes over a lapsed lease and keeps the crashed run's cursor and counts", () => {
    const taken = claimSyncCheckpoint(held, scope, { runId: 'run-2', now: seconds(61), leaseSeconds: 60 });
    expect(taken).toMatchObject({ runId: 'run-2', cursor: { startingAfter: 'cus_50' }, counts: { created: 50 }, version: 4 });
    expect(taken?.leaseExpiresAt).toBe(Math.floor(t0.getTime() / 1000) + 121);
  });

  it('lets the same run claim again (a redelivered job)', () => {
    expect(claimSyncCheckpoint(held, scope, { runId: 'run-1', now: seconds(1), leaseSeconds: 60 })?.runId).toBe('run-1');
  });

  it('starts a fresh run with zero counts: full at first, incremental once there is a watermark', () => {
    const first = claimSyncCheckpoint(undefined, scope, { runId: 'r', now: t0, leaseSeconds: 60 });
    expect(first).toMatchObject({ mode: 'full', counts: { created: 0, updated: 0, unchanged: 0, deleted: 0 }, version: 0 });
    expect(first?.lastRunStartedAt).toBe(t0.toISOString());

    const idle: SyncCheckpoint = { ...held, runId: undefined, leaseExpiresAt: undefined, cursor: undefined, watermark: { createdGte: 1 } };
    expect(claimSyncCheckpoint(idle, scope, { runId: 'r', now: t0, leaseSeconds: 60 })).toMatchObject({
      mode: 'incremental',
      counts: { created: 0 },
      watermark: { createdGte: 1 },
    });
    expect(claimSyncCheckpoint(idle, scope, { runId: 'r', now: t0, leaseSeconds: 60, mode: 'full' })?.mode).toBe('full');
  });
});

describe('sync checkpoints in the table', () => {
  it('lets one run at a time page, resume after a crash, and finish', async () => {
    const account = 'acct-s1';
    const run1 = await store.startSyncRun(db.table, account, 'billing', 'subscriptions', { runId: 'run-1', now: t0, leaseSeconds: 60 });
    expect(run1).toMatchObject({ runId: 'run-1', mode: 'full', version: 1 });

    // A second run cannot start while the first holds the lease.
    expect(await store.startSyncRun(db.table, account, 'billing', 'subscriptions', { runId: 'run-2', now: seconds(30), leaseSeconds: 60 })).toBeUndefined();

    // The first run saves a page, renewing its lease...
    const page1 = await store.putSyncCheckpoint(db.table, 
      { ...run1!, cursor: { offset: 'abc' }, counts: { ...run1!.counts, created: 100 } },
      { now: seconds(40), leaseSeconds: 60 },
    );
    expect(page1.version).toBe(2);
    expect(await store.getSyncCheckpoint(db.table, account, 'billing', 'subscriptions')).toEqual(page1);
    // ...so at t+90 the second run still cannot take it.
    expect(await store.startSyncRun(db.table, account, 'billing', 'subscriptions', { runId: 'run-2', now: seconds(90), leaseSeconds: 60 })).toBeUndefined();

    // The first run crashes. Once its lease lapses the second run resumes from its cursor.
    const run2 = await store.startSyncRun(db.table, account, 'billing', 'subscriptions', { runId: 'run-2', now: seconds(101), leaseSeconds: 60 });
    expect(run2).toMatchObject({ runId: 'run-2', cursor: { offset: 'abc' }, counts: { created: 100 }, version: 3 });

    // The first run, if it was only slow, finds out at its next write and stops.
    await expect(
      store.putSyncCheckpoint(db.table, { ...page1, cursor: { offset: 'def' } }, { now: seconds(102), leaseSeconds: 60 }),
    ).rejects.toBeInstanceOf(SyncRunLostError);
    await expect(store.finishSyncRun(db.table, page1)).rejects.toBeInstanceOf(SyncRunLostError);

    const finished = await store.finishSyncRun(db.table, {
      ...run2!,
      watermark: { updatedAfter: 1_748_779_200 },
      lastRunFinishedAt: seconds(120).toISOString(),
      lastSucceededAt: seconds(120).toISOString(),
    });
    expect(finished.runId).toBeUndefined();
    expect(finished.cursor).toBeUndefined();
    const stored = await store.getSyncCheckpoint(db.table, account, 'billing', 'subscriptions');
    expect(stored).toEqual(finished);
    expect(stored).not.toHaveProperty('runId');
    expect(stored).not.toHaveProperty('cursor');

    // The next run starts fresh and incremental right away.
    const next = await store.startSyncRun(db.table, account, 'billing', 'subscriptions', { runId: 'run-3', now: seconds(121), leaseSeconds: 60 });
    expect(next).toMatchObject({ mode: 'incremental', counts: { created: 0 }, watermark: { updatedAfter: 1_748_779_200 } });
  });

  it('lets exactly one of two simultaneous runs claim a checkpoint', async () => {
    const claims = await Promise.all(
      ['run-a', 'run-b', 'run-c'].map((runId) =>
        store.startSyncRun(db.table, 'acct-s2', 'payment', 'charges', { runId, now: t0, leaseSeconds: 60 }),
      ),
    );
    const winners = claims.filter((claim) => claim !== undefined);
    expect(winners).toHaveLength(1);
    expect((await store.getSyncCheckpoint(db.table, 'acct-s2', 'payment', 'charges'))?.runId).toBe(winners[0]!.runId);
  });

  it('stops the slower of two copies of the same run (a job delivered twice)', async () => {
    const copyA = await store.startSyncRun(db.table, 'acct-s3', 'payment', 'invoices', { runId: 'run-x', now: t0, leaseSeconds: 60 });
    const copyB = await store.startSyncRun(db.table, 'acct-s3', 'payment', 'invoices', { runId: 'run-x', now: seconds(5), leaseSeconds: 60 });
    expect(copyB?.version).toBe(2);
    await expect(store.putSyncCheckpoint(db.table, { ...copyA!, cursor: { a: 1 } }, { now: seconds(6), leaseSeconds: 60 })).rejects.toBeInstanceOf(
      SyncRunLostError,
    );
    await expect(store.putSyncCheckpoint(db.table, { ...copyB!, cursor: { b: 1 } }, { now: seconds(6), leaseSeconds: 60 })).resolves.toMatchObject({
      version: 3,
    });
  });

  it("lists an account's checkpoints only", async () => {
    await store.startSyncRun(db.table, 'acct-s4', 'payment', 'customers', { runId: 'r1', now: t0, leaseSeconds: 60 });
    await store.startSyncRun(db.table, 'acct-s4', 'billing', 'invoices', { runId: 'r2', now: t0, leaseSeconds: 60 });
    await store.startSyncRun(db.table, 'acct-s5', 'payment', 'customers', { runId: 'r3', now: t0, leaseSeconds: 60 });
    const listed = await store.listSyncCheckpoints(db.table, 'acct-s4');
    expect(listed.map((c) => `${c.connector}/${c.object}`).sort()).toEqual(['billing/invoices', 'payment/customers']);
    expect(await store.getSyncCheckpoint(db.table, 'acct-s6', 'payment', 'customers')).toBeUndefined();
  });
});
