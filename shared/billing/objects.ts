import * as z from 'zod/mini';
// The error class by name: `z.core.$ZodError` would bundle zod's core namespace, every locale with it.
import { $ZodError } from 'zod/v4/core';
import {
  NormalisedCustomer,
  NormalisedInvoice,
  NormalisedPayment,
  NormalisedSubscription,
  isoFromUnixSeconds,
  type PaymentOutcome,
  type SubscriptionState,
} from '../sync/normalised';
import type { JsonObject, NormalisedRecord } from '../sync/sync-source';
import type { BillingObject } from './settings';

/**
 * The billing platform's records (API v2) as the gateway reads them, and their mapping onto the
 * gateway's normalised shapes. Pure: no I/O.
 *
 * The schemas are loose: only the fields the gateway uses are checked, everything else passes
 * through, and anything the platform may leave out is optional (it omits absent attributes; null is
 * accepted too). Timestamps are Unix seconds; amounts are in the currency's minor unit.
 */

const UnixSeconds = z.number().check(z.int(), z.nonnegative());
const Amount = z.number().check(z.int());
const maybe = <T extends z.core.SomeType>(schema: T) => z.nullish(schema);

/** What every record carries: the fields a sync's cursor, versions and deletions rest on. */
const versioned = {
  id: z.string().check(z.minLength(1)),
  /** Absent on some records in the wild: such records cannot be found by an incremental window. */
  updated_at: maybe(UnixSeconds),
  /** Grows with every change (milliseconds on the real platform). */
  resource_version: maybe(z.number().check(z.int(), z.nonnegative())),
  deleted: maybe(z.boolean()),
};

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const BillingCustomerRecord = z.lazy(() =>
  z.looseObject({
    ...versioned,
    email: maybe(z.string()),
    first_name: maybe(z.string()),
    last_name: maybe(z.string()),
    company: maybe(z.string()),
    created_at: maybe(UnixSeconds),
  }),
);
export type BillingCustomerRecord = z.infer<typeof BillingCustomerRecord>;

const SubscriptionItem = z.lazy(() =>
  z.looseObject({
    item_price_id: z.string(),
    item_type: maybe(z.string()),
    quantity: maybe(z.number()),
    unit_price: maybe(Amount),
    amount: maybe(Amount),
  }),
);

export const BillingSubscriptionRecord = z.lazy(() =>
  z.looseObject({
    ...versioned,
    customer_id: z.string().check(z.minLength(1)),
    /** A string, not an enum: a status the gateway does not know yet maps to 'other' instead of failing the sync. */
    status: z.string().check(z.minLength(1)),
    currency_code: maybe(z.string()),
    current_term_end: maybe(UnixSeconds),
    next_billing_at: maybe(UnixSeconds),
    cancelled_at: maybe(UnixSeconds),
    created_at: maybe(UnixSeconds),
    /** Product catalog 2.0 sites: the plan and addons as item prices. */
    subscription_items: maybe(z.array(SubscriptionItem)),
    /** Product catalog 1.0 sites: the plan on the subscription itself. */
    plan_id: maybe(z.string()),
    plan_amount: maybe(Amount),
  }),
);
export type BillingSubscriptionRecord = z.infer<typeof BillingSubscriptionRecord>;

export const BillingInvoiceRecord = z.lazy(() =>
  z.looseObject({
    ...versioned,
    customer_id: z.string().check(z.minLength(1)),
    subscription_id: maybe(z.string()),
    status: z.string().check(z.minLength(1)),
    total: maybe(Amount),
    amount_due: maybe(Amount),
    amount_paid: maybe(Amount),
    currency_code: maybe(z.string()),
    date: maybe(UnixSeconds),
    due_date: maybe(UnixSeconds),
    next_retry_at: maybe(UnixSeconds),
  }),
);
export type BillingInvoiceRecord = z.infer<typeof BillingInvoiceRecord>;

/** A transaction of type `payment`: the billing platform's payments (it has no payments resource). */
export const BillingTransactionRecord = z.lazy(() =>
  z.looseObject({
    ...versioned,
    customer_id: z.string().check(z.minLength(1)),
    subscription_id: maybe(z.string()),
    type: maybe(z.string()),
    status: z.string().check(z.minLength(1)),
    amount: Amount,
    currency_code: maybe(z.string()),
    date: maybe(UnixSeconds),
    error_text: maybe(z.string()),
    linked_invoices: maybe(z.array(z.looseObject({ invoice_id: z.string() }))),
  }),
);
export type BillingTransactionRecord = z.infer<typeof BillingTransactionRecord>;

/**
 * A list answer: `{list: [{<resource>: {...}, <related>: {...}}, ...], next_offset?}`. Rows are
 * checked only as objects here; each row's resource is checked by its own schema, so a bad row is
 * named with its index and id.
 */
export const BillingListEnvelope = z.lazy(() =>
  z.looseObject({
    list: z.array(z.record(z.string(), z.unknown())),
    /** Present only when more rows exist; opaque, passed back as `offset` untouched. */
    next_offset: z.optional(z.string().check(z.minLength(1))),
  }),
);
export type BillingListEnvelope = z.infer<typeof BillingListEnvelope>;

/** Enough of a row's resource to tell a deleted one apart (deleted rows need nothing else). */
export const BillingRowIdentity = z.lazy(() =>
  z.looseObject({ id: z.string().check(z.minLength(1)), deleted: maybe(z.boolean()), resource_version: maybe(z.number()), updated_at: maybe(z.number()) }),
);

// ---- status vocabularies ----

const SUBSCRIPTION_STATES: Record<string, SubscriptionState> = {
  future: 'future',
  in_trial: 'trialing',
  active: 'active',
  non_renewing: 'non_renewing',
  paused: 'paused',
  cancelled: 'cancelled',
};

/** The platform's subscription status in the gateway's vocabulary (`transferred` and unknown words: 'other'). */
export function subscriptionState(status: string): SubscriptionState {
  return SUBSCRIPTION_STATES[status] ?? 'other';
}

const PAYMENT_OUTCOMES: Record<string, PaymentOutcome> = {
  success: 'succeeded',
  failure: 'failed',
  timeout: 'failed',
  late_failure: 'failed',
  in_progress: 'pending',
  needs_attention: 'pending',
  voided: 'other',
};

/** A transaction status as a payment outcome; unknown words are 'other'. */
export function paymentOutcome(status: string): PaymentOutcome {
  return PAYMENT_OUTCOMES[status] ?? 'other';
}

// ---- normalising ----

type FlatFields = Record<string, string | number | boolean | undefined>;

/** Zod keeps keys whose value is undefined; stored JSON has no undefined, so drop them. */
function jsonFields(fields: FlatFields): JsonObject {
  const out: JsonObject = {};
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) out[name] = value;
  return out;
}

const opt = <T>(value: T | null | undefined): T | undefined => value ?? undefined;

/** The parts every normalised record shares: versions and the last-updated time. */
function versionsOf(record: { updated_at?: number | null; resource_version?: number | null }): Pick<NormalisedRecord, 'sourceVersion' | 'updatedAt'> {
  const updatedAt = isoFromUnixSeconds(record.updated_at);
  // resource_version is in milliseconds; updated_at (seconds) is scaled to match.
  const updatedAtMs = opt(record.updated_at);
  const sourceVersion = opt(record.resource_version) ?? (updatedAtMs === undefined ? undefined : updatedAtMs * 1000);
  return {
    ...(sourceVersion === undefined ? {} : { sourceVersion }),
    ...(updatedAt === undefined ? {} : { updatedAt }),
  };
}

export function normaliseBillingCustomer(record: BillingCustomerRecord): NormalisedRecord {
  const name = [record.first_name, record.last_name].filter((part) => part?.trim()).join(' ') || opt(record.company);
  const fields = NormalisedCustomer.parse({
    id: record.id,
    email: opt(record.email),
    name: name || undefined,
    createdAt: isoFromUnixSeconds(record.created_at),
    updatedAt: isoFromUnixSeconds(record.updated_at),
  });
  return {
    id: record.id,
    ...(fields.email ? { email: fields.email } : {}),
    ...versionsOf(record),
    fields: jsonFields(fields),
  };
}

/** The plan and the per-period amount: from the item prices (catalog 2.0) or the plan fields (1.0). */
function planOf(record: BillingSubscriptionRecord): { planId?: string; amount?: number } {
  const items = record.subscription_items ?? [];
  if (items.length === 0) return { planId: opt(record.plan_id), amount: opt(record.plan_amount) };
  const plan = items.find((item) => item.item_type === 'plan') ?? items[0];
  const amounts = items.map((item) => item.amount ?? (item.unit_price ?? 0) * (item.quantity ?? 1));
  return { planId: plan?.item_price_id, amount: Math.round(amounts.reduce((sum, amount) => sum + amount, 0)) };
}

export function normaliseBillingSubscription(record: BillingSubscriptionRecord): NormalisedRecord {
  const fields = NormalisedSubscription.parse({
    id: record.id,
    customerId: record.customer_id,
    state: subscriptionState(record.status),
    status: record.status,
    ...planOf(record),
    currency: opt(record.currency_code),
    currentPeriodEnd: isoFromUnixSeconds(record.current_term_end),
    nextBillingAt: isoFromUnixSeconds(record.next_billing_at),
    cancelledAt: isoFromUnixSeconds(record.cancelled_at),
    createdAt: isoFromUnixSeconds(record.created_at),
    updatedAt: isoFromUnixSeconds(record.updated_at),
  });
  return { id: record.id, customerId: record.customer_id, ...versionsOf(record), fields: jsonFields(fields) };
}

export function normaliseBillingInvoice(record: BillingInvoiceRecord): NormalisedRecord {
  const fields = NormalisedInvoice.parse({
    id: record.id,
    customerId: record.customer_id,
    subscriptionId: opt(record.subscription_id),
    status: record.status,
    total: opt(record.total),
    amountDue: opt(record.amount_due),
    amountPaid: opt(record.amount_paid),
    currency: opt(record.currency_code),
    issuedAt: isoFromUnixSeconds(record.date),
    dueAt: isoFromUnixSeconds(record.due_date),
    nextPaymentAttemptAt: isoFromUnixSeconds(record.next_retry_at),
    updatedAt: isoFromUnixSeconds(record.updated_at),
  });
  return { id: record.id, customerId: record.customer_id, ...versionsOf(record), fields: jsonFields(fields) };
}

export function normaliseBillingPayment(record: BillingTransactionRecord): NormalisedRecord {
  const fields = NormalisedPayment.parse({
    id: record.id,
    customerId: record.customer_id,
    invoiceId: record.linked_invoices?.[0]?.invoice_id,
    subscriptionId: opt(record.subscription_id),
    amount: record.amount,
    currency: opt(record.currency_code),
    outcome: paymentOutcome(record.status),
    status: record.status,
    failureMessage: opt(record.error_text),
    at: isoFromUnixSeconds(record.date),
    updatedAt: isoFromUnixSeconds(record.updated_at),
  });
  return { id: record.id, customerId: record.customer_id, ...versionsOf(record), fields: jsonFields(fields) };
}

/** Each synced object: the resource name its list rows are wrapped in, and how to read one. */
const READERS = {
  customers: { rowKey: 'customer', schema: BillingCustomerRecord, normalise: normaliseBillingCustomer },
  subscriptions: { rowKey: 'subscription', schema: BillingSubscriptionRecord, normalise: normaliseBillingSubscription },
  invoices: { rowKey: 'invoice', schema: BillingInvoiceRecord, normalise: normaliseBillingInvoice },
  payments: { rowKey: 'transaction', schema: BillingTransactionRecord, normalise: normaliseBillingPayment },
} as const;

/** The resource name a list row wraps this object's record in (`{transaction: {...}}` for payments). */
export function billingRowKey(object: BillingObject): string {
  return READERS[object].rowKey;
}

export type BillingRecordReading = { ok: true; record: NormalisedRecord } | { ok: false; problem: string };

/**
 * Checks one platform record and normalises it. A record that does not fit says where, in field
 * paths and zod's words only: values may be customer data.
 */
export function readBillingRecord(object: BillingObject, raw: unknown): BillingRecordReading {
  const reader = READERS[object];
  const parsed = reader.schema.safeParse(raw);
  if (!parsed.success) return { ok: false, problem: issuesText(parsed.error) };
  // The schema and its normaliser belong together; TypeScript cannot correlate them through the lookup.
  const normalise = reader.normalise as (record: typeof parsed.data) => NormalisedRecord;
  try {
    return { ok: true, record: normalise(parsed.data) };
  } catch (error) {
    // A value the checks above let through but the normalised shape refuses (a date past year 9999...).
    if (error instanceof $ZodError) return { ok: false, problem: issuesText(error) };
    if (error instanceof RangeError) return { ok: false, problem: 'a timestamp is out of range' };
    throw error;
  }
}

function issuesText(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join('.') || '(record)'}: ${issue.message}`)
    .join('; ');
}
