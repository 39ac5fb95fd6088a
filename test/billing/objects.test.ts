import { describe, expect, it } from 'vitest';
import {
  BillingCustomerRecord,
  BillingInvoiceRecord,
  BillingSubscriptionRecord,
  BillingTransactionRecord,
  normaliseBillingCustomer,
  normaliseBillingInvoice,
  normaliseBillingPayment,
  normaliseBillingSubscription,
  paymentOutcome,
  readBillingRecord,
  subscriptionState,
} from '../../shared/billing/objects';
import { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';

// Records shaped as the billing platform's API v2 answers them (Unix seconds, minor units, extra
// fields the gateway does not read).
const customer = {
  id: '16CQtCTrgrYwi9n2E',
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada.lovelace@example.com',
  auto_collection: 'on',
  net_term_days: 0,
  allow_direct_debit: false,
  created_at: 1_717_200_000,
  taxability: 'taxable',
  updated_at: 1_717_286_400,
  pii_cleared: 'active',
  channel: 'web',
  resource_version: 1_717_286_400_123,
  deleted: false,
  object: 'customer',
  card_status: 'valid',
  preferred_currency_code: 'USD',
  mrr: 0,
};

const subscription = {
  id: 'AzZlGJTrgsCbU1Ah',
  billing_period: 1,
  billing_period_unit: 'month',
  customer_id: '16CQtCTrgrYwi9n2E',
  status: 'active',
  current_term_start: 1_717_200_000,
  current_term_end: 1_719_792_000,
  next_billing_at: 1_719_792_000,
  created_at: 1_717_200_000,
  started_at: 1_717_200_000,
  activated_at: 1_717_200_000,
  updated_at: 1_717_200_100,
  has_scheduled_changes: false,
  channel: 'web',
  resource_version: 1_717_200_100_456,
  deleted: false,
  object: 'subscription',
  currency_code: 'USD',
  subscription_items: [
    { item_price_id: 'growth-USD-Monthly', item_type: 'plan', quantity: 1, unit_price: 4900, amount: 4900, free_quantity: 0, object: 'subscription_item' },
    { item_price_id: 'extra-seats-USD-Monthly', item_type: 'addon', quantity: 3, unit_price: 500, amount: 1500, object: 'subscription_item' },
  ],
  due_invoices_count: 0,
  mrr: 6400,
};

const invoice = {
  id: 'INV-1042',
  customer_id: '16CQtCTrgrYwi9n2E',
  subscription_id: 'AzZlGJTrgsCbU1Ah',
  recurring: true,
  status: 'payment_due',
  price_type: 'tax_exclusive',
  date: 1_717_200_000,
  due_date: 1_717_200_000,
  net_term_days: 0,
  exchange_rate: 1.0,
  total: 6400,
  amount_paid: 0,
  amount_adjusted: 0,
  write_off_amount: 0,
  credits_applied: 0,
  amount_due: 6400,
  dunning_status: 'in_progress',
  next_retry_at: 1_717_459_200,
  updated_at: 1_717_200_050,
  resource_version: 1_717_200_050_789,
  deleted: false,
  object: 'invoice',
  first_invoice: true,
  currency_code: 'USD',
  linked_payments: [{ txn_id: 'txn_AzZlGJTrgsCd81Aj', applied_amount: 0, txn_status: 'failure' }],
};

const transaction = {
  id: 'txn_AzZlGJTrgsCd81Aj',
  customer_id: '16CQtCTrgrYwi9n2E',
  subscription_id: 'AzZlGJTrgsCbU1Ah',
  payment_method: 'card',
  gateway: 'stripe',
  type: 'payment',
  date: 1_717_200_010,
  exchange_rate: 1.0,
  amount: 6400,
  id_at_gateway: 'ch_3Abc',
  status: 'failure',
  error_code: 'card_declined',
  error_text: 'Your card was declined.',
  updated_at: 1_717_200_020,
  resource_version: 1_717_200_020_111,
  deleted: false,
  object: 'transaction',
  masked_card_number: '************4242',
  currency_code: 'USD',
  amount_unused: 0,
  linked_invoices: [{ invoice_id: 'INV-1042', applied_amount: 0, invoice_date: 1_717_200_000, invoice_total: 6400, invoice_status: 'payment_due' }],
};

/** A copy of a record without some of its fields, as the platform omits absent attributes. */
function without(record: Record<string, unknown>, ...fields: string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...record };
  for (const field of fields) delete copy[field];
  return copy;
}

describe('customers', () => {
  it('maps a full record: email, name, ISO times, resource_version as the source version', () => {
    const record = normaliseBillingCustomer(BillingCustomerRecord.parse(customer));
    expect(record).toEqual({
      id: customer.id,
      email: 'ada.lovelace@example.com',
      sourceVersion: 1_717_286_400_123,
      updatedAt: '2024-06-02T00:00:00.000Z',
      fields: {
        id: customer.id,
        email: 'ada.lovelace@example.com',
        name: 'Ada Lovelace',
        createdAt: '2024-06-01T00:00:00.000Z',
        updatedAt: '2024-06-02T00:00:00.000Z',
      },
    });
    expect(NormalisedCustomer.parse(record.fields)).toEqual(record.fields);
  });

  it('keeps a record without updated_at (updatedAt undefined), with resource_version still its version', () => {
    const record = normaliseBillingCustomer(BillingCustomerRecord.parse(without(customer, 'updated_at')));
    expect(record.updatedAt).toBeUndefined();
    expect('updatedAt' in record.fields).toBe(false);
    expect(record.sourceVersion).toBe(customer.resource_version);
  });

  it('falls back to updated_at (in milliseconds, the unit of resource_version) as the version, and to nothing when both are missing', () => {
    expect(normaliseBillingCustomer(BillingCustomerRecord.parse(without(customer, 'resource_version'))).sourceVersion).toBe(customer.updated_at * 1000);
    const bare = normaliseBillingCustomer(BillingCustomerRecord.parse({ id: 'cust_bare' }));
    expect(bare).toEqual({ id: 'cust_bare', fields: { id: 'cust_bare' } });
  });

  it('uses the company when there is no person name, and accepts nulls as absent', () => {
    const record = normaliseBillingCustomer(
      BillingCustomerRecord.parse({ id: 'cust_co', company: 'Analytical Engines Ltd', first_name: null, last_name: '', email: null, updated_at: null }),
    );
    expect(record.fields).toEqual({ id: 'cust_co', name: 'Analytical Engines Ltd' });
    expect(record.email).toBeUndefined();
  });
});

describe('subscriptions', () => {
  it('maps plan, amount (plan + addons), status, term end and next billing', () => {
    const record = normaliseBillingSubscription(BillingSubscriptionRecord.parse(subscription));
    expect(record.customerId).toBe(subscription.customer_id);
    expect(record.sourceVersion).toBe(subscription.resource_version);
    expect(record.fields).toEqual({
      id: subscription.id,
      customerId: subscription.customer_id,
      state: 'active',
      status: 'active',
      planId: 'growth-USD-Monthly',
      amount: 6400,
      currency: 'USD',
      currentPeriodEnd: '2024-07-01T00:00:00.000Z',
      nextBillingAt: '2024-07-01T00:00:00.000Z',
      createdAt: '2024-06-01T00:00:00.000Z',
      updatedAt: new Date(subscription.updated_at * 1000).toISOString(),
    });
    expect(NormalisedSubscription.parse(record.fields)).toEqual(record.fields);
  });

  it('maps a cancelled subscription that has no next billing and no items', () => {
    const cancelled = { ...without(subscription, 'next_billing_at', 'current_term_end', 'subscription_items', 'updated_at'), status: 'cancelled', cancelled_at: 1_718_000_000 };
    const record = normaliseBillingSubscription(BillingSubscriptionRecord.parse(cancelled));
    expect(record.fields).toMatchObject({ state: 'cancelled', status: 'cancelled', cancelledAt: new Date(1_718_000_000_000).toISOString() });
    expect(record.fields).not.toHaveProperty('nextBillingAt');
    expect(record.fields).not.toHaveProperty('planId');
    expect(record.updatedAt).toBeUndefined();
  });

  it('reads the plan of a product catalog 1.0 site', () => {
    const legacy = { ...without(subscription, 'subscription_items'), plan_id: 'basic-monthly', plan_amount: 1900 };
    expect(normaliseBillingSubscription(BillingSubscriptionRecord.parse(legacy)).fields).toMatchObject({ planId: 'basic-monthly', amount: 1900 });
  });

  it('maps every platform status, and unknown ones to other', () => {
    const states = ['future', 'in_trial', 'active', 'non_renewing', 'paused', 'cancelled', 'transferred', 'something_new'].map(subscriptionState);
    expect(states).toEqual(['future', 'trialing', 'active', 'non_renewing', 'paused', 'cancelled', 'other', 'other']);
  });
});

describe('invoices', () => {
  it('maps totals, dates and the next payment attempt', () => {
    const record = normaliseBillingInvoice(BillingInvoiceRecord.parse(invoice));
    expect(record).toMatchObject({ id: 'INV-1042', customerId: invoice.customer_id, sourceVersion: invoice.resource_version });
    expect(record.fields).toEqual({
      id: 'INV-1042',
      customerId: invoice.customer_id,
      subscriptionId: invoice.subscription_id,
      status: 'payment_due',
      total: 6400,
      amountDue: 6400,
      amountPaid: 0,
      currency: 'USD',
      issuedAt: '2024-06-01T00:00:00.000Z',
      dueAt: '2024-06-01T00:00:00.000Z',
      nextPaymentAttemptAt: '2024-06-04T00:00:00.000Z',
      updatedAt: new Date(invoice.updated_at * 1000).toISOString(),
    });
    expect(NormalisedInvoice.parse(record.fields)).toEqual(record.fields);
  });

  it('maps a one-off invoice without subscription, retry or amounts', () => {
    const oneOff = without(invoice, 'subscription_id', 'next_retry_at', 'amount_due', 'amount_paid', 'total', 'updated_at', 'resource_version');
    const record = normaliseBillingInvoice(BillingInvoiceRecord.parse({ ...oneOff, status: 'paid' }));
    expect(record.fields).toEqual({ id: 'INV-1042', customerId: invoice.customer_id, status: 'paid', currency: 'USD', issuedAt: '2024-06-01T00:00:00.000Z', dueAt: '2024-06-01T00:00:00.000Z' });
    expect(record.sourceVersion).toBeUndefined();
  });
});

describe('payments (transactions)', () => {
  it('maps a failed payment with its invoice, subscription and failure message', () => {
    const record = normaliseBillingPayment(BillingTransactionRecord.parse(transaction));
    expect(record.fields).toEqual({
      id: transaction.id,
      customerId: transaction.customer_id,
      invoiceId: 'INV-1042',
      subscriptionId: transaction.subscription_id,
      amount: 6400,
      currency: 'USD',
      outcome: 'failed',
      status: 'failure',
      failureMessage: 'Your card was declined.',
      at: new Date(transaction.date * 1000).toISOString(),
      updatedAt: new Date(transaction.updated_at * 1000).toISOString(),
    });
    expect(NormalisedPayment.parse(record.fields)).toEqual(record.fields);
  });

  it('maps every transaction status to an outcome', () => {
    const statuses = ['success', 'failure', 'timeout', 'late_failure', 'in_progress', 'needs_attention', 'voided', 'brand_new'];
    expect(statuses.map(paymentOutcome)).toEqual(['succeeded', 'failed', 'failed', 'failed', 'pending', 'pending', 'other', 'other']);
  });

  it('maps a payment without linked invoices or subscription', () => {
    const bare = { ...without(transaction, 'linked_invoices', 'subscription_id', 'error_text', 'error_code'), status: 'success' };
    const record = normaliseBillingPayment(BillingTransactionRecord.parse(bare));
    expect(record.fields).toMatchObject({ outcome: 'succeeded', status: 'success' });
    expect(record.fields).not.toHaveProperty('invoiceId');
    expect(record.fields).not.toHaveProperty('failureMessage');
  });
});

describe('readBillingRecord', () => {
  it('reads each object by its schema', () => {
    const read = [
      readBillingRecord('customers', customer),
      readBillingRecord('subscriptions', subscription),
      readBillingRecord('invoices', invoice),
      readBillingRecord('payments', transaction),
    ];
    expect(read.map((r) => (r.ok ? r.record.id : r.problem))).toEqual([customer.id, subscription.id, invoice.id, transaction.id]);
  });

  it('names the bad fields without quoting their values', () => {
    const privateEmail = 'private.person@example.com';
    const bad = readBillingRecord('payments', { ...transaction, amount: '64.00', customer_id: undefined, error_text: privateEmail, status: 7 });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problem).toContain('customer_id');
    expect(bad.problem).toContain('status');
    expect(bad.problem).not.toContain(privateEmail);
    expect(bad.problem).not.toContain('64.00');
  });

  it('refuses a record that is not an object, and a millisecond timestamp that no date can hold', () => {
    expect(readBillingRecord('customers', 'cust_1').ok).toBe(false);
    expect(readBillingRecord('customers', { ...customer, created_at: 1_717_200_000_000_000 })).toMatchObject({ ok: false, problem: expect.stringMatching(/timestamp|createdAt/) });
  });
});
