import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BillingEventEnvelope, PaymentEventEnvelope, envelopeChecks, readBillingEnvelope, readPaymentEnvelope } from '../../shared/webhooks/event-envelope';

/**
 * The receiver reads each event's envelope with a hand check (event-envelope.ts) and asks the
 * zod schema only when the check refuses. The two must agree on every body JSON can carry: the
 * check accepts exactly what the schema accepts.
 */

const agrees = (body: unknown) => {
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  const payment = isObject && envelopeChecks.payment(body as Record<string, unknown>);
  const billing = isObject && envelopeChecks.billing(body as Record<string, unknown>);
  expect(payment).toBe(PaymentEventEnvelope.safeParse(body).success);
  expect(billing).toBe(BillingEventEnvelope.safeParse(body).success);
};

/** Values at and around each field's limits, of every other JSON kind, and missing (undefined). */
const tricky = fc.oneof(
  fc.constantFrom(undefined, null, '', 'e', 'event', 'x'.repeat(255), 'x'.repeat(256), 0, -1, 1.5, 253_402_300_799, 253_402_300_800, 2 ** 53, true, [], {}),
  fc.jsonValue({ maxDepth: 2 }),
);
const jsonObject = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const validText = fc.string({ minLength: 1, maxLength: 255 });
const validSeconds = fc.integer({ min: 0, max: 253_402_300_799 });

/** A valid event of each platform, then one field (or one field of `data`) replaced by a tricky value. */
const payments = fc
  .record({
    event: fc.record(
      {
        id: validText,
        object: fc.constant('event'),
        type: validText,
        created: validSeconds,
        livemode: fc.boolean(),
        api_version: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
        data: fc.record({ object: jsonObject, previous_attributes: fc.option(jsonObject, { nil: null }) }, { requiredKeys: ['object'] }),
      },
      { requiredKeys: ['id', 'object', 'type', 'created', 'data'] },
    ),
    field: fc.constantFrom('id', 'object', 'type', 'created', 'livemode', 'api_version', 'data', 'data.object', 'data.previous_attributes', 'none'),
    value: tricky,
  })
  .map(({ event, field, value }) => {
    if (field.startsWith('data.')) return { ...event, data: { ...event.data, [field.slice(5)]: value } };
    return field === 'none' ? event : { ...event, [field]: value };
  });

const billings = fc
  .record({
    event: fc.record({ id: validText, object: fc.constant('event'), event_type: validText, occurred_at: validSeconds, content: jsonObject }),
    field: fc.constantFrom('id', 'object', 'event_type', 'occurred_at', 'content', 'none'),
    value: tricky,
  })
  .map(({ event, field, value }) => (field === 'none' ? event : { ...event, [field]: value }));

/** Through JSON, as the receiver reads bodies: no undefined values, objects as JSON.parse makes them. */
const asParsed = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('the receiver’s envelope check agrees with the schema', () => {
  it('on any JSON at all', () => {
    fc.assert(fc.property(fc.jsonValue(), agrees), { numRuns: 1000 });
  });

  it('on valid events with any one field changed or missing', () => {
    let accepted = 0;
    fc.assert(
      fc.property(payments, billings, (payment, billing) => {
        for (const body of [asParsed(payment), asParsed(billing)]) {
          agrees(body);
          if (readPaymentEnvelope(body).ok || readBillingEnvelope(body).ok) accepted += 1;
        }
      }),
      { numRuns: 3000 },
    );
    // Both answers are exercised, not only refusals.
    expect(accepted).toBeGreaterThan(1000);
  });

  it('accepts real events without copying them, and refuses others with the schema’s paths and no values', () => {
    const event = { id: 'evt_1', object: 'event', type: 'customer.updated', created: 1_750_000_000, data: { object: { id: 'cus_1', email: 'pat@example.com' } } };
    const reading = readPaymentEnvelope(event);
    expect(reading).toMatchObject({ ok: true, eventId: 'evt_1', eventType: 'customer.updated' });
    expect(reading.ok && reading.payload).toBe(event);

    const billing = { id: 'ev_1', object: 'event', event_type: 'customer_changed', occurred_at: 1, content: { customer: { id: 'c1' } } };
    expect(readBillingEnvelope(billing)).toMatchObject({ ok: true, eventId: 'ev_1', eventType: 'customer_changed' });

    const refused = readPaymentEnvelope({ ...event, created: -5, data: { object: ['pat@example.com'] } });
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.errors.map((error) => error.path).sort()).toEqual(['created', 'data.object']);
    expect(JSON.stringify(refused.errors)).not.toContain('pat@example.com');
  });
});
