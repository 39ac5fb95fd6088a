import { describe, expect, it } from 'vitest';
import { useTable } from '../support/dynamo';
import * as store from '../../shared/store/store';

/** The event worker's exactly-once marks in the table (dynalite). */
const db = useTable();

const event = { accountId: 'acct-m1', connector: 'payment' as const, eventId: 'evt_m1' };
const claim = (now: number, expiresAt = now + 345_600) => store.claimWebhookEvent(db.table, { ...event, eventType: 'customer.updated', now, leaseSeconds: 90, expiresAt });

describe('webhook event marks', () => {
  it('claim once, hold against a second worker, release on failure, skip once finished', async () => {
    expect(await claim(1000)).toEqual({ outcome: 'claimed', attempts: 1 });
    expect(await claim(1010)).toEqual({ outcome: 'busy' });
    await store.releaseWebhookEvent(db.table, event, 'payment platform: 503 on GET /v1/customers/cus_1');
    expect(await store.getWebhookEventMark(db.table, event.accountId, event.connector, event.eventId)).toMatchObject({ state: 'pending', claimedUntil: 0, note: 'payment platform: 503 on GET /v1/customers/cus_1' });
    expect(await claim(1020, 9_999_999)).toEqual({ outcome: 'claimed', attempts: 2 });
    await store.finishWebhookEvent(db.table, event, { state: 'applied', at: new Date(1_030_000) });
    const finished = await claim(5000);
    expect(finished).toMatchObject({ outcome: 'finished', mark: { state: 'applied', attempts: 2, expiresAt: 1000 + 345_600, finishedAt: new Date(1_030_000).toISOString() } });
    expect((finished as { mark: { claimedUntil?: number; note?: string } }).mark.claimedUntil).toBeUndefined();
    expect((finished as { mark: { note?: string } }).mark.note).toBeUndefined();
    // A finished mark stays finished.
    await store.releaseWebhookEvent(db.table, event, 'late failure');
    expect((await store.getWebhookEventMark(db.table, event.accountId, event.connector, event.eventId))?.state).toBe('applied');
  });

  it('lets a claim whose worker died be taken over once its lease lapsed', async () => {
    const other = { ...event, eventId: 'evt_m2' };
    const at = (now: number) => store.claimWebhookEvent(db.table, { ...other, eventType: 'x', now, leaseSeconds: 90, expiresAt: now + 100 });
    expect((await at(1000)).outcome).toBe('claimed');
    expect((await at(1090)).outcome).toBe('busy');
    expect(await at(1091)).toEqual({ outcome: 'claimed', attempts: 2 });
  });

  it('records why an event was ignored, per account and connector', async () => {
    const ignored = { accountId: 'acct-m2', connector: 'billing' as const, eventId: 'evt_m1' };
    expect((await store.claimWebhookEvent(db.table, { ...ignored, eventType: 'card_added', now: 1, leaseSeconds: 90, expiresAt: 2 })).outcome).toBe('claimed');
    await store.finishWebhookEvent(db.table, ignored, { state: 'ignored', note: 'event type card_added is not applied by the gateway', at: new Date(0) });
    expect(await store.getWebhookEventMark(db.table, 'acct-m2', 'billing', 'evt_m1')).toMatchObject({ state: 'ignored', note: 'event type card_added is not applied by the gateway' });
    // The same id on another account or connector is another event.
    expect(await store.getWebhookEventMark(db.table, 'acct-m2', 'payment', 'evt_m1')).toBeUndefined();
  });
});
