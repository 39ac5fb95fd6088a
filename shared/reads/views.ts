import * as z from 'zod';
import {
  NormalisedPayment,
  NormalisedSubscription,
  SubscriptionState,
  type NormalisedCustomer,
  type NormalisedInvoice,
} from '../sync/normalised';
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
    id: z.string().describe("The customer's id on that platform"),
    email: z.string().optional(),
    name: z.string().optional(),
  })
  .meta({ id: 'PlaybookCustomer' });
export type CustomerView = z.infer<typeof CustomerView>;

export const SubscriptionView = NormalisedSubscription.pick({
  id: true,
  customerId: true,
  planId: true,
  planName: true,
  amount: true,
  currency: true,
  currentPeriodEnd: true,
  nextBillingAt: true,
})
  .extend({
    connector: PlaybookConnectorName,
    status: z.string().describe("The platform's own status word"),
    state: SubscriptionState.describe('The status in the gateway’s vocabulary, the same for both platforms'),
    cancelling: z.boolean().describe('Set to end at its period end (it will not renew)'),
  })
  .meta({ id: 'PlaybookSubscription' });
export type SubscriptionView = z.infer<typeof SubscriptionView>;

export const NextPaymentView = z
  .object({
    at: Time,
    amount: z.number().int().optional(),
    currency: z.string().optional(),
    source: z.object({
      kind: z.enum(['subscription', 'invoice']),
      connector: PlaybookConnectorName,
      id: z.string(),
      field: z.enum(['nextBillingAt', 'nextPaymentAttemptAt', 'dueAt']).describe('Which date of the subscription or invoice this is'),
    }),
  })
  .meta({ id: 'NextPayment' });

export const TierView = z
  .object({
    connector: PlaybookConnectorName,
    subscriptionId: z.string(),
    state: SubscriptionState,
    planId: z.string().optional(),
    planName: z.string().optional(),
    amount: z.number().int().optional().describe('Recurring amount per period'),
    currency: z.string().optional(),
  })
  .meta({ id: 'Tier' });

export const PaymentView = NormalisedPayment.omit({ updatedAt: true })
  .extend({
    connector: PlaybookConnectorName,
    object: z.string().describe('The synced object: payments (billing), charges or payment_intents (payment)'),
    status: z.string().describe("The platform's own status word"),
  })
  .meta({ id: 'PlaybookPayment' });

export const InvoiceView = z
  .object({
    connector: PlaybookConnectorName,
    id: z.string(),
    customerId: z.string(),
    subscriptionId: z.string().optional(),
    status: z.string().describe("The platform's own status word"),
    total: z.number().int().optional(),
    amountDue: z.number().int().optional(),
    amountPaid: z.number().int().optional(),
    currency: z.string().optional(),
    issuedAt: Time.optional(),
    dueAt: Time.optional(),
    nextPaymentAttemptAt: Time.optional(),
  })
  .meta({ id: 'PlaybookInvoice' });

const Customers = z.array(CustomerView).describe('The customer as found on each connector (an email may match on both platforms)');

export const CustomerSubscriptionAnswer = z
  .object({
    customers: Customers,
    subscription: SubscriptionView.nullable().describe('The current subscription: active first, then the latest period end'),
    reason: z
      .enum(['no_subscriptions', 'none_current'])
      .optional()
      .describe('Why subscription is null: no subscription synced, or none running (all cancelled, paused, ...)'),
    freshness: Freshness,
  })
  .meta({ id: 'CustomerSubscription' });
export type CustomerSubscriptionAnswer = z.infer<typeof CustomerSubscriptionAnswer>;

export const NextPaymentAnswer = z
  .object({
    customers: Customers,
    nextPayment: NextPaymentView.nullable(),
    reason: z
      .enum(['no_current_subscription', 'cancelling', 'no_date_known'])
      .optional()
      .describe('Why nextPayment is null: nothing running and nothing owed, the subscription will not renew, or no date is synced'),
    freshness: Freshness,
  })
  .meta({ id: 'CustomerNextPayment' });
export type NextPaymentAnswer = z.infer<typeof NextPaymentAnswer>;

export const PaymentsAnswer = z
  .object({
    customers: Customers,
    tier: TierView.nullable().describe('Plan and amount of the current subscription; null without one'),
    payments: z.array(PaymentView).describe('Newest first'),
    freshness: Freshness,
  })
  .meta({ id: 'CustomerPayments' });
export type PaymentsAnswer = z.infer<typeof PaymentsAnswer>;

export const InvoicesAnswer = z
  .object({ customers: Customers, invoices: z.array(InvoiceView).describe('Newest first'), freshness: Freshness })
  .meta({ id: 'CustomerInvoices' });
export type InvoicesAnswer = z.infer<typeof InvoicesAnswer>;

const NextCursor = z.string().optional().describe('Pass back as `cursor` for the next page; absent on the last page. A page may hold fewer than `limit` items and still have a next one.');

export const SubscriberView = NormalisedSubscription.pick({
  customerId: true,
  planId: true,
  planName: true,
  state: true,
  status: true,
  nextBillingAt: true,
  currentPeriodEnd: true,
})
  .extend({
    email: z.string().optional().describe('When the customer is synced with an email'),
    subscriptionId: z.string(),
    cancelling: z.boolean(),
  })
  .meta({ id: 'Subscriber' });
export type SubscriberView = z.infer<typeof SubscriberView>;

export const SubscribersPage = z
  .object({ connector: PlaybookConnectorName, subscribers: z.array(SubscriberView), nextCursor: NextCursor, freshness: Freshness })
  .meta({ id: 'SubscribersPage' });
export type SubscribersPage = z.infer<typeof SubscribersPage>;

export const FailedPaymentView = NormalisedPayment.pick({
  customerId: true,
  amount: true,
  currency: true,
  invoiceId: true,
  subscriptionId: true,
  status: true,
  failureMessage: true,
  at: true,
})
  .extend({ email: z.string().optional(), paymentId: z.string(), object: z.string() })
  .meta({ id: 'FailedPayment' });
export type FailedPaymentView = z.infer<typeof FailedPaymentView>;

export const FailedPaymentsPage = z
  .object({ connector: PlaybookConnectorName, payments: z.array(FailedPaymentView), nextCursor: NextCursor, freshness: Freshness })
  .meta({ id: 'FailedPaymentsPage' });
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
