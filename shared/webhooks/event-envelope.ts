import * as z from 'zod/mini';

/**
 * The outer shape of each platform's webhook event: what the receiver checks before enqueueing
 * (an id to dedupe on, a type, a time). The record inside is the worker's business. Loose: fields
 * the gateway does not read pass through untouched.
 */

/**
 * Set by the receiver on a record body it cut to its id to fit the queue: the worker must fetch
 * the record, never store the stub.
 */
export const TRIMMED = 'gatewayTrimmed';

/** Whether a record body in an event was cut to its id by the receiver. */
export function isTrimmed(record: unknown): boolean {
  return typeof record === 'object' && record !== null && (record as Record<string, unknown>)[TRIMMED] === true;
}

/** A record body cut to its id (and its `object` word), marked so the worker fetches it instead. */
export function trimmedToId(value: unknown): Record<string, unknown> {
  const record = value as { id?: unknown; object?: unknown } | null;
  return typeof record === 'object' && record !== null && typeof record.id === 'string'
    ? { id: record.id, ...(typeof record.object === 'string' ? { object: record.object } : {}), [TRIMMED]: true }
    : {};
}

/** The fields both platforms' envelopes share, built with the first envelope schema. */
function envelopeFields() {
  return {
    id: z.string().check(z.minLength(1), z.maxLength(255)),
    type: z.string().check(z.minLength(1), z.maxLength(255)),
    /** Unix seconds, up to the year 9999. */
    time: z.number().check(z.int(), z.minimum(0), z.maximum(253_402_300_799)),
    object: z.record(z.string(), z.unknown()),
  };
}
let fields: ReturnType<typeof envelopeFields> | undefined;
const shared = () => (fields ??= envelopeFields());

// Built on first use (z.lazy), field schemas included: most functions load this module, through the
// connector registry, and never parse these; a receiver parses one only to say why it refuses a body
// (its deliveries pass the hand-written check below).
/** `{id:"evt_...", object:"event", type, created, livemode, data:{object, previous_attributes?}, api_version}` */
export const PaymentEventEnvelope = z.lazy(() =>
  z.looseObject({
    id: shared().id,
    object: z.literal('event'),
    type: shared().type,
    created: shared().time,
    livemode: z.optional(z.boolean()),
    api_version: z.nullish(z.string()),
    data: z.looseObject({ object: shared().object, previous_attributes: z.nullish(shared().object) }),
  }),
);
export type PaymentEventEnvelope = z.infer<typeof PaymentEventEnvelope>;

/** `{id:"ev_...", occurred_at, source, object:"event", api_version:"v2", event_type, webhook_status, content:{...}}` */
export const BillingEventEnvelope = z.lazy(() =>
  z.looseObject({
    id: shared().id,
    object: z.literal('event'),
    event_type: shared().type,
    occurred_at: shared().time,
    content: shared().object,
  }),
);
export type BillingEventEnvelope = z.infer<typeof BillingEventEnvelope>;

export type EnvelopeReading =
  { ok: true; eventId: string; eventType: string; payload: Record<string, unknown> } | { ok: false; errors: Array<{ path: string; message: string }> };

/**
 * The receiver's fast path: the envelope's few fields checked by hand, exactly as the schema
 * checks them, without copying the record inside (zod would walk and copy every field of it, the
 * larger part of a warm receiver's own work). The schema stays the definition: whatever this
 * refuses is read again by the schema, which gives the errors; a property test
 * (test/webhooks/event-envelope.test.ts) holds the two to the same answers on any JSON.
 */
type EnvelopeCheck = (event: Record<string, unknown>) => boolean;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isText = (value: unknown): value is string => typeof value === 'string' && value.length >= 1 && value.length <= 255;
const isUnixSeconds = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 253_402_300_799;
/** What JSON.parse makes: an object made by a literal (zod's record wants a plain object). */
const isJsonObject = (value: unknown): value is Record<string, unknown> => {
  if (!isObject(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

const paymentEnvelopeHolds: EnvelopeCheck = (event) => {
  const data = event.data;
  return (
    isText(event.id) &&
    event.object === 'event' &&
    isText(event.type) &&
    isUnixSeconds(event.created) &&
    (event.livemode === undefined || typeof event.livemode === 'boolean') &&
    (event.api_version === undefined || event.api_version === null || typeof event.api_version === 'string') &&
    isObject(data) &&
    isJsonObject(data.object) &&
    (data.previous_attributes === undefined || data.previous_attributes === null || isJsonObject(data.previous_attributes))
  );
};

const billingEnvelopeHolds: EnvelopeCheck = (event) =>
  isText(event.id) && event.object === 'event' && isText(event.event_type) && isUnixSeconds(event.occurred_at) && isJsonObject(event.content);

/** zod's paths and messages only, never a value: the body is the platform's customer data. */
function readWith(
  schema: z.core.$ZodType<Record<string, unknown>>,
  holds: EnvelopeCheck,
  body: unknown,
  idOf: (event: Record<string, unknown>) => [string, string],
): EnvelopeReading {
  if (isObject(body) && holds(body)) {
    const [eventId, eventType] = idOf(body);
    return { ok: true, eventId, eventType, payload: body };
  }
  const parsed = z.safeParse(schema, body);
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.slice(0, 10).map((issue) => ({ path: issue.path.map(String).join('.') || '(body)', message: issue.message })),
    };
  }
  const [eventId, eventType] = idOf(parsed.data);
  return { ok: true, eventId, eventType, payload: parsed.data };
}

/** Exported for the property test that holds it to the schema. */
export const envelopeChecks = { payment: paymentEnvelopeHolds, billing: billingEnvelopeHolds } as const;

export function readPaymentEnvelope(body: unknown): EnvelopeReading {
  return readWith(PaymentEventEnvelope, paymentEnvelopeHolds, body, (event) => [String(event.id), String(event.type)]);
}

export function readBillingEnvelope(body: unknown): EnvelopeReading {
  return readWith(BillingEventEnvelope, billingEnvelopeHolds, body, (event) => [String(event.id), String(event.event_type)]);
}
