import type { ReceivingConnector } from '../connections/connector';
import type { WebhookReceiver } from '../webhooks/connector-webhooks';
import { readPaymentEnvelope, trimmedToId } from '../webhooks/event-envelope';
import { webhookProblems } from '../webhooks/problems';
import { SIGNATURE_HEADER, parseSignatureHeader, verifySignature, type HeaderReading } from '../webhooks/signature';
import { paymentNaming } from './naming';

/**
 * The receive side of the payment platform's webhooks: signed over the raw body
 * (`Stripe-Signature`, HMAC-SHA256 with the connection's Webhook Signing Secret).
 */
export const paymentWebhookReceiver: WebhookReceiver = {
  path: '/webhooks/payments',
  proof: 'the HMAC-SHA256 signature over the raw body, verified in constant time',
  secretFields: ['webhookSigningSecret'],

  precheck(request) {
    const reading = readHeader(request.headers[SIGNATURE_HEADER]);
    return reading.ok ? undefined : paymentWebhookProblems.invalidSignature(reading.reason);
  },
  verify(request, credentials, context) {
    const secret = credentials.webhookSigningSecret;
    if (!secret) return paymentWebhookProblems.signingSecretMissing();
    const reading = readHeader(request.headers[SIGNATURE_HEADER]);
    const check = verifySignature({ header: reading.ok ? reading.header : request.headers[SIGNATURE_HEADER], rawBody: request.rawBody, secret, ...context });
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
};

/**
 * The header read once per delivery: the precheck reads it before any I/O, and the verify that
 * follows takes the same reading (the last header read, compared by value: the sender's own text).
 */
let lastRead: { header: string; reading: HeaderReading } | undefined;
function readHeader(header: string | undefined): HeaderReading {
  if (header !== undefined && lastRead?.header === header) return lastRead.reading;
  const reading = parseSignatureHeader(header);
  if (header !== undefined) lastRead = { header, reading };
  return reading;
}

/** What the payment webhook receiver runs (its bundle holds this and the shared receiver only). */
export const paymentReceiving: ReceivingConnector = { ...paymentNaming, webhooks: paymentWebhookReceiver };

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
