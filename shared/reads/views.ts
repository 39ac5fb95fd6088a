import * as z from 'zod/mini';
import { NormalisedPayment, NormalisedSubscription, SubscriptionState, type NormalisedCustomer, type NormalisedInvoice } from '../sync/normalised';
import { Freshness } from './freshness';
import { PLAYBOOK_CONNECTORS, type ReadRecord } from './read-record';
import { isCancelling } from './subscriptions';

/**
 * What the playbook reads answer, as zod schemas: they validate nothing on the way in but
 * describe every answer in the OpenAPI document. Amounts are in the currency's minor unit.
 */

const Time = z.iso.datetime({ offset: true });
export const PlaybookConnectorName = z.enum(PLAYBOOK_CONNECTORS);

export const CustomerView = z
  .object({
    connector: PlaybookConnectorName,
    id: z.string().check(z.describe("The customer's id on that platform")),
    email: z.optional(z.string()),
    name: z.optional(z.string()),
  })
  .register(z.globalRegistry, { id: 'PlaybookCustomer' });
export type CustomerView = z.infer<typeof CustomerView>;

export const SubscriptionView = z
  .extend(
    z.pick(NormalisedSubscription, {
      id: true,
      customerId: true,
      planId: true,
      planName: true,
      amount: true,
      currency: true,
      currentPeriodEnd: true,
      nextBillingAt: true,
    }),
    {
      connector: PlaybookConnectorName,
      status: z.string().check(z.describe("The platform's own status word")),
      state: SubscriptionState.check(z.describe('The status in the gateway’s vocabulary, the same for both platforms')),
      cancelling: z.boolean().check(z.describe('Set to end at its period end (it will not renew)')),
    },
  )
  .register(z.globalRegistry, { id: 'PlaybookSubscription' });
export type SubscriptionView = z.infer<typeof SubscriptionView>;

export const NextPaymentView = z
  .object({
    at: Time,
    amount: z.optional(z.number().check(z.int())),
    currency: z.optional(z.string()),
    source: z.object({
      kind: z.enum(['subscription', 'invoice']),
      connector: PlaybookConnectorName,
      id: z.string(),
      field: z.enum(['nextBillingAt', 'nextPaymentAttemptAt', 'dueAt']).check(z.describe('Which date of the subscription or invoice this is')),
    }),
  })
  .register(z.globalRegistry, { id: 'NextPayment' });

export const TierView = z
  .object({
    connector: PlaybookConnectorName,
    subscriptionId: z.string(),
    state: SubscriptionState,
    planId: z.optional(z.string()),
    planName: z.optional(z.string()),
    amount: z.optional(z.number().check(z.int())).check(z.describe('Recurring amount per period')),
    currency: z.optional(z.string()),
  })
  .register(z.globalRegistry, { id: 'Tier' });

export const PaymentView = z
  .extend(z.omit(NormalisedPayment, { updatedAt: true }), {
    connector: PlaybookConnectorName,
    object: z.string().check(z.describe('The synced object: payments (billing), charges or payment_intents (payment)')),
    status: z.string().check(z.describe("The platform's own status word")),
  })
  .register(z.globalRegistry, { id: 'PlaybookPayment' });

export const InvoiceView = z
  .object({
    connector: PlaybookConnectorName,
    id: z.string(),
    customerId: z.string(),
    subscriptionId: z.optional(z.string()),
    status: z.string().check(z.describe("The platform's own status word")),
    total: z.optional(z.number().check(z.int())),
    amountDue: z.optional(z.number().check(z.int())),
    amountPaid: z.optional(z.number().check(z.int())),
    currency: z.optional(z.string()),
    issuedAt: z.optional(Time),
    dueAt: z.optional(Time),
    nextPaymentAttemptAt: z.optional(Time),
  })
  .register(z.globalRegistry, { id: 'PlaybookInvoice' });

const Customers = z.array(CustomerView).check(z.describe('The customer as found on each connector (an email may match on both platforms)'));

export const CustomerSubscriptionAnswer = z
  .object({
    customers: Customers,
    subscription: z.nullable(SubscriptionView).check(z.describe('The current subscription: active first, then the latest period end')),
    reason: z
      .optional(z.enum(['no_subscriptions', 'none_current']))
      .check(z.describe('Why subscription is null: no subscription synced, or none running (all cancelled, paused, ...)')),
    freshness: Freshness,
  })
  .register(z.globalRegistry, { id: 'CustomerSubscription' });
export type CustomerSubscriptionAnswer = z.infer<typeof CustomerSubscriptionAnswer>;

export const NextPaymentAnswer = z
  .object({
    customers: Customers,
    nextPayment: z.nullable(NextPaymentView),
    reason: z
      .optional(z.enum(['no_current_subscription', 'cancelling', 'no_date_known']))
      .check(z.describe('Why nextPayment is null: nothing running and nothing owed, the subscription will not renew, or no date is synced')),
    freshness: Freshness,
  })
  .register(z.globalRegistry, { id: 'CustomerNextPayment' });
export type NextPaymentAnswer = z.infer<typeof NextPaymentAnswer>;

export const PaymentsAnswer = z
  .object({
    customers: Customers,
    tier: z.nullable(TierView).check(z.describe('Plan and amount of the current subscription; null without one')),
    payments: z.array(PaymentView).check(z.describe('Newest first')),
    freshness: Freshness,
  })
  .register(z.globalRegistry, { id: 'CustomerPayments' });
export type PaymentsAnswer = z.infer<typeof PaymentsAnswer>;

export const InvoicesAnswer = z
  .object({ customers: Customers, invoices: z.array(InvoiceView).check(z.describe('Newest first')), freshness: Freshness })
  .register(z.globalRegistry, { id: 'CustomerInvoices' });
export type InvoicesAnswer = z.infer<typeof InvoicesAnswer>;

const NextCursor = z
  .optional(z.string())
  .check(z.describe('Pass back as `cursor` for the next page; absent on the last page. A page may hold fewer than `limit` items and still have a next one.'));

export const SubscriberView = z
  .extend(
    z.pick(NormalisedSubscription, {
      customerId: true,
      planId: true,
      planName: true,
      state: true,
      status: true,
      nextBillingAt: true,
      currentPeriodEnd: true,
    }),
    {
      email: z.optional(z.string()).check(z.describe('When the customer is synced with an email')),
      subscriptionId: z.string(),
      cancelling: z.boolean(),
    },
  )
  .register(z.globalRegistry, { id: 'Subscriber' });
export type SubscriberView = z.infer<typeof SubscriberView>;

export const SubscribersPage = z
  .object({ connector: PlaybookConnectorName, subscribers: z.array(SubscriberView), nextCursor: NextCursor, freshness: Freshness })
  .register(z.globalRegistry, { id: 'SubscribersPage' });
export type SubscribersPage = z.infer<typeof SubscribersPage>;

export const FailedPaymentView = z
  .extend(
    z.pick(NormalisedPayment, {
      customerId: true,
      amount: true,
      currency: true,
      invoiceId: true,
      subscriptionId: true,
      status: true,
      failureMessage: true,
      at: true,
    }),
    { email: z.optional(z.string()), paymentId: z.string(), object: z.string() },
  )
  .register(z.globalRegistry, { id: 'FailedPayment' });
export type FailedPaymentView = z.infer<typeof FailedPaymentView>;

export const FailedPaymentsPage = z
  .object({ connector: PlaybookConnectorName, payments: z.array(FailedPaymentView), nextCursor: NextCursor, freshness: Freshness })
  .register(z.globalRegistry, { id: 'FailedPaymentsPage' });
export type FailedPaymentsPage = z.infer<typeof FailedPaymentsPage>;

// ---------- mapping normalised records onto the views ----------

/** Drops undefined values, so answers carry no `"field": undefined` noise. */
function defined<T extends Record<string, unknown>>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}

export function customerView(customer: ReadRecord<NormalisedCustomer> | { connector: CustomerView['connector']; id: string }): CustomerView {
  if ('body' in customer) {
    return defined({ connector: customer.connector, id: customer.body.id, email: customer.body.email, name: customer.body.name });
  }
  return { connector: customer.connector, id: customer.id };
}

export function subscriptionView({ connector, body }: ReadRecord<NormalisedSubscription>): SubscriptionView {
  return defined({
    connector,
    id: body.id,
    customerId: body.customerId,
    planId: body.planId,
    planName: body.planName,
    status: body.status,
    state: body.state,
    cancelling: isCancelling(body),
    amount: body.amount,
    currency: body.currency,
    currentPeriodEnd: body.currentPeriodEnd,
    nextBillingAt: body.nextBillingAt,
  });
}

export function paymentView({ connector, object, body }: ReadRecord<NormalisedPayment>): z.infer<typeof PaymentView> {
  return defined({
    connector,
    object,
    id: body.id,
    customerId: body.customerId,
    invoiceId: body.invoiceId,
    subscriptionId: body.subscriptionId,
    amount: body.amount,
    currency: body.currency,
    outcome: body.outcome,
    status: body.status,
    failureMessage: body.failureMessage,
    at: body.at,
  });
}

export function invoiceView({ connector, body }: ReadRecord<NormalisedInvoice>): z.infer<typeof InvoiceView> {
  return defined({
    connector,
    id: body.id,
    customerId: body.customerId,
    subscriptionId: body.subscriptionId,
    status: body.status,
    total: body.total,
    amountDue: body.amountDue,
    amountPaid: body.amountPaid,
    currency: body.currency,
    issuedAt: body.issuedAt,
    dueAt: body.dueAt,
    nextPaymentAttemptAt: body.nextPaymentAttemptAt,
  });
}

export function subscriberView(subscription: NormalisedSubscription, email: string | undefined): SubscriberView {
  return defined({
    customerId: subscription.customerId,
    email,
    subscriptionId: subscription.id,
    planId: subscription.planId,
    planName: subscription.planName,
    state: subscription.state,
    status: subscription.status,
    cancelling: isCancelling(subscription),
    nextBillingAt: subscription.nextBillingAt,
    currentPeriodEnd: subscription.currentPeriodEnd,
  });
}

export function failedPaymentView(object: string, payment: NormalisedPayment, email: string | undefined): FailedPaymentView {
  return defined({
    customerId: payment.customerId,
    email,
    paymentId: payment.id,
    object,
    amount: payment.amount,
    currency: payment.currency,
    invoiceId: payment.invoiceId,
    subscriptionId: payment.subscriptionId,
    status: payment.status,
    failureMessage: payment.failureMessage,
    at: payment.at,
  });
}
