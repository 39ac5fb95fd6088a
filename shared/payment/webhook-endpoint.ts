import type { ConnectorWebhooks } from '../webhooks/connector-webhooks';
import { getOrGone, unreadableRecord } from '../webhooks/platform-records';
import { webhookProblems } from '../webhooks/problems';
import { SIGNATURE_HEADER, parseSignatureHeader, verifySignature } from '../webhooks/signature';
import { readPaymentEnvelope, trimmedToId } from '../webhooks/event-envelope';
import { readPaymentRecord } from './objects';
import { PaymentSyncSettings, type PaymentObject } from './settings';
import { paymentEventEffects } from './webhook';

/**
 * The payment platform's webhooks: signed over the raw body (`Stripe-Signature`, HMAC-SHA256 with
 * the connection's Webhook Signing Secret), applied by the event worker with `paymentEventEffects`.
 */
export const paymentWebhooks: ConnectorWebhooks = {
  path: '/webhooks/payments',
  secretFields: ['webhookSigningSecret'],

  precheck(request) {
    const reading = parseSignatureHeader(request.headers[SIGNATURE_HEADER]);
    return reading.ok ? undefined : paymentWebhookProblems.invalidSignature(reading.reason);
  },
  verify(request, credentials, context) {
    const secret = credentials.webhookSigningSecret;
    if (!secret) return paymentWebhookProblems.signingSecretMissing();
    const check = verifySignature({ header: request.headers[SIGNATURE_HEADER], rawBody: request.rawBody, secret, ...context });
    if (check.ok) return undefined;
    return check.reason === 'outside_tolerance' ? paymentWebhookProblems.staleSignature(context.toleranceSeconds) : paymentWebhookProblems.invalidSignature(check.detail);
  },
  readEnvelope: readPaymentEnvelope,
  forQueue(payload, idsOnly) {
    const data = payload.data as { object?: Record<string, unknown> } | undefined;
    if (!data?.object || (!idsOnly && !('client_secret' in data.object))) return payload;
    // A payment intent's client_secret lets a browser confirm the payment: it never needs to sit in a queue.
    const { client_secret: _dropped, ...object } = data.object;
    return { ...payload, data: idsOnly ? { object: trimmedToId(object) } : { ...data, object } };
  },

  effects: paymentEventEffects,
  // The customer filter needs a customer's subscriptions, which an event does not carry; customer
  // events are taken as they come, as the incremental sync takes them (the full sync reconciles).
  settings: (settings) => ({ ...PaymentSyncSettings.parse(settings), keeps: () => true }),
  versionAt: (epochMs) => Math.floor(epochMs / 1000),
  /**
   * `GET /v1/<object>/<id>`. A deleted customer answers `{id, deleted: true}`; a missing record 404.
   * The platform's records carry no version: the copy is as of the fetch time (in seconds like
   * event times), so any event created before the fetch is older than it.
   */
  fetcher: (client, nowMs) => async (object, id) => {
    const path = `/v1/${object}/${encodeURIComponent(id)}`;
    const version = Math.floor(nowMs() / 1000);
    const body = await getOrGone(client, path);
    if (body === undefined || (body as { deleted?: unknown }).deleted === true) return { found: false };
    const reading = readPaymentRecord(object as PaymentObject, body, version);
    if (!reading.ok) throw unreadableRecord('payment', path, reading.problem);
    return { found: true, record: reading.record };
  },

  subscribeTo: [
    'customer.created',
    'customer.updated',
    'customer.deleted',
    'customer.subscription.created',
    'customer.subscription.updated',
    'customer.subscription.deleted',
    'invoice.created',
    'invoice.finalized',
    'invoice.updated',
    'invoice.payment_succeeded',
    'invoice.payment_failed',
    'charge.succeeded',
    'charge.failed',
    'charge.refunded',
    'charge.dispute.created',
    'payment_intent.succeeded',
    'payment_intent.payment_failed',
  ],
  readiness(connection) {
    const ready = connection.config.webhookSigningSecretSet === true;
    return { ready, notes: ready ? [] : ['Add the Webhook Signing Secret to the payment connection (the endpoint’s signing secret, whsec_...).'] };
  },
};

/** The payment receiver's refusals (the spec's Errors row "Webhook not received": invalid signature). */
export const paymentWebhookProblems = {
  signingSecretMissing: () =>
    webhookProblems.refused({
      slug: 'webhook-secret-missing',
      title: 'No webhook signing secret',
      status: 400,
      detail: 'The payment connection has no Webhook Signing Secret, so its webhooks cannot be verified.',
      remedy: "Add the Webhook Signing Secret to the payment connection (the endpoint's signing secret on the payment platform, whsec_...).",
    }),

  invalidSignature: (detail: string) =>
    webhookProblems.refused({
      slug: 'webhook-signature',
      title: 'Invalid webhook signature',
      status: 400,
      detail: `The delivery is not signed as the payment platform signs webhooks: ${detail}.`,
      remedy:
        "Check that the payment connection's Webhook Signing Secret is the signing secret of this endpoint on the payment platform, and that the body reaches the gateway unchanged.",
    }),

  staleSignature: (toleranceSeconds: number) =>
    webhookProblems.refused({
      slug: 'webhook-signature-expired',
      title: 'Webhook signature outside the time tolerance',
      status: 400,
      detail: `The signature's timestamp is more than ${toleranceSeconds} s away from the gateway's clock; replayed deliveries are refused.`,
      remedy: 'Let the platform send a fresh delivery (it signs each attempt anew); if every delivery fails this way, check the sending clock.',
    }),
};
