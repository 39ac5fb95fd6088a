import * as z from 'zod/mini';
import type { PlaybookEventType } from '../events/playbook-events';
import type { JsonObject, NormalisedRecord } from '../sync/sync-source';
import { BillingEventEnvelope, isTrimmed } from '../webhooks/event-envelope';
import type { KnownBody, Publication, PublishPlan, RecordChange, RecordReference, WebhookEffects } from '../webhooks/effects';
import { readBillingRecord } from './objects';
import type { BillingObject } from './settings';

/**
 * What a billing-platform event means (the spec's Events table, and its neighbours). Pure.
 *
 * - An event's `content` holds snapshots of the resources it is about (a payment event carries the
 *   transaction, its invoice, subscription and customer). Every snapshot of a stored kind is a
 *   change, versioned by its own `resource_version`, so an older copy never overwrites a newer one.
 * - Payments are transactions of type `payment` (the platform has no payments resource).
 * - `<resource>_deleted` events, and snapshots marked `deleted: true`, delete.
 * - Events about other resources (cards, coupons, credit notes, item prices...) are ignored, with why.
 */

/** The resource an event type is about, from the first word(s) of its name. */
const RESOURCE_OF_TYPE: Array<[prefix: string, resource: string]> = [
  ['customer_', 'customer'],
  ['subscription_', 'subscription'],
  ['invoice_', 'invoice'],
  ['payment_', 'transaction'],
  ['transaction_', 'transaction'],
];

/** Resources in `content` → the data object they are stored under. */
const STORED_RESOURCES: Record<string, BillingObject> = {
  customer: 'customers',
  subscription: 'subscriptions',
  invoice: 'invoices',
  transaction: 'payments',
};

/** The playbook event each platform event publishes. Exported for test/webhooks/subscribed-events.test.ts: the events a user selects must include every one. */
export const PUBLISHED: Record<string, PlaybookEventType> = {
  customer_created: 'customer.created',
  customer_changed: 'customer.changed',
  subscription_created: 'subscription.created',
  subscription_changed: 'subscription.changed',
  // Status changes are changes too: playbooks hear of a pause or a scheduled cancellation.
  subscription_activated: 'subscription.changed',
  subscription_paused: 'subscription.changed',
  subscription_resumed: 'subscription.changed',
  subscription_reactivated: 'subscription.changed',
  subscription_cancellation_scheduled: 'subscription.changed',
  subscription_scheduled_cancellation_removed: 'subscription.changed',
  subscription_renewed: 'subscription.renewed',
  subscription_cancelled: 'subscription.cancelled',
  payment_succeeded: 'payment.succeeded',
  payment_failed: 'payment.failed',
  invoice_generated: 'invoice.generated',
};

const Snapshot = z.looseObject({ id: z.string().check(z.minLength(1)), deleted: z.nullish(z.boolean()), type: z.nullish(z.string()) });

export function billingEventEffects(payload: unknown): WebhookEffects {
  const parsed = BillingEventEnvelope.safeParse(payload);
  if (!parsed.success) return { kind: 'ignored', reason: 'not a billing platform event' };
  const event = parsed.data;
  const resource = RESOURCE_OF_TYPE.find(([prefix]) => event.event_type.startsWith(prefix))?.[1];
  if (!resource) return { kind: 'ignored', reason: `event type ${event.event_type} is not applied by the gateway` };
  if (!Snapshot.safeParse(event.content[resource]).success) {
    return { kind: 'ignored', reason: `event type ${event.event_type} carries no ${resource}` };
  }

  const changes: RecordChange[] = [];
  const records = new Map<string, NormalisedRecord>();
  for (const [name, raw] of Object.entries(event.content)) {
    const object = STORED_RESOURCES[name];
    const snapshot = Snapshot.safeParse(raw);
    if (!object || !snapshot.success) continue;
    // Refunds and authorizations are transactions too, but not payments.
    if (object === 'payments' && snapshot.data.type !== 'payment') continue;
    // A copy cut to its id by the receiver, or one the gateway cannot read, is fetched instead.
    const reading = isTrimmed(raw) ? undefined : readBillingRecord(object, raw);
    const record = reading?.ok ? reading.record : undefined;
    if (record) records.set(name, record);
    const deleted = snapshot.data.deleted === true || (name === resource && event.event_type.endsWith('_deleted'));
    changes.push({
      object,
      id: snapshot.data.id,
      // Records without a resource version (rare) count as of the event's time, in the same unit (ms).
      version: record?.sourceVersion ?? event.occurred_at * 1000,
      ...(record ? { record } : {}),
      ...(deleted ? { deleted: true } : {}),
    });
  }

  const primaryId = Snapshot.parse(event.content[resource]).id;
  // A copy cut to its id still names its customer's id in the event's customer, when the event carries one.
  const customerId = resource === 'customer' ? primaryId : (records.get(resource)?.customerId ?? Snapshot.safeParse(event.content.customer).data?.id);
  const references: RecordReference[] = customerId && !records.has('customer') ? [{ object: 'customers', id: customerId }] : [];
  const type = PUBLISHED[event.event_type];
  const primary: RecordReference = { object: STORED_RESOURCES[resource]!, id: primaryId };
  const publish: Publication | undefined = type
    ? {
        type,
        plan(known: KnownBody) {
          const fields = records.get(resource)?.fields ?? known(primary);
          const owner = customerId ?? (typeof fields?.customerId === 'string' ? fields.customerId : undefined);
          return owner ? publishPlan(type, resource, fields, records.get('invoice')?.fields, owner) : undefined;
        },
      }
    : undefined;
  return { kind: 'apply', occurredAt: event.occurred_at, changes, references, ...(publish ? { publish } : {}) };
}

function publishPlan(
  type: PlaybookEventType,
  resource: string,
  primary: JsonObject | undefined,
  invoice: JsonObject | undefined,
  customerId: string,
): PublishPlan | undefined {
  if (!primary) return undefined;
  switch (resource) {
    case 'customer':
      return { type, customerId };
    case 'subscription':
      return { type, customerId, subscription: primary };
    case 'invoice':
      return { type, customerId, invoice: primary };
    case 'transaction': {
      const payment = primary as {
        id: string;
        amount: number;
        currency?: string;
        outcome: 'succeeded' | 'failed' | 'pending' | 'refunded' | 'other';
        invoiceId?: string;
        subscriptionId?: string;
        failureMessage?: string;
        at?: string;
      };
      const retry = (invoice as { nextPaymentAttemptAt?: string } | undefined)?.nextPaymentAttemptAt;
      return {
        type,
        customerId,
        ...(invoice ? { invoice } : {}),
        payment: {
          id: payment.id,
          amount: payment.amount,
          ...(payment.currency ? { currency: payment.currency } : {}),
          outcome: payment.outcome,
          ...(payment.invoiceId ? { invoiceId: payment.invoiceId } : {}),
          ...(payment.subscriptionId ? { subscriptionId: payment.subscriptionId } : {}),
          ...(payment.failureMessage ? { failureMessage: payment.failureMessage } : {}),
          ...(type === 'payment.failed' && retry ? { nextPaymentAttemptAt: retry } : {}),
          ...(payment.at ? { at: payment.at } : {}),
        },
      };
    }
    default:
      return undefined;
  }
}
