import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { billingEventEffects } from '../../shared/billing/webhook';
import { PLAYBOOK_EVENT_TYPES } from '../../shared/events/playbook-events';
import { paymentEventEffects } from '../../shared/payment/webhook';
import { paymentWebhookReceiver } from '../../shared/payment/webhook-receiver';
import { writeDecision, type WebhookEffects } from '../../shared/webhooks/effects';
import { readBillingEnvelope, readPaymentEnvelope } from '../../shared/webhooks/event-envelope';
import { fitForQueue, MAX_MESSAGE_BYTES } from '../../shared/webhooks/receiver';
import { BillingRecordFactory, BillingSiteData } from '../../sandbox/billing-records';
import { PaymentRecordFactory } from '../../sandbox/payment-records';

/** What each platform event means, decided without I/O; and the event parsers fuzzed. */

const created = 1_750_000_000;
const payments = new PaymentRecordFactory(3);
const customer = payments.customer('test', created - 100, { email: 'pat@example.com', name: 'Pat' });
const subscription = payments.subscription(customer, 'active', created - 100, created - 100, {});
const { invoice } = payments.invoiceChain(subscription, customer, 'open', created - 10, created - 10);

const paymentEvent = (type: string, object: object, previous?: object) => ({
  id: `evt_${type.replace(/\W/g, '_')}`,
  object: 'event',
  type,
  created,
  livemode: false,
  api_version: '2026-10-28.endive',
  data: { object, ...(previous ? { previous_attributes: previous } : {}) },
});

const applied = (effects: WebhookEffects) => {
  if (effects.kind !== 'apply') throw new Error(`expected apply, got ${JSON.stringify(effects)}`);
  return effects;
};

describe('payment platform events', () => {
  const cases: Array<[string, object, string, string | undefined]> = [
    ['customer.created', customer, 'customers', 'customer.created'],
    ['customer.updated', customer, 'customers', 'customer.changed'],
    ['customer.subscription.created', subscription, 'subscriptions', 'subscription.created'],
    ['customer.subscription.updated', subscription, 'subscriptions', 'subscription.changed'],
    ['customer.subscription.deleted', { ...subscription, status: 'canceled' }, 'subscriptions', 'subscription.cancelled'],
    ['invoice.payment_succeeded', { ...invoice, status: 'paid' }, 'invoices', 'payment.succeeded'],
    ['invoice.payment_failed', invoice, 'invoices', 'payment.failed'],
    ['invoice.finalized', invoice, 'invoices', 'invoice.generated'],
    ['invoice.created', { ...invoice, status: 'draft' }, 'invoices', undefined],
    ['invoice.paid', invoice, 'invoices', undefined],
    ['customer.subscription.paused', subscription, 'subscriptions', undefined],
  ];

  it.each(cases)('%s applies to %s and publishes %s', (type, object, stored, published) => {
    const effects = applied(paymentEventEffects(paymentEvent(type, object)));
    expect(effects.changes).toHaveLength(1);
    expect(effects.changes[0]).toMatchObject({ object: stored, id: (object as { id: string }).id, version: created });
    expect(effects.changes[0]!.record).toBeDefined();
    expect(effects.publish?.type).toBe(published);
    if (stored !== 'customers') expect(effects.references).toEqual([{ object: 'customers', id: customer.id }]);
  });

  it('reads a renewal from a period end that moved on', () => {
    const renewed = applied(paymentEventEffects(paymentEvent('customer.subscription.updated', subscription, { current_period_end: subscription.current_period_end - 30 * 86_400 })));
    expect(renewed.publish?.type).toBe('subscription.renewed');
    const changedPlan = applied(paymentEventEffects(paymentEvent('customer.subscription.updated', subscription, { metadata: {} })));
    expect(changedPlan.publish?.type).toBe('subscription.changed');
  });

  it('puts the dunning facts of a failed invoice payment into the event', () => {
    const effects = applied(paymentEventEffects(paymentEvent('invoice.payment_failed', { ...invoice, attempt_count: 2, next_payment_attempt: created + 86_400 })));
    expect(effects.publish?.plan(() => undefined)).toMatchObject({
      customerId: customer.id,
      customerHint: { email: 'pat@example.com' },
      payment: { amount: invoice.amount_due, outcome: 'failed', invoiceId: invoice.id, attemptCount: 2, nextPaymentAttemptAt: new Date((created + 86_400) * 1000).toISOString() },
    });
  });

  it('deletes on customer.deleted and invoice.deleted only', () => {
    expect(applied(paymentEventEffects(paymentEvent('customer.deleted', customer))).changes[0]?.deleted).toBe(true);
    expect(applied(paymentEventEffects(paymentEvent('invoice.deleted', invoice))).changes[0]?.deleted).toBe(true);
    expect(applied(paymentEventEffects(paymentEvent('customer.subscription.deleted', subscription))).changes[0]?.deleted).toBeUndefined();
  });

  it('still applies an event whose record it cannot read, as a record to fetch', () => {
    const effects = applied(paymentEventEffects(paymentEvent('customer.subscription.updated', { id: 'sub_trimmed', object: 'subscription' })));
    expect(effects.changes).toEqual([{ object: 'subscriptions', id: 'sub_trimmed', version: created }]);
  });

  it('ignores, with why, what it does not apply', () => {
    for (const [type, object] of [
      ['payout.paid', { id: 'po_1', object: 'payout' }],
      ['customer.source.created', { id: 'card_1', object: 'card' }],
      ['invoice.upcoming', { object: 'invoice', customer: customer.id }],
      ['charge.dispute.closed', { id: 'dp_1', object: 'dispute', amount: 1 }],
    ] as const) {
      const effects = paymentEventEffects(paymentEvent(type, object));
      expect(effects.kind, type).toBe('ignored');
    }
  });
});

describe('billing platform events', () => {
  const factory = new BillingRecordFactory(4);
  const site = new BillingSiteData('acme');
  const version = { updated_at: created, resource_version: created * 1000 + 5 };
  const billingCustomer = factory.customer(site, created - 100, version, { email: 'bo@example.com' });
  site.customers.put(billingCustomer);
  const billingSubscription = factory.subscription(site, billingCustomer.id, 'active', created - 100, created - 100, version, {});
  const { invoice: billingInvoice, transaction } = factory.invoiceWithPayment(site, billingSubscription, false, created, version);
  const event = (eventType: string, content: Record<string, unknown>) => ({ id: `ev_${eventType}`, object: 'event', api_version: 'v2', occurred_at: created, source: 'api', webhook_status: 'scheduled', event_type: eventType, content });

  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['customer_created', { customer: billingCustomer }, 'customers', 'customer.created'],
    ['customer_changed', { customer: billingCustomer }, 'customers', 'customer.changed'],
    ['subscription_created', { subscription: billingSubscription, customer: billingCustomer }, 'subscriptions', 'subscription.created'],
    ['subscription_changed', { subscription: billingSubscription, customer: billingCustomer }, 'subscriptions', 'subscription.changed'],
    ['subscription_renewed', { subscription: billingSubscription, customer: billingCustomer }, 'subscriptions', 'subscription.renewed'],
    ['subscription_cancelled', { subscription: { ...billingSubscription, status: 'cancelled' }, customer: billingCustomer }, 'subscriptions', 'subscription.cancelled'],
    ['payment_succeeded', { transaction: { ...transaction, status: 'success' }, invoice: billingInvoice, customer: billingCustomer }, 'payments', 'payment.succeeded'],
    ['payment_failed', { transaction, invoice: billingInvoice, customer: billingCustomer }, 'payments', 'payment.failed'],
    ['invoice_generated', { invoice: billingInvoice, customer: billingCustomer }, 'invoices', 'invoice.generated'],
  ];

  it.each(cases)('%s applies to %s and publishes %s', (type, content, stored, published) => {
    const effects = applied(billingEventEffects(event(type, content)));
    expect(effects.changes.map((c) => c.object)).toContain(stored);
    // Every snapshot carries its own version; the customer travels with the event, so nothing is fetched.
    for (const change of effects.changes) expect(change.version).toBe(created * 1000 + 5);
    expect(effects.references).toEqual([]);
    expect(effects.publish?.type).toBe(published);
    expect(effects.publish?.plan(() => undefined)?.customerId).toBe(billingCustomer.id);
  });

  it('refers to the customer when the event does not carry it', () => {
    const effects = applied(billingEventEffects(event('subscription_changed', { subscription: billingSubscription })));
    expect(effects.references).toEqual([{ object: 'customers', id: billingCustomer.id }]);
  });

  it('keeps refunds out of payments, deletes on _deleted, ignores other resources', () => {
    const refund = applied(billingEventEffects(event('payment_refunded', { transaction: { ...transaction, type: 'refund' }, customer: billingCustomer })));
    expect(refund.changes.map((c) => c.object)).toEqual(['customers']);
    expect(refund.publish).toBeUndefined();
    const deleted = applied(billingEventEffects(event('subscription_deleted', { subscription: billingSubscription, customer: billingCustomer })));
    expect(deleted.changes.find((c) => c.object === 'subscriptions')?.deleted).toBe(true);
    expect(deleted.changes.find((c) => c.object === 'customers')?.deleted).toBeUndefined();
    expect(billingEventEffects(event('card_added', { customer: billingCustomer, card: { id: 'card_1' } })).kind).toBe('ignored');
    expect(billingEventEffects(event('coupon_created', { coupon: { id: 'c1' } })).kind).toBe('ignored');
  });
});

describe('property: event parsers never throw', () => {
  const types = fc.oneof(
    fc.constantFrom('customer.created', 'customer.subscription.updated', 'invoice.payment_failed', 'charge.dispute.created', 'charge.refunded', 'payment_intent.succeeded'),
    fc.constantFrom('customer_changed', 'subscription_cancelled', 'payment_failed', 'invoice_generated', 'transaction_updated'),
    fc.string({ minLength: 1, maxLength: 40 }),
  );
  const kinds = fc.constantFrom('customer', 'subscription', 'invoice', 'payment_intent', 'charge', 'dispute', 'payout', 'card');

  it('on any JSON at all', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const effects of [paymentEventEffects(value), billingEventEffects(value)]) expect(['apply', 'ignored']).toContain(effects.kind);
        for (const reading of [readPaymentEnvelope(value), readBillingEnvelope(value)]) expect(typeof reading.ok).toBe('boolean');
      }),
      { numRuns: 1000 },
    );
  });

  it('on event-shaped JSON with any type and any record inside', () => {
    const record = fc.record({ id: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()), object: kinds }, { requiredKeys: [] });
    const payment = fc.record({
      id: fc.string({ minLength: 1, maxLength: 20 }),
      object: fc.constant('event'),
      type: types,
      created: fc.integer({ min: 0, max: 4_000_000_000 }),
      data: fc.record({ object: fc.tuple(record, fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue())).map(([a, b]) => ({ ...b, ...a })), previous_attributes: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue()) }, { requiredKeys: ['object'] }),
    });
    const billing = fc.record({
      id: fc.string({ minLength: 1, maxLength: 20 }),
      object: fc.constant('event'),
      event_type: types,
      occurred_at: fc.integer({ min: 0, max: 4_000_000_000 }),
      content: fc.dictionary(fc.constantFrom('customer', 'subscription', 'invoice', 'transaction', 'card'), fc.oneof(record, fc.jsonValue())),
    });
    fc.assert(
      fc.property(payment, billing, (p, b) => {
        for (const effects of [paymentEventEffects(p), billingEventEffects(b)]) {
          if (effects.kind === 'apply') {
            for (const change of effects.changes) {
              expect(['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges', 'payments']).toContain(change.object);
              expect(Number.isFinite(change.version)).toBe(true);
            }
            if (effects.publish) {
              expect(PLAYBOOK_EVENT_TYPES).toContain(effects.publish.type);
              expect(effects.publish.plan(() => undefined)?.type ?? effects.publish.type).toBe(effects.publish.type);
            }
          } else {
            expect(effects.reason.length).toBeGreaterThan(0);
          }
        }
        expect(readPaymentEnvelope(p).ok).toBe(true);
        expect(readBillingEnvelope(b).ok).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('which copy wins', () => {
  const toSeconds = (ms: number) => Math.floor(ms / 1000);
  const stored = { hash: 'h', sourceVersion: 100 };

  it('writes newer, skips older and identical, and asks the platform on a tie with other content', () => {
    expect(writeDecision(undefined, { version: 1, hash: 'x' }, toSeconds)).toBe('write');
    expect(writeDecision(stored, { version: 101, hash: 'x' }, toSeconds)).toBe('write');
    expect(writeDecision(stored, { version: 99, hash: 'x' }, toSeconds)).toBe('stale');
    expect(writeDecision(stored, { version: 100, hash: 'h' }, toSeconds)).toBe('stale');
    expect(writeDecision(stored, { version: 100, hash: 'x' }, toSeconds)).toBe('fetch');
    expect(writeDecision({ ...stored, deletedAt: '2025-01-01T00:00:00Z' }, { version: 100, hash: 'x' }, toSeconds)).toBe('stale');
  });

  it("dates a sync's unversioned copy by when it was written", () => {
    const synced = { hash: 'h', syncedAt: new Date(100_500).toISOString() };
    expect(writeDecision(synced, { version: 99, hash: 'x' }, toSeconds)).toBe('stale');
    expect(writeDecision(synced, { version: 100, hash: 'x' }, toSeconds)).toBe('fetch');
    expect(writeDecision(synced, { version: 101, hash: 'x' }, toSeconds)).toBe('write');
    expect(writeDecision({ hash: 'h' }, { version: 1, hash: 'x' }, toSeconds)).toBe('write');
  });
});

describe('messages too big for the queue', () => {
  it('keep their ids and lose their record bodies, so the worker fetches the records', () => {
    const big = { ...customer, metadata: { note: 'x'.repeat(MAX_MESSAGE_BYTES) } };
    const message = { accountId: 'acme', connector: 'payment' as const, eventId: 'evt_big', eventType: 'customer.updated', receivedAt: new Date().toISOString(), payload: paymentEvent('customer.updated', big) };
    const fitted = fitForQueue(message, paymentWebhookReceiver);
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThan(MAX_MESSAGE_BYTES);
    expect((fitted.payload.data as { object: unknown }).object).toEqual({ id: customer.id, object: 'customer', gatewayTrimmed: true });
    expect(applied(paymentEventEffects(fitted.payload)).changes).toEqual([{ object: 'customers', id: customer.id, version: created }]);
    const small = { ...message, payload: paymentEvent('customer.updated', customer) };
    expect(fitForQueue(small, paymentWebhookReceiver)).toBe(small);
  });
});
