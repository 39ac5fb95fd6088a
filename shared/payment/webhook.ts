import * as z from 'zod/mini';
import type { PlaybookEventType } from '../events/playbook-events';
import { isoFromUnixSeconds } from '../sync/normalised';
import type { JsonObject } from '../sync/sync-source';
import { PaymentEventEnvelope, isTrimmed } from '../webhooks/event-envelope';
import type { KnownBody, Publication, PublishPlan, RecordChange, RecordReference, WebhookEffects } from '../webhooks/effects';
import { readPaymentRecord } from './objects';
import type { PaymentObject } from './settings';

/**
 * What a payment-platform event means (the spec's Events table, and the neighbours a real endpoint
 * receives): which record it carries, which it refers to, and what to publish. Pure.
 *
 * - The record an event carries is `data.object`, a full snapshot at the event's time, so its
 *   version is the event's `created` (seconds; the platform's records carry no version).
 * - `customer.deleted` and `invoice.deleted` delete; `customer.subscription.deleted` is a
 *   cancellation and keeps the canceled subscription.
 * - Published: customer.created/changed, subscription.created/changed/renewed/cancelled,
 *   payment.succeeded/failed (from the invoice's payment events), invoice.generated (a non-draft
 *   `invoice.created`, or `invoice.finalized`), dispute.created.
 * - Anything else (`customer.source.*`, `invoice.upcoming`, `payout.*`...) is ignored, with why.
 */

/** The platform's `object` word → the data object it is stored under. */
const STORED_KINDS: Record<string, PaymentObject> = {
  customer: 'customers',
  subscription: 'subscriptions',
  invoice: 'invoices',
  payment_intent: 'payment_intents',
  charge: 'charges',
};

/** Events about each data object start with these words (`customer.` alone would take in subscriptions). */
const EVENT_PREFIX: Record<PaymentObject, string> = {
  customers: 'customer.',
  subscriptions: 'customer.subscription.',
  invoices: 'invoice.',
  payment_intents: 'payment_intent.',
  charges: 'charge.',
};

/** Real deletions; every other event carries a record to keep. */
const DELETIONS = new Set(['customer.deleted', 'invoice.deleted']);

/**
 * The playbook event each platform event publishes, one each (a paused subscription also sends `.updated`, which alone
 * publishes). Exported for test/webhooks/subscribed-events.test.ts: the events a user selects must include every one.
 */
export const PUBLISHED: Record<string, PlaybookEventType> = {
  'customer.created': 'customer.created',
  'customer.updated': 'customer.changed',
  'customer.subscription.created': 'subscription.created',
  'customer.subscription.updated': 'subscription.changed',
  'customer.subscription.deleted': 'subscription.cancelled',
  'invoice.created': 'invoice.generated',
  'invoice.finalized': 'invoice.generated',
  'invoice.payment_succeeded': 'payment.succeeded',
  'invoice.payment_failed': 'payment.failed',
  'charge.dispute.created': 'dispute.created',
};

const Ref = z.union([z.string().check(z.minLength(1)), z.looseObject({ id: z.string().check(z.minLength(1)) })]);
const idOf = (ref: unknown): string | undefined => {
  const parsed = Ref.safeParse(ref);
  return parsed.success ? (typeof parsed.data === 'string' ? parsed.data : parsed.data.id) : undefined;
};

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
/** The few invoice fields a payment event needs beyond the normalised invoice. */
const InvoicePayment = z.lazy(() =>
  z.looseObject({
    customer_email: z.nullish(z.string()),
    customer_name: z.nullish(z.string()),
    attempt_count: z.nullish(z.number().check(z.int())),
    next_payment_attempt: z.nullish(z.number().check(z.int())),
    payment_intent: z.nullish(Ref),
    status_transitions: z.nullish(z.looseObject({ paid_at: z.nullish(z.number().check(z.int())) })),
  }),
);

const Dispute = z.lazy(() =>
  z.looseObject({
    id: z.string().check(z.minLength(1)),
    object: z.literal('dispute'),
    amount: z.number().check(z.int()),
    currency: z.nullish(z.string()),
    charge: z.nullish(Ref),
    payment_intent: z.nullish(Ref),
    reason: z.nullish(z.string()),
    status: z.nullish(z.string()),
    evidence_details: z.nullish(z.looseObject({ due_by: z.nullish(z.number().check(z.int())) })),
  }),
);

/** Period-end changes mean the subscription moved into its next period: a renewal. */
const PeriodChange = z.lazy(() =>
  z.looseObject({
    current_period_end: z.nullish(z.number()),
    items: z.nullish(z.looseObject({ data: z.array(z.looseObject({ current_period_end: z.nullish(z.number()) })) })),
  }),
);

export function paymentEventEffects(payload: unknown): WebhookEffects {
  const parsed = PaymentEventEnvelope.safeParse(payload);
  if (!parsed.success) return { kind: 'ignored', reason: 'not a payment platform event' };
  const event = parsed.data;
  const snapshot = event.data.object;
  const kind = typeof snapshot.object === 'string' ? snapshot.object : undefined;
  const id = typeof snapshot.id === 'string' && snapshot.id !== '' ? snapshot.id : undefined;

  if (event.type === 'charge.dispute.created') return disputeEffects(event);
  const object = kind ? STORED_KINDS[kind] : undefined;
  if (!object || !event.type.startsWith(EVENT_PREFIX[object]) || (object === 'charges' && event.type.startsWith('charge.dispute.'))) {
    return { kind: 'ignored', reason: `event type ${event.type} is not applied by the gateway` };
  }
  if (!id) return { kind: 'ignored', reason: `event type ${event.type} carries no record id` };

  // A copy cut to its id by the receiver, or one the gateway cannot read, is fetched instead.
  const reading = isTrimmed(snapshot) ? undefined : readPaymentRecord(object, snapshot, event.created);
  const record = reading?.ok ? reading.record : undefined;
  const change: RecordChange = {
    object,
    id,
    version: event.created,
    ...(record ? { record } : {}),
    ...(DELETIONS.has(event.type) ? { deleted: true } : {}),
  };
  const customerId = object === 'customers' ? id : (record?.customerId ?? idOf(snapshot.customer));
  const references: RecordReference[] = customerId && object !== 'customers' ? [{ object: 'customers', id: customerId }] : [];
  const publish = publication(event, change, customerId);
  return { kind: 'apply', occurredAt: event.created, changes: [change], references, ...(publish ? { publish } : {}) };
}

function publication(event: PaymentEventEnvelope, change: RecordChange, customerId: string | undefined): Publication | undefined {
  let type = PUBLISHED[event.type];
  if (!type) return undefined;
  // A draft invoice is not issued yet; its `invoice.finalized` publishes instead.
  if (event.type === 'invoice.created' && event.data.object.status === 'draft') return undefined;
  if (type === 'subscription.changed' && isRenewal(event)) type = 'subscription.renewed';
  const publishing = type;
  return {
    type,
    plan(known: KnownBody) {
      const fields = change.record?.fields ?? known(change);
      // A copy cut to its id names no customer; the fetched record does.
      const owner = customerId ?? (typeof fields?.customerId === 'string' && fields.customerId !== '' ? fields.customerId : undefined);
      return owner ? publishPlan(event, publishing, change, owner, fields) : undefined;
    },
  };
}

function publishPlan(
  event: PaymentEventEnvelope,
  type: PlaybookEventType,
  change: RecordChange,
  customerId: string,
  fields: JsonObject | undefined,
): PublishPlan | undefined {
  const base = { type, customerId };
  switch (change.object) {
    case 'customers':
      return base;
    case 'subscriptions':
      return fields ? { ...base, subscription: fields } : undefined;
    case 'invoices': {
      if (!fields) return undefined;
      const extra = InvoicePayment.safeParse(event.data.object);
      const hints = extra.success ? extra.data : {};
      const customerHint = { ...(hints.customer_email ? { email: hints.customer_email } : {}), ...(hints.customer_name ? { name: hints.customer_name } : {}) };
      const plan: PublishPlan = { ...base, customerHint, invoice: fields };
      if (type === 'payment.succeeded' || type === 'payment.failed') {
        const invoice = fields as {
          id: string;
          amountDue?: number;
          amountPaid?: number;
          currency?: string;
          subscriptionId?: string;
          nextPaymentAttemptAt?: string;
        };
        const paid = type === 'payment.succeeded';
        const paymentIntentId = idOf(hints.payment_intent);
        const at = isoFromUnixSeconds(hints.status_transitions?.paid_at ?? event.created);
        plan.payment = {
          ...(paymentIntentId ? { id: paymentIntentId } : {}),
          amount: (paid ? invoice.amountPaid : invoice.amountDue) ?? 0,
          ...(invoice.currency ? { currency: invoice.currency } : {}),
          outcome: paid ? 'succeeded' : 'failed',
          invoiceId: invoice.id,
          ...(invoice.subscriptionId ? { subscriptionId: invoice.subscriptionId } : {}),
          ...(typeof hints.attempt_count === 'number' ? { attemptCount: hints.attempt_count } : {}),
          ...(!paid && invoice.nextPaymentAttemptAt ? { nextPaymentAttemptAt: invoice.nextPaymentAttemptAt } : {}),
          ...(at ? { at } : {}),
        };
      }
      return plan;
    }
    default:
      return undefined;
  }
}

/** `customer.subscription.updated` whose period end moved on: the subscription renewed. */
function isRenewal(event: PaymentEventEnvelope): boolean {
  const before = PeriodChange.safeParse(event.data.previous_attributes ?? {});
  const after = PeriodChange.safeParse(event.data.object);
  if (!before.success || !after.success) return false;
  const end = (value: z.infer<typeof PeriodChange>) =>
    value.current_period_end ?? Math.max(0, ...(value.items?.data ?? []).map((item) => item.current_period_end ?? 0));
  // Only a period end the event says changed counts (previous_attributes lists changed fields only).
  const previous = before.data.current_period_end ?? (before.data.items ? end(before.data) : 0);
  return previous > 0 && end(after.data) > previous;
}

/** Disputes are not stored; the disputed charge is (fetched if new), and playbooks hear of it. */
function disputeEffects(event: PaymentEventEnvelope): WebhookEffects {
  const parsed = Dispute.safeParse(event.data.object);
  if (!parsed.success) return { kind: 'ignored', reason: 'charge.dispute.created carries no readable dispute' };
  const dispute = parsed.data;
  const chargeId = idOf(dispute.charge);
  const paymentIntentId = idOf(dispute.payment_intent);
  const dueBy = isoFromUnixSeconds(dispute.evidence_details?.due_by);
  const plan: PublishPlan = {
    type: 'dispute.created',
    ...(chargeId ? { customerOf: { object: 'charges', id: chargeId } } : {}),
    dispute: {
      id: dispute.id,
      amount: dispute.amount,
      ...(dispute.currency ? { currency: dispute.currency } : {}),
      ...(chargeId ? { chargeId } : {}),
      ...(paymentIntentId ? { paymentIntentId } : {}),
      ...(dispute.reason ? { reason: dispute.reason } : {}),
      ...(dispute.status ? { status: dispute.status } : {}),
      ...(dueBy ? { evidenceDueBy: dueBy } : {}),
    },
  };
  return {
    kind: 'apply',
    occurredAt: event.created,
    changes: [],
    references: chargeId ? [{ object: 'charges', id: chargeId }] : [],
    publish: { type: 'dispute.created', plan: () => plan },
  };
}
