import * as z from 'zod/mini';
// The error class by name: `z.core.$ZodError` would bundle zod's core namespace, every locale with it.
import { $ZodError } from 'zod/v4/core';
import {
  isoFromUnixSeconds,
  NormalisedCustomer,
  NormalisedInvoice,
  NormalisedPayment,
  NormalisedSubscription,
  type PaymentOutcome,
  type SubscriptionState,
} from '../sync/normalised';
import type { JsonObject, NormalisedRecord } from '../sync/sync-source';
import type { PaymentObject } from './settings';

/**
 * The payment platform's records, read loosely (only the fields the gateway uses are checked and
 * copied; unknown fields are accepted and left out of the parsed copy, which only the mappers below
 * read: copying the twenty-odd fields a record has took half of its parse; anything the platform may
 * omit or null is optional), and mapped onto the gateway's normalised shapes (shared/sync/normalised.ts).
 *
 * Two API generations are read: older versions put `current_period_end` on the subscription and
 * `subscription` on the invoice; newer ones moved them to the subscription items and to
 * `invoice.parent.subscription_details`. Events are rendered in the API version of their time, so
 * one sync can see both.
 *
 * The payment platform keeps no "updated at" on its records. A record read from an event gets the
 * event's time as `updatedAt` and `sourceVersion`; a listed record gets neither. Neither goes into
 * `fields`, so the same record read either way hashes the same.
 */

/** Unix seconds up to the year 9999, so a wild value is a shape problem here, not a RangeError later. */
const UnixSeconds = z.nullish(z.number().check(z.int(), z.minimum(0), z.maximum(253_402_300_799)));
const Id = z.string().check(z.minLength(1));
/** A reference that may be expanded into the object it names. */
const Ref = z.union([Id, z.object({ id: Id })]);

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const PaymentCustomerRecord = z.lazy(() =>
  z.object({
    id: Id,
    object: z.optional(z.literal('customer')),
    email: z.nullish(z.string()),
    name: z.nullish(z.string()),
    created: UnixSeconds,
    /** `{id, object: 'customer', deleted: true}` is what the platform answers for a deleted customer. */
    deleted: z.optional(z.boolean()),
  }),
);
export type PaymentCustomerRecord = z.infer<typeof PaymentCustomerRecord>;

const Price = z.lazy(() =>
  z.object({
    id: Id,
    nickname: z.nullish(z.string()),
    /** Null for tiered or custom prices. */
    unit_amount: z.nullish(z.number().check(z.int())),
    currency: z.nullish(z.string()),
    product: z.nullish(z.union([Id, z.object({ id: Id, name: z.nullish(z.string()) })])),
  }),
);

const SubscriptionItem = z.lazy(() =>
  z.object({
    price: z.nullish(Price),
    quantity: z.nullish(z.number().check(z.int())),
    current_period_end: UnixSeconds,
  }),
);

export const PaymentSubscriptionRecord = z.lazy(() =>
  z.object({
    id: Id,
    object: z.optional(z.literal('subscription')),
    customer: Ref,
    status: z.string(),
    created: UnixSeconds,
    current_period_end: UnixSeconds,
    cancel_at_period_end: z.nullish(z.boolean()),
    cancel_at: UnixSeconds,
    canceled_at: UnixSeconds,
    ended_at: UnixSeconds,
    currency: z.nullish(z.string()),
    items: z.nullish(z.object({ data: z.array(SubscriptionItem) })),
    /** Legacy single-plan subscriptions. */
    plan: z.nullish(z.object({ id: Id, nickname: z.nullish(z.string()), amount: z.nullish(z.number().check(z.int())) })),
  }),
);
export type PaymentSubscriptionRecord = z.infer<typeof PaymentSubscriptionRecord>;

export const PaymentInvoiceRecord = z.lazy(() =>
  z.object({
    id: Id,
    object: z.optional(z.literal('invoice')),
    customer: z.nullish(Ref),
    subscription: z.nullish(Ref),
    parent: z.nullish(z.object({ subscription_details: z.nullish(z.object({ subscription: z.nullish(Ref) })) })),
    status: z.nullish(z.string()),
    total: z.nullish(z.number().check(z.int())),
    amount_due: z.nullish(z.number().check(z.int())),
    amount_paid: z.nullish(z.number().check(z.int())),
    currency: z.nullish(z.string()),
    created: UnixSeconds,
    status_transitions: z.nullish(z.object({ finalized_at: UnixSeconds })),
    due_date: UnixSeconds,
    next_payment_attempt: UnixSeconds,
  }),
);
export type PaymentInvoiceRecord = z.infer<typeof PaymentInvoiceRecord>;

export const PaymentIntentRecord = z.lazy(() =>
  z.object({
    id: Id,
    object: z.optional(z.literal('payment_intent')),
    /** Null for guest payments. */
    customer: z.nullish(Ref),
    amount: z.number().check(z.int()),
    currency: z.nullish(z.string()),
    status: z.string(),
    created: UnixSeconds,
    /** Older API versions only. */
    invoice: z.nullish(Ref),
    latest_charge: z.nullish(Ref),
    last_payment_error: z.nullish(z.object({ message: z.nullish(z.string()) })),
  }),
);
export type PaymentIntentRecord = z.infer<typeof PaymentIntentRecord>;

export const PaymentChargeRecord = z.lazy(() =>
  z.object({
    id: Id,
    object: z.optional(z.literal('charge')),
    customer: z.nullish(Ref),
    amount: z.number().check(z.int()),
    currency: z.nullish(z.string()),
    status: z.string(),
    refunded: z.nullish(z.boolean()),
    created: UnixSeconds,
    invoice: z.nullish(Ref),
    failure_message: z.nullish(z.string()),
  }),
);
export type PaymentChargeRecord = z.infer<typeof PaymentChargeRecord>;

/** The platform's `object` word for each data object (what `event.data.object.object` says). */
export const PLATFORM_OBJECT_TYPE: Record<PaymentObject, string> = {
  customers: 'customer',
  subscriptions: 'subscription',
  invoices: 'invoice',
  payment_intents: 'payment_intent',
  charges: 'charge',
};

// ---------- small pieces ----------

function idOf(ref: string | { id: string } | null | undefined): string | undefined {
  if (ref === null || ref === undefined) return undefined;
  return typeof ref === 'string' ? ref : ref.id;
}

/** Drops undefined (and null) values so the result is JSON as stored. */
function compact(fields: Record<string, string | number | boolean | null | undefined>): JsonObject {
  const out: JsonObject = {};
  for (const name in fields) {
    const value = fields[name];
    if (value !== undefined && value !== null) out[name] = value;
  }
  return out;
}

/** The parts every normalised record shares; `updatedAt`/`sourceVersion` only for records read from events. */
function envelope(id: string, sourceVersion: number | undefined): Pick<NormalisedRecord, 'id' | 'sourceVersion' | 'updatedAt'> {
  if (sourceVersion === undefined) return { id };
  const updatedAt = isoFromUnixSeconds(sourceVersion);
  return { id, sourceVersion, ...(updatedAt ? { updatedAt } : {}) };
}

/**
 * Payments and invoices may have no customer on the platform (guest checkout). The normalised
 * shapes need a string, so they get '' there, and no `customerId` on the record, so the store
 * does not file them under a customer. They are still kept: never silently dropped.
 */
function customerFields(ref: string | { id: string } | null | undefined): { customerId: string; top: Pick<NormalisedRecord, 'customerId'> } {
  const id = idOf(ref);
  return { customerId: id ?? '', top: id ? { customerId: id } : {} };
}

// ---------- decisions ----------

/**
 * The platform's subscription status in the gateway's vocabulary. An active subscription set to
 * end (cancel at period end, or at a set time) is `non_renewing`, as the billing platform says.
 * `incomplete_expired` never started and is over: `cancelled`.
 */
export function subscriptionState(status: string, cancelling: boolean): SubscriptionState {
  switch (status) {
    case 'active':
      return cancelling ? 'non_renewing' : 'active';
    case 'trialing':
    case 'past_due':
    case 'unpaid':
    case 'paused':
    case 'incomplete':
      return status;
    case 'canceled':
    case 'incomplete_expired':
      return 'cancelled';
    default:
      return 'other';
  }
}

/**
 * A payment intent's outcome. `requires_payment_method` is both the starting state and where an
 * intent returns after a failed attempt: it is a failure only once an attempt was made.
 */
export function paymentIntentOutcome(intent: Pick<PaymentIntentRecord, 'status' | 'latest_charge' | 'last_payment_error'>): PaymentOutcome {
  switch (intent.status) {
    case 'succeeded':
      return 'succeeded';
    case 'requires_payment_method':
      return intent.last_payment_error || intent.latest_charge ? 'failed' : 'pending';
    case 'processing':
    case 'requires_action':
    case 'requires_confirmation':
    case 'requires_capture':
      return 'pending';
    default:
      return 'other'; // canceled: nobody paid, but nothing failed either
  }
}

export function chargeOutcome(charge: Pick<PaymentChargeRecord, 'status' | 'refunded'>): PaymentOutcome {
  if (charge.refunded) return 'refunded';
  switch (charge.status) {
    case 'succeeded':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'pending':
      return 'pending';
    default:
      return 'other';
  }
}

/** Newer API versions keep the period on each item; the subscription's is the latest of them. */
function periodEndOf(subscription: PaymentSubscriptionRecord): number | undefined {
  if (subscription.current_period_end) return subscription.current_period_end;
  const ends = (subscription.items?.data ?? []).map((item) => item.current_period_end ?? 0).filter((end) => end > 0);
  return ends.length > 0 ? Math.max(...ends) : undefined;
}

/** The recurring amount: the items' prices times quantities, when every item has a plain price. */
function amountOf(subscription: PaymentSubscriptionRecord): number | undefined {
  const items = subscription.items?.data ?? [];
  if (items.length === 0) return subscription.plan?.amount ?? undefined;
  let total = 0;
  for (const item of items) {
    const unit = item.price?.unit_amount;
    if (unit === null || unit === undefined) return undefined;
    total += unit * (item.quantity ?? 1);
  }
  return total;
}

// ---------- mappers ----------

export function customerRecord(customer: PaymentCustomerRecord, sourceVersion?: number): NormalisedRecord {
  const fields = NormalisedCustomer.parse(
    compact({ id: customer.id, email: customer.email, name: customer.name, createdAt: isoFromUnixSeconds(customer.created) }),
  );
  return { ...envelope(customer.id, sourceVersion), ...(fields.email ? { email: fields.email } : {}), fields: compact(fields) };
}

export function subscriptionRecord(subscription: PaymentSubscriptionRecord, sourceVersion?: number): NormalisedRecord {
  const cancelling = subscription.cancel_at_period_end === true || Boolean(subscription.cancel_at);
  const state = subscriptionState(subscription.status, cancelling);
  const firstPrice = subscription.items?.data[0]?.price;
  const product = firstPrice?.product;
  const periodEnd = periodEndOf(subscription);
  // The next payment falls due at the period end while the subscription renews.
  const renews = state === 'active' || state === 'trialing' || state === 'past_due';
  const customerId = idOf(subscription.customer) as string;
  const currentPeriodEnd = isoFromUnixSeconds(periodEnd);
  const fields = NormalisedSubscription.parse(
    compact({
      id: subscription.id,
      customerId,
      state,
      status: subscription.status,
      planId: firstPrice?.id ?? subscription.plan?.id,
      planName: firstPrice?.nickname ?? (typeof product === 'object' ? product?.name : undefined) ?? subscription.plan?.nickname,
      amount: amountOf(subscription),
      currency: subscription.currency ?? firstPrice?.currency,
      currentPeriodEnd,
      nextBillingAt: renews ? currentPeriodEnd : undefined,
      // Once over, when it ended; before that, when the cancellation was asked for.
      cancelledAt: isoFromUnixSeconds(state === 'cancelled' ? (subscription.ended_at ?? subscription.canceled_at) : subscription.canceled_at),
      createdAt: isoFromUnixSeconds(subscription.created),
    }),
  );
  return { ...envelope(subscription.id, sourceVersion), customerId, fields: compact(fields) };
}

export function invoiceRecord(invoice: PaymentInvoiceRecord, sourceVersion?: number): NormalisedRecord {
  const customer = customerFields(invoice.customer);
  const fields = NormalisedInvoice.parse(
    compact({
      id: invoice.id,
      customerId: customer.customerId,
      subscriptionId: idOf(invoice.subscription) ?? idOf(invoice.parent?.subscription_details?.subscription),
      status: invoice.status ?? 'unknown',
      total: invoice.total,
      amountDue: invoice.amount_due,
      amountPaid: invoice.amount_paid,
      currency: invoice.currency,
      issuedAt: isoFromUnixSeconds(invoice.status_transitions?.finalized_at ?? invoice.created),
      dueAt: isoFromUnixSeconds(invoice.due_date),
      nextPaymentAttemptAt: isoFromUnixSeconds(invoice.next_payment_attempt),
    }),
  );
  return { ...envelope(invoice.id, sourceVersion), ...customer.top, fields: compact(fields) };
}

export function paymentIntentRecord(intent: PaymentIntentRecord, sourceVersion?: number): NormalisedRecord {
  const customer = customerFields(intent.customer);
  const fields = NormalisedPayment.parse(
    compact({
      id: intent.id,
      customerId: customer.customerId,
      invoiceId: idOf(intent.invoice),
      amount: intent.amount,
      currency: intent.currency,
      outcome: paymentIntentOutcome(intent),
      status: intent.status,
      failureMessage: intent.last_payment_error?.message,
      at: isoFromUnixSeconds(intent.created),
    }),
  );
  return { ...envelope(intent.id, sourceVersion), ...customer.top, fields: compact(fields) };
}

export function chargeRecord(charge: PaymentChargeRecord, sourceVersion?: number): NormalisedRecord {
  const customer = customerFields(charge.customer);
  const fields = NormalisedPayment.parse(
    compact({
      id: charge.id,
      customerId: customer.customerId,
      invoiceId: idOf(charge.invoice),
      amount: charge.amount,
      currency: charge.currency,
      outcome: chargeOutcome(charge),
      status: charge.status,
      failureMessage: charge.failure_message,
      at: isoFromUnixSeconds(charge.created),
    }),
  );
  return { ...envelope(charge.id, sourceVersion), ...customer.top, fields: compact(fields) };
}

// ---------- one entry point for the sync ----------

export type RecordReading = { ok: true; record: NormalisedRecord } | { ok: false; problem: string };

/** zod's paths and wording only: values may be customer data. */
function describeIssues(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join('.') || '(record)'}: ${issue.message}`)
    .join('; ');
}

function read<T>(schema: z.ZodMiniType<T>, raw: unknown, map: (record: T) => NormalisedRecord): RecordReading {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error) };
  try {
    return { ok: true, record: map(parsed.data) };
  } catch (error) {
    // A value the normalised shape refuses (the platform record was fine as far as it was read).
    if (error instanceof $ZodError) return { ok: false, problem: `normalised ${describeIssues(error)}` };
    throw error;
  }
}

/**
 * Reads one platform record of `object` (from a list page or an event) into a normalised record,
 * or says which fields did not have the expected shape.
 */
export function readPaymentRecord(object: PaymentObject, raw: unknown, sourceVersion?: number): RecordReading {
  switch (object) {
    case 'customers':
      return read(PaymentCustomerRecord, raw, (record) => customerRecord(record, sourceVersion));
    case 'subscriptions':
      return read(PaymentSubscriptionRecord, raw, (record) => subscriptionRecord(record, sourceVersion));
    case 'invoices':
      return read(PaymentInvoiceRecord, raw, (record) => invoiceRecord(record, sourceVersion));
    case 'payment_intents':
      return read(PaymentIntentRecord, raw, (record) => paymentIntentRecord(record, sourceVersion));
    case 'charges':
      return read(PaymentChargeRecord, raw, (record) => chargeRecord(record, sourceVersion));
  }
}
