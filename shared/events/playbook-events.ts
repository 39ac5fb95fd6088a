import * as z from 'zod/mini';
import { NormalisedInvoice, NormalisedSubscription, PaymentOutcome } from '../sync/normalised';
import { GatewayEvent } from './gateway-event';

/**
 * The events the gateway publishes from platform webhooks, one detail schema for both platforms
 * (documented in docs/events.md). Envelope `schemaVersion` '1': fields may be added within a
 * version; removing or changing one makes a new version.
 */

export const PLAYBOOK_EVENT_TYPES = [
  'customer.created',
  'customer.changed',
  'subscription.created',
  'subscription.changed',
  'subscription.renewed',
  'subscription.cancelled',
  'payment.succeeded',
  'payment.failed',
  'invoice.generated',
  'dispute.created',
] as const;
export const PlaybookEventType = z.enum(PLAYBOOK_EVENT_TYPES);
export type PlaybookEventType = z.infer<typeof PlaybookEventType>;

const Time = z.iso.datetime();
const Money = z.number().check(z.int(), z.describe("in the currency's minor unit (cents)"));

/** Who the event is about, as far as the gateway knows them (email and name once synced or sent). */
export const EventCustomer = z
  .object({
    id: z.string(),
    email: z.optional(z.string()),
    name: z.optional(z.string()),
  })
  .register(z.globalRegistry, { id: 'EventCustomer' });
export type EventCustomer = z.infer<typeof EventCustomer>;

/** A payment attempt: billing transaction, or the payment platform's invoice payment. */
export const EventPayment = z
  .object({
    /** The transaction (billing) or payment intent (payment) id, when the platform names one. */
    id: z.optional(z.string()),
    amount: Money,
    currency: z.optional(z.string()),
    outcome: PaymentOutcome,
    invoiceId: z.optional(z.string()),
    subscriptionId: z.optional(z.string()),
    failureMessage: z.optional(z.string()),
    /** How many times the platform has tried to collect this invoice. */
    attemptCount: z.optional(z.number().check(z.int())),
    /** When the platform tries again (dunning), if it will. */
    nextPaymentAttemptAt: z.optional(Time),
    at: z.optional(Time),
  })
  .register(z.globalRegistry, { id: 'EventPayment' });
export type EventPayment = z.infer<typeof EventPayment>;

export const EventDispute = z
  .object({
    id: z.string(),
    chargeId: z.optional(z.string()),
    paymentIntentId: z.optional(z.string()),
    amount: Money,
    currency: z.optional(z.string()),
    reason: z.optional(z.string()),
    status: z.optional(z.string()),
    evidenceDueBy: z.optional(Time),
  })
  .register(z.globalRegistry, { id: 'EventDispute' });
export type EventDispute = z.infer<typeof EventDispute>;

/** What every event's `data` carries: where it came from on the platform. */
const source = {
  /** The platform's own event id and type (`evt_...` / `customer.subscription.deleted`, `ev_...` / `subscription_cancelled`). */
  platformEventId: z.string(),
  platformEventType: z.string(),
};

const CustomerData = z.object({ ...source, customer: EventCustomer });
const SubscriptionData = z.object({ ...source, customer: EventCustomer, subscription: NormalisedSubscription });
const PaymentData = z.object({ ...source, customer: EventCustomer, payment: EventPayment, invoice: z.optional(NormalisedInvoice) });
const InvoiceData = z.object({ ...source, customer: EventCustomer, invoice: NormalisedInvoice });
const DisputeData = z.object({ ...source, customer: z.optional(EventCustomer), dispute: EventDispute });

export const PLAYBOOK_EVENT_DATA = {
  'customer.created': CustomerData,
  'customer.changed': CustomerData,
  'subscription.created': SubscriptionData,
  'subscription.changed': SubscriptionData,
  'subscription.renewed': SubscriptionData,
  'subscription.cancelled': SubscriptionData,
  'payment.succeeded': PaymentData,
  'payment.failed': PaymentData,
  'invoice.generated': InvoiceData,
  'dispute.created': DisputeData,
} as const satisfies Record<PlaybookEventType, z.ZodMiniType>;

export type PlaybookEventData<T extends PlaybookEventType> = z.infer<(typeof PLAYBOOK_EVENT_DATA)[T]>;

/**
 * A publishable event: `data` is checked against its type's schema, and anything the schema does
 * not document is dropped, so what playbooks receive is exactly what docs/events.md describes.
 * Throws (a ZodError) when `data` lacks a documented field.
 */
export function playbookEvent(event: {
  id: string;
  type: PlaybookEventType;
  accountId: string;
  source: GatewayEvent['source'];
  occurredAt: string;
  data: unknown;
}): GatewayEvent {
  const data = PLAYBOOK_EVENT_DATA[event.type].parse(event.data) as Record<string, unknown>;
  return GatewayEvent.parse({ schemaVersion: '1', ...event, data });
}
