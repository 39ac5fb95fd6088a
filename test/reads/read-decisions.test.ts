import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SyncCheckpoint, SyncedRecord } from '../../shared/store/items';
import type { NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';
import { decodeCursor, encodeCursor } from '../../shared/reads/cursor';
import { readFilteredPage, type PageReader } from '../../shared/reads/filtered-page';
import { freshnessOf, UsedData } from '../../shared/reads/freshness';
import { invoicesNewestFirst, isFailedPayment, paymentHistory, paymentObjectOf } from '../../shared/reads/payments';
import type { PlaybookConnector, ReadRecord } from '../../shared/reads/read-record';
import { currentSubscription, isCancelling, nextPayment, noSubscriptionReason, tierOf } from '../../shared/reads/subscriptions';

const iso = (text: string) => new Date(text).toISOString();

function subscription(id: string, fields: Partial<NormalisedSubscription> = {}, connector: PlaybookConnector = 'billing'): ReadRecord<NormalisedSubscription> {
  return { connector, object: 'subscriptions', body: { id, customerId: 'cus_1', state: 'active', status: 'active', ...fields } };
}
function invoice(id: string, fields: Partial<NormalisedInvoice> = {}, connector: PlaybookConnector = 'billing'): ReadRecord<NormalisedInvoice> {
  return { connector, object: 'invoices', body: { id, customerId: 'cus_1', status: 'paid', ...fields } };
}
function payment(id: string, fields: Partial<NormalisedPayment> = {}): ReadRecord<NormalisedPayment> {
  return { connector: 'payment', object: 'charges', body: { id, customerId: 'cus_1', amount: 1000, outcome: 'succeeded', status: 'succeeded', ...fields } };
}

describe('the current subscription', () => {
  it('prefers an active one over a later-ending trial or past-due one', () => {
    const subscriptions = [
      subscription('trial', { state: 'trialing', status: 'in_trial', currentPeriodEnd: iso('2031-01-01') }),
      subscription('active', { currentPeriodEnd: iso('2030-01-01') }),
      subscription('late', { state: 'past_due', status: 'past_due', currentPeriodEnd: iso('2032-01-01') }),
    ];
    expect(currentSubscription(subscriptions)?.body.id).toBe('active');
  });

  it('among equals, takes the latest period end; unknown ends come last', () => {
    const subscriptions = [
      subscription('no-end'),
      subscription('early', { currentPeriodEnd: iso('2030-01-01') }),
      subscription('late', { currentPeriodEnd: iso('2030-06-01T00:00:00.500Z') }),
      subscription('mid', { currentPeriodEnd: '2030-06-01T00:00:00Z' }),
    ];
    expect(currentSubscription(subscriptions)?.body.id).toBe('late');
    expect(currentSubscription([subscription('no-end'), subscription('early', { currentPeriodEnd: iso('2030-01-01') })])?.body.id).toBe('early');
  });

  it('counts active, trialing, non_renewing and past_due as running; nothing else', () => {
    for (const state of ['trialing', 'non_renewing', 'past_due'] as const) {
      expect(currentSubscription([subscription('s', { state })])?.body.id).toBe('s');
    }
    const over = (['cancelled', 'paused', 'future', 'unpaid', 'incomplete', 'other'] as const).map((state) => subscription(state, { state }));
    expect(currentSubscription(over)).toBeUndefined();
    expect(noSubscriptionReason(over)).toBe('none_current');
    expect(noSubscriptionReason([])).toBe('no_subscriptions');
  });

  it('is the same whatever order the records come in', () => {
    const subscriptions = [
      subscription('a', { state: 'trialing', currentPeriodEnd: iso('2030-03-01') }),
      subscription('b', { currentPeriodEnd: iso('2030-02-01') }),
      subscription('c', { currentPeriodEnd: iso('2030-02-01') }),
      subscription('d', { state: 'cancelled', currentPeriodEnd: iso('2035-01-01') }),
    ];
    fc.assert(
      fc.property(fc.shuffledSubarray(subscriptions, { minLength: 4, maxLength: 4 }), (shuffled) => {
        expect(currentSubscription(shuffled)?.body.id).toBe('b');
      }),
    );
  });

  it('a cancellation asked for on a running subscription makes it cancelling', () => {
    expect(isCancelling(subscription('s', { state: 'non_renewing' }).body)).toBe(true);
    expect(isCancelling(subscription('s', { state: 'trialing', cancelledAt: iso('2030-01-01') }).body)).toBe(true);
    expect(isCancelling(subscription('s').body)).toBe(false);
    expect(isCancelling(subscription('s', { state: 'cancelled', cancelledAt: iso('2030-01-01') }).body)).toBe(false);
  });
});

describe('the next payment', () => {
  it('is the earliest nextBillingAt among running, renewing subscriptions, with its amount', () => {
    const decision = nextPayment(
      [
        subscription('later', { nextBillingAt: iso('2030-05-01'), amount: 500, currency: 'EUR' }),
        subscription('sooner', { state: 'trialing', nextBillingAt: iso('2030-04-01'), amount: 900, currency: 'USD' }, 'payment'),
        subscription('ending', { state: 'non_renewing', nextBillingAt: iso('2030-03-01') }),
        subscription('gone', { state: 'cancelled', nextBillingAt: iso('2030-02-01') }),
      ],
      [invoice('open', { status: 'open', dueAt: iso('2030-01-01') })],
    );
    expect(decision.nextPayment && decision.from.body.id).toBe('sooner');
    expect(decision.nextPayment).toEqual({
      at: iso('2030-04-01'),
      amount: 900,
      currency: 'USD',
      source: { kind: 'subscription', connector: 'payment', id: 'sooner', field: 'nextBillingAt' },
    });
  });

  it('falls back to the earliest open invoice: its next attempt when the platform retries, else its due date', () => {
    const decision = nextPayment(
      [subscription('ending', { state: 'non_renewing' })],
      [
        invoice('paid', { status: 'paid', dueAt: iso('2029-01-01') }),
        invoice('nothing-due', { status: 'payment_due', amountDue: 0, dueAt: iso('2029-02-01') }),
        invoice('due', { status: 'posted', dueAt: iso('2030-03-01'), amountDue: 1200, currency: 'EUR' }),
        invoice('retrying', { status: 'payment_due', dueAt: iso('2030-01-01'), nextPaymentAttemptAt: iso('2030-02-01'), total: 700 }),
      ],
    );
    expect(decision.nextPayment && decision.from.body.id).toBe('retrying');
    expect(decision.nextPayment).toEqual({
      at: iso('2030-02-01'),
      amount: 700,
      source: { kind: 'invoice', connector: 'billing', id: 'retrying', field: 'nextPaymentAttemptAt' },
    });
  });

  it('says why there is none', () => {
    expect(nextPayment([], [])).toEqual({ nextPayment: null, reason: 'no_current_subscription' });
    expect(nextPayment([subscription('c', { state: 'cancelled' })], [invoice('i', { status: 'voided' })])).toEqual({ nextPayment: null, reason: 'no_current_subscription' });
    expect(nextPayment([subscription('e', { state: 'non_renewing', nextBillingAt: iso('2030-01-01') })], [])).toEqual({ nextPayment: null, reason: 'cancelling' });
    expect(nextPayment([subscription('a')], [])).toEqual({ nextPayment: null, reason: 'no_date_known' });
  });
});

describe('tier and payments', () => {
  it('the tier is the current subscription’s plan and amount', () => {
    expect(tierOf([subscription('old', { state: 'cancelled', planName: 'Gold' }), subscription('now', { planId: 'silver-m', planName: 'Silver', amount: 2500, currency: 'USD' })])).toEqual({
      connector: 'billing',
      subscriptionId: 'now',
      state: 'active',
      planId: 'silver-m',
      planName: 'Silver',
      amount: 2500,
      currency: 'USD',
    });
    expect(tierOf([subscription('old', { state: 'cancelled' })])).toBeNull();
  });

  it('history is newest first, undated last, cut at the limit', () => {
    const payments = [
      payment('p1', { at: iso('2030-01-01') }),
      payment('undated'),
      payment('p3', { at: iso('2030-03-01') }),
      payment('p2', { at: iso('2030-02-01') }),
    ];
    expect(paymentHistory(payments, 10).map((p) => p.body.id)).toEqual(['p3', 'p2', 'p1', 'undated']);
    expect(paymentHistory(payments, 2).map((p) => p.body.id)).toEqual(['p3', 'p2']);
  });

  it('a failed payment counts from `since` on; an undated one only without `since`', () => {
    const since = new Date('2030-02-01T00:00:00Z');
    expect(isFailedPayment(payment('f', { outcome: 'failed', at: iso('2030-02-01') }).body, since)).toBe(true);
    expect(isFailedPayment(payment('f', { outcome: 'failed', at: iso('2030-01-31') }).body, since)).toBe(false);
    expect(isFailedPayment(payment('f', { outcome: 'failed' }).body, since)).toBe(false);
    expect(isFailedPayment(payment('f', { outcome: 'failed' }).body)).toBe(true);
    expect(isFailedPayment(payment('s', { at: iso('2030-03-01') }).body, since)).toBe(false);
  });

  it('reads one payment object per connector: charges unless only payment intents are there', () => {
    expect(paymentObjectOf('billing', new Set(['charges']))).toBe('payments');
    expect(paymentObjectOf('payment', new Set(['charges', 'payment_intents']))).toBe('charges');
    expect(paymentObjectOf('payment', new Set(['payment_intents']))).toBe('payment_intents');
    expect(paymentObjectOf('payment', new Set())).toBe('charges');
  });

  it('invoices newest first by issue date', () => {
    const invoices = [invoice('a', { issuedAt: iso('2030-01-01') }), invoice('b', { issuedAt: iso('2030-03-01') }), invoice('c', { issuedAt: iso('2030-02-01') })];
    expect(invoicesNewestFirst(invoices, 2).map((i) => i.body.id)).toEqual(['b', 'c']);
  });
});

describe('freshness', () => {
  const checkpoint = (connector: PlaybookConnector, object: string, lastSucceededAt?: string): SyncCheckpoint => ({
    accountId: 'acme',
    connector,
    object,
    mode: 'incremental',
    counts: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
    ...(lastSucceededAt ? { lastSucceededAt } : {}),
    version: 1,
  });

  it('takes the oldest record and, per connector, the oldest sync of the objects consulted', () => {
    const used = new UsedData()
      .add([
        { connector: 'billing', object: 'subscriptions', syncedAt: iso('2030-01-02') },
        { connector: 'payment', object: 'customers', syncedAt: iso('2030-01-01T12:00:00Z') },
        { connector: 'billing', object: 'customers' },
      ])
      .object('billing', 'customers');
    const freshness = freshnessOf(used, [
      checkpoint('billing', 'subscriptions', iso('2030-01-05')),
      checkpoint('billing', 'customers', iso('2030-01-04')),
      checkpoint('billing', 'invoices', iso('2029-01-01')), // not consulted: no say
      checkpoint('payment', 'customers', iso('2030-01-06')),
    ]);
    expect(freshness).toEqual({
      syncedAt: iso('2030-01-01T12:00:00Z'),
      lastSyncSucceededAt: { billing: iso('2030-01-04'), payment: iso('2030-01-06') },
    });
  });

  it('is null where nothing vouches for the data; connectors not consulted are absent', () => {
    const used = new UsedData().object('billing', 'subscriptions').object('billing', 'customers').object('payment', 'charges');
    const freshness = freshnessOf(used, [checkpoint('billing', 'subscriptions', iso('2030-01-05')), checkpoint('billing', 'customers')]);
    expect(freshness).toEqual({ syncedAt: null, lastSyncSucceededAt: { billing: null, payment: null } });
    expect(freshnessOf(new UsedData().object('payment', 'charges'), []).lastSyncSucceededAt).toEqual({ payment: null });
  });
});

describe('cursors', () => {
  const anyRecordId = fc.string({ minLength: 1, maxLength: 200, unit: 'grapheme' }).filter((s) => !/[\u0000-\u001f\u007f]/.test(s));
  const roundTrips = fc.property(anyRecordId, (id) => {
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });

  it('round-trip any record id', () => {
    fc.assert(roundTrips);
  });

  it('round-trip ids holding U+FFFD (issue 7: seed 1772828323 found "\\uFFFD ")', () => {
    fc.assert(roundTrips, { seed: 1772828323, examples: [['\uFFFD '], ['a\uFFFDb']] });
  });

  it('refuse what this API did not write', () => {
    const notUtf8 = [Buffer.from([0xff, 0xfe]), Buffer.from([0x61, 0xc3]), Buffer.from([0xed, 0xa0, 0x80])].map((bytes) => bytes.toString('base64url'));
    for (const garbage of ['', '!!!', 'a b', 'AA==', 'x'.repeat(1401), ...notUtf8, encodeCursor('a\nb')]) {
      expect(decodeCursor(garbage)).toBeUndefined();
    }
  });
});

describe('a filtered page', () => {
  /** A store-like reader over sorted ids, so paging is tested without a server. */
  function readerOver(ids: readonly string[]): { read: PageReader; reads: () => number } {
    let reads = 0;
    const read: PageReader = async (startKey, limit) => {
      reads += 1;
      const from = startKey === undefined ? 0 : ids.findIndex((id) => id > startKey);
      const slice = from < 0 ? [] : ids.slice(from, from + limit);
      const records = slice.map((id) => ({ accountId: 'acme', connector: 'billing', object: 'subscriptions', id, hash: 'h', body: {} }) as SyncedRecord);
      const more = from >= 0 && from + limit < ids.length;
      return { records, ...(more ? { nextStartKey: slice[slice.length - 1]! } : {}) };
    };
    return { read, reads: () => reads };
  }

  it('following nextStartKey yields every match exactly once, in order, whatever the sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,6}$/), { maxLength: 60 }),
        fc.func(fc.boolean()),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 3 }),
        async (unsorted, keeps, limit, readSize, maxReads) => {
          const ids = [...unsorted].sort();
          const { read } = readerOver(ids);
          const seen: string[] = [];
          let startKey: string | undefined;
          for (let calls = 0; calls <= ids.length + 1; calls += 1) {
            const page = await readFilteredPage(read, (record) => (keeps(record.id) ? record.id : undefined), {
              limit,
              maxReads,
              readSize,
              ...(startKey ? { startKey } : {}),
            });
            expect(page.items.length).toBeLessThanOrEqual(limit);
            seen.push(...page.items);
            startKey = page.nextStartKey;
            if (startKey === undefined) break;
          }
          expect(startKey).toBeUndefined();
          expect(seen).toEqual(ids.filter((id) => keeps(id)));
        },
      ),
    );
  });

  it('stops after its read budget with a start key to resume from', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `id${String(i).padStart(3, '0')}`);
    const { read, reads } = readerOver(ids);
    const page = await readFilteredPage(read, () => undefined, { limit: 10, maxReads: 3, readSize: 5 });
    expect(page).toEqual({ items: [], nextStartKey: 'id014' });
    expect(reads()).toBe(3);
  });

  it('a full page ending on the last record says there is no next page', async () => {
    const { read } = readerOver(['a', 'b', 'c']);
    expect(await readFilteredPage(read, (record) => record.id, { limit: 3, maxReads: 5, readSize: 10 })).toEqual({ items: ['a', 'b', 'c'] });
    expect(await readFilteredPage(read, (record) => record.id, { limit: 2, maxReads: 5, readSize: 10 })).toEqual({ items: ['a', 'b'], nextStartKey: 'b' });
  });
});
