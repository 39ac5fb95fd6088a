import { describe, expect, it } from 'vitest';
import { PaymentRecordFactory } from '../../sandbox/payment-records';
import {
  chargeOutcome,
  paymentIntentOutcome,
  readPaymentRecord,
  subscriptionState,
} from '../../shared/payment/objects';
import type { PaymentObject } from '../../shared/payment/settings';
import { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';
import type { NormalisedRecord } from '../../shared/sync/sync-source';

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z
const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();

function read(object: PaymentObject, raw: unknown, sourceVersion?: number): NormalisedRecord {
  const reading = readPaymentRecord(object, raw, sourceVersion);
  if (!reading.ok) throw new Error(`expected ${object} to read: ${reading.problem}`);
  return reading.record;
}

const SCHEMA = {
  customers: NormalisedCustomer,
  subscriptions: NormalisedSubscription,
  invoices: NormalisedInvoice,
  payment_intents: NormalisedPayment,
  charges: NormalisedPayment,
} as const;

describe('customers', () => {
  it('maps a full customer; a listed record has no version and no updatedAt', () => {
    const record = read('customers', {
      id: 'cus_Q1w2e3r4t5y6u7',
      object: 'customer',
      email: 'ada.lovelace@example.com',
      name: 'Ada Lovelace',
      created: T0,
      balance: 0,
      livemode: false,
      metadata: { plan: 'growth' },
      invoice_settings: { default_payment_method: null },
    });
    expect(record).toEqual({
      id: 'cus_Q1w2e3r4t5y6u7',
      email: 'ada.lovelace@example.com',
      fields: { id: 'cus_Q1w2e3r4t5y6u7', email: 'ada.lovelace@example.com', name: 'Ada Lovelace', createdAt: iso(T0) },
    });
    expect(NormalisedCustomer.parse(record.fields)).toEqual(record.fields);
  });

  it('keeps a customer without email or name, and versions one read from an event', () => {
    const record = read('customers', { id: 'cus_x', object: 'customer', email: null, name: null, created: T0 }, T0 + 60);
    expect(record.email).toBeUndefined();
    expect(record.fields).toEqual({ id: 'cus_x', createdAt: iso(T0) });
    expect(record.sourceVersion).toBe(T0 + 60);
    expect(record.updatedAt).toBe(iso(T0 + 60));
  });

  it('hashes the same whether listed or read from an event: the version stays out of fields', () => {
    const raw = { id: 'cus_x', email: 'a@example.com', created: T0 };
    expect(read('customers', raw).fields).toEqual(read('customers', raw, T0 + 5).fields);
  });
});

describe('subscriptions', () => {
  const price = { id: 'price_growth', object: 'price', nickname: 'Growth', unit_amount: 4900, currency: 'usd', product: 'prod_1' };

  it('reads the newer API shape: period on the items, expanded customer', () => {
    const record = read('subscriptions', {
      id: 'sub_1',
      object: 'subscription',
      customer: { id: 'cus_1', object: 'customer', email: 'x@example.com' },
      status: 'active',
      created: T0,
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      currency: 'usd',
      items: { object: 'list', data: [{ id: 'si_1', quantity: 2, current_period_end: T0 + 30 * 86_400, price }] },
    });
    expect(record.customerId).toBe('cus_1');
    expect(record.fields).toEqual({
      id: 'sub_1',
      customerId: 'cus_1',
      state: 'active',
      status: 'active',
      planId: 'price_growth',
      planName: 'Growth',
      amount: 9800,
      currency: 'usd',
      currentPeriodEnd: iso(T0 + 30 * 86_400),
      nextBillingAt: iso(T0 + 30 * 86_400),
      createdAt: iso(T0),
    });
    expect(NormalisedSubscription.parse(record.fields)).toEqual(record.fields);
  });

  it('reads the older API shape: period on the subscription, legacy plan, no items', () => {
    const record = read('subscriptions', {
      id: 'sub_2',
      customer: 'cus_2',
      status: 'trialing',
      current_period_end: T0 + 14 * 86_400,
      plan: { id: 'plan_basic', nickname: 'Basic', amount: 1900 },
    });
    expect(record.fields).toMatchObject({ planId: 'plan_basic', planName: 'Basic', amount: 1900, state: 'trialing', nextBillingAt: iso(T0 + 14 * 86_400) });
  });

  it('an active subscription set to cancel is non-renewing: no next payment, cancellation requested', () => {
    const record = read('subscriptions', {
      id: 'sub_3',
      customer: 'cus_3',
      status: 'active',
      cancel_at_period_end: true,
      canceled_at: T0 + 100,
      current_period_end: T0 + 1_000,
    });
    expect(record.fields).toMatchObject({ state: 'non_renewing', cancelledAt: iso(T0 + 100), currentPeriodEnd: iso(T0 + 1_000) });
    expect(record.fields.nextBillingAt).toBeUndefined();
  });

  it('a canceled subscription is cancelled, dated by when it ended', () => {
    const record = read('subscriptions', { id: 'sub_4', customer: 'cus_4', status: 'canceled', canceled_at: T0, ended_at: T0 + 500 });
    expect(record.fields).toMatchObject({ state: 'cancelled', status: 'canceled', cancelledAt: iso(T0 + 500) });
  });

  it('leaves the amount out when a price has no unit amount (tiered)', () => {
    const record = read('subscriptions', {
      id: 'sub_5',
      customer: 'cus_5',
      status: 'past_due',
      items: { data: [{ quantity: 1, price }, { quantity: 3, price: { id: 'price_tiered', unit_amount: null } }] },
    });
    expect(record.fields.amount).toBeUndefined();
    expect(record.fields.state).toBe('past_due');
  });

  it('maps every platform status', () => {
    expect(subscriptionState('active', false)).toBe('active');
    expect(subscriptionState('active', true)).toBe('non_renewing');
    expect(subscriptionState('incomplete_expired', false)).toBe('cancelled');
    expect(subscriptionState('paused', false)).toBe('paused');
    expect(subscriptionState('unpaid', false)).toBe('unpaid');
    expect(subscriptionState('something_new', false)).toBe('other');
  });
});

describe('invoices', () => {
  it('reads the older shape (subscription on the invoice)', () => {
    const record = read('invoices', {
      id: 'in_1',
      object: 'invoice',
      customer: 'cus_1',
      subscription: 'sub_1',
      status: 'open',
      total: 4900,
      amount_due: 4900,
      amount_paid: 0,
      currency: 'usd',
      created: T0,
      status_transitions: { finalized_at: T0 + 3_600, paid_at: null },
      due_date: null,
      next_payment_attempt: T0 + 3 * 86_400,
    });
    expect(record.customerId).toBe('cus_1');
    expect(record.fields).toEqual({
      id: 'in_1',
      customerId: 'cus_1',
      subscriptionId: 'sub_1',
      status: 'open',
      total: 4900,
      amountDue: 4900,
      amountPaid: 0,
      currency: 'usd',
      issuedAt: iso(T0 + 3_600),
      nextPaymentAttemptAt: iso(T0 + 3 * 86_400),
    });
    expect(NormalisedInvoice.parse(record.fields)).toEqual(record.fields);
  });

  it('reads the newer shape (parent.subscription_details) and keeps an invoice without a customer', () => {
    const record = read('invoices', {
      id: 'in_2',
      customer: null,
      parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_9', metadata: {} } },
      status: null,
      created: T0,
    });
    expect(record.customerId).toBeUndefined();
    expect(record.fields).toMatchObject({ customerId: '', subscriptionId: 'sub_9', status: 'unknown', issuedAt: iso(T0) });
  });
});

describe('payments', () => {
  it('payment intents: succeeded, failed after an attempt, pending before one, canceled', () => {
    const base = { id: 'pi_1', object: 'payment_intent', customer: 'cus_1', amount: 4900, currency: 'usd', created: T0 };
    const succeeded = read('payment_intents', { ...base, status: 'succeeded', invoice: 'in_1', latest_charge: 'ch_1' });
    expect(succeeded.fields).toEqual({
      id: 'pi_1',
      customerId: 'cus_1',
      invoiceId: 'in_1',
      amount: 4900,
      currency: 'usd',
      outcome: 'succeeded',
      status: 'succeeded',
      at: iso(T0),
    });
    expect(NormalisedPayment.parse(succeeded.fields)).toEqual(succeeded.fields);

    const failed = read('payment_intents', {
      ...base,
      status: 'requires_payment_method',
      latest_charge: { id: 'ch_2', object: 'charge' },
      last_payment_error: { code: 'card_declined', message: 'Your card was declined.' },
    });
    expect(failed.fields).toMatchObject({ outcome: 'failed', failureMessage: 'Your card was declined.' });
    expect(paymentIntentOutcome({ status: 'requires_payment_method', latest_charge: null, last_payment_error: null })).toBe('pending');
    expect(paymentIntentOutcome({ status: 'requires_action' })).toBe('pending');
    expect(paymentIntentOutcome({ status: 'canceled' })).toBe('other');
  });

  it('keeps a guest payment intent (no customer)', () => {
    const record = read('payment_intents', { id: 'pi_guest', customer: null, amount: 500, status: 'processing' });
    expect(record.customerId).toBeUndefined();
    expect(record.fields).toEqual({ id: 'pi_guest', customerId: '', amount: 500, outcome: 'pending', status: 'processing' });
  });

  it('charges: refunded, failed with the reason, pending', () => {
    const base = { id: 'ch_1', object: 'charge', customer: 'cus_1', amount: 1900, currency: 'usd', created: T0 };
    expect(read('charges', { ...base, status: 'succeeded', refunded: true, amount_refunded: 1900 }).fields.outcome).toBe('refunded');
    const failed = read('charges', { ...base, status: 'failed', refunded: false, failure_code: 'card_declined', failure_message: 'Your card was declined.' });
    expect(failed.fields).toMatchObject({ outcome: 'failed', failureMessage: 'Your card was declined.', status: 'failed' });
    expect(chargeOutcome({ status: 'pending' })).toBe('pending');
  });
});

describe('records the simulator makes (realistic, every status)', () => {
  it('all read and parse with the normalised shapes', () => {
    const factory = new PaymentRecordFactory(3);
    const statuses = ['active', 'trialing', 'past_due', 'canceled', 'unpaid', 'incomplete', 'incomplete_expired', 'paused'] as const;
    for (const [index, status] of statuses.entries()) {
      const customer = factory.customer('test', T0 + index);
      const subscription = factory.subscription(customer, status, T0 + index, T0 + 90 * 86_400);
      const chain = factory.invoiceChain(subscription, customer, 'open', subscription.current_period_start, T0 + 90 * 86_400);
      const pairs: Array<[PaymentObject, unknown]> = [
        ['customers', customer],
        ['subscriptions', subscription],
        ['invoices', chain.invoice],
        ['payment_intents', chain.paymentIntent],
        ['charges', chain.charge],
      ];
      for (const [object, raw] of pairs) {
        if (raw === undefined) continue; // trials cost nothing: no payment
        const record = read(object, raw);
        expect(SCHEMA[object].safeParse(record.fields).success).toBe(true);
        expect(record.id).toBe((raw as { id: string }).id);
        if (object !== 'customers') expect(record.customerId).toBe(customer.id);
      }
    }
  });
});

describe('malformed records', () => {
  it('say which field is wrong, without echoing values', () => {
    const secretLooking = 'sk_test_0123456789abcdefghij';
    const reading = readPaymentRecord('customers', { id: 'cus_1', email: { value: secretLooking }, created: T0 });
    expect(reading.ok).toBe(false);
    if (reading.ok) return;
    expect(reading.problem).toContain('email');
    expect(reading.problem).not.toContain(secretLooking);
  });

  it('refuse a record without an id, an amount that is not a whole number, and a wild timestamp', () => {
    expect(readPaymentRecord('charges', { customer: 'cus_1', amount: 100, status: 'succeeded' }).ok).toBe(false);
    const amount = readPaymentRecord('payment_intents', { id: 'pi_1', customer: 'cus_1', amount: '49.00', status: 'succeeded' });
    expect(amount.ok ? '' : amount.problem).toContain('amount');
    const created = readPaymentRecord('customers', { id: 'cus_1', created: 1e15 });
    expect(created.ok ? '' : created.problem).toContain('created');
  });

  it('refuse a subscription whose customer is missing', () => {
    const reading = readPaymentRecord('subscriptions', { id: 'sub_1', status: 'active' });
    expect(reading.ok ? '' : reading.problem).toContain('customer');
  });
});
