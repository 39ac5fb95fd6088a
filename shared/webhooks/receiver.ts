import { AccountId } from '../connectors';
import type { Gateway } from '../gateway';
import { BODY_LIMITS, assertBodyWithin, json, type HttpRequest, type HttpResponse } from '../api/http';
import { problems, type ProblemError } from '../api/problem';
import { addToLogContext } from '../log/log-context';
import { log as rootLog } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import type { WebhookEventMessage } from '../queues/messages';
import type { Credentials } from '../vault/sealed-credentials';
import { WEBHOOK_PASSWORD, WEBHOOK_USERNAME, parseBasicAuthorization, sameCredentials } from './basic-credentials';
import { openedConnection } from './connection-cache';
import { TRIMMED, readBillingEnvelope, readPaymentEnvelope, type EnvelopeReading } from './event-envelope';
import { refusalReason, webhookProblems, type WebhookConnector } from './problems';
import { SIGNATURE_HEADER, parseSignatureHeader, verifySignature } from './signature';

/**
 * The webhook receivers: check, verify, enqueue, answer 200 in milliseconds. Nothing is stored
 * here; deduping and applying is the event worker's job (an SQS standard queue may deliver a
 * message twice anyway, so the worker must be idempotent regardless). Warm, a delivery costs one
 * AWS call: the SendMessage.
 *
 * Refusals are problem+json 4xx with nothing stored or enqueued: a missing or unknown account, a
 * body over 1 MB, a content type other than JSON, a missing, malformed or wrong signature or
 * credentials, an old timestamp, a body that is not JSON or not an event.
 */

export interface VerifyContext {
  nowSeconds: number;
  toleranceSeconds: number;
}

/** What differs between the two platforms' receivers. */
export interface WebhookVerifier {
  connector: WebhookConnector;
  /** Checks on the request alone, before any I/O: a missing signature header or Basic credentials. */
  precheck(request: HttpRequest): ProblemError | undefined;
  /** Whether the delivery comes from the platform, judged with THIS account's credentials only. */
  verify(request: HttpRequest, credentials: Credentials, context: VerifyContext): ProblemError | undefined;
  readEnvelope(body: unknown): EnvelopeReading;
}

export const paymentVerifier: WebhookVerifier = {
  connector: 'payment',
  precheck(request) {
    const reading = parseSignatureHeader(request.headers[SIGNATURE_HEADER]);
    return reading.ok ? undefined : webhookProblems.invalidSignature(reading.reason);
  },
  verify(request, credentials, context) {
    const secret = credentials.webhookSigningSecret;
    if (!secret) return webhookProblems.signingSecretMissing();
    const check = verifySignature({ header: request.headers[SIGNATURE_HEADER], rawBody: request.rawBody, secret, ...context });
    if (check.ok) return undefined;
    return check.reason === 'outside_tolerance' ? webhookProblems.staleSignature(context.toleranceSeconds) : webhookProblems.invalidSignature(check.detail);
  },
  readEnvelope: readPaymentEnvelope,
};

export const billingVerifier: WebhookVerifier = {
  connector: 'billing',
  precheck(request) {
    return parseBasicAuthorization(request.headers.authorization) ? undefined : webhookProblems.unauthorized('The delivery carries no Basic credentials.');
  },
  verify(request, credentials) {
    const given = parseBasicAuthorization(request.headers.authorization);
    const username = credentials[WEBHOOK_USERNAME];
    const password = credentials[WEBHOOK_PASSWORD];
    if (!username || !password) return webhookProblems.unauthorized('No webhook credentials are set up for this billing connection.');
    if (!given || !sameCredentials(given, { username, password })) {
      return webhookProblems.unauthorized("The Basic credentials are not the billing connection's webhook credentials.");
    }
    return undefined;
  },
  readEnvelope: readBillingEnvelope,
};

/**
 * A refusal against a copy of the connection older than this reads the connection again once, so
 * a signing secret or webhook password changed a moment ago works at once; an attacker sending
 * bad signatures costs at most one read per account per this long.
 */
const RELOAD_AFTER_REFUSAL_MS = 5_000;

/**
 * SQS refuses messages over 256 KiB. A bigger event is enqueued without its record bodies (ids
 * kept); the worker finds it cannot read them and fetches the records from the platform.
 */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * Answers 200 or throws the refusal (a ProblemError; the handler engine answers it as
 * problem+json and logs it). Each delivery counts once: WebhooksVerified, or WebhooksRefused with
 * its reason.
 */
export async function receiveWebhook(gateway: Gateway, request: HttpRequest, verifier: WebhookVerifier): Promise<HttpResponse> {
  const connector = verifier.connector;
  addToLogContext({ connector, route: 'webhook' });
  try {
    const accountId = request.query.account;
    if (accountId === undefined || accountId === '') throw webhookProblems.accountMissing(connector);
    // An id that cannot exist is an unknown account, not a bad request: the address is simply wrong.
    if (!AccountId.safeParse(accountId).success) throw webhookProblems.unknownAccount(connector);
    assertBodyWithin(request, BODY_LIMITS.webhook);
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (contentType !== 'application/json') throw problems.unsupportedMediaType('application/json');
    const early = verifier.precheck(request);
    if (early) throw early;

    let opened = await openedConnection(gateway, accountId, connector);
    if (!opened) throw webhookProblems.unknownAccount(connector);
    const context = { nowSeconds: Math.floor(gateway.now() / 1000), toleranceSeconds: gateway.env.WEBHOOK_TOLERANCE_SECONDS };
    let refusal = verifier.verify(request, opened.credentials, context);
    if (refusal && gateway.now() - opened.loadedAt >= RELOAD_AFTER_REFUSAL_MS) {
      opened = await openedConnection(gateway, accountId, connector, { maxAgeMs: RELOAD_AFTER_REFUSAL_MS });
      if (!opened) throw webhookProblems.unknownAccount(connector);
      refusal = verifier.verify(request, opened.credentials, context);
    }
    if (refusal) throw refusal;

    // Only a verified body is parsed.
    let body: unknown;
    try {
      body = JSON.parse(request.rawBody.toString('utf8'));
    } catch {
      throw problems.malformedJson();
    }
    const envelope = verifier.readEnvelope(body);
    if (!envelope.ok) throw problems.invalidBody(envelope.errors, `The body is not a ${connector} platform event.`);

    const message = fitForQueue({
      accountId,
      connector,
      eventId: envelope.eventId,
      eventType: envelope.eventType,
      receivedAt: new Date(gateway.now()).toISOString(),
      payload: envelope.payload,
    }, { bodyBytes: request.rawBody.length });
    try {
      await gateway.queues.webhookEvents.send([message]);
    } catch (error) {
      rootLog.error('webhook event could not be enqueued; the platform will retry', { eventId: envelope.eventId, error });
      throw webhookProblems.unavailable();
    }
    // Debug only: the event worker logs each event it applies; the count is the WebhooksVerified metric.
    rootLog.debug('webhook received', { eventId: envelope.eventId, eventType: envelope.eventType });
    recordMetric.webhookVerified(connector);
    return json(200, { received: true, eventId: envelope.eventId });
  } catch (error) {
    recordMetric.webhookRefused(connector, refusalReason(error));
    throw error;
  }
}

/** The message as it fits on the queue: unchanged, or with record bodies cut to their ids (see MAX_MESSAGE_BYTES). */
function withoutClientSecret(message: WebhookEventMessage): WebhookEventMessage {
  const data = message.payload.data as { object?: Record<string, unknown> } | undefined;
  if (message.connector !== 'payment' || !data?.object || !('client_secret' in data.object)) return message;
  const { client_secret: _dropped, ...object } = data.object;
  return { ...message, payload: { ...message.payload, data: { ...data, object } } };
}

/**
 * A message made from a body of `bodyBytes` fits without measuring: re-serialized JSON is no longer
 * than its source except for numbers (`1e20` prints as 21 digits: at most ~6x), and the envelope
 * adds well under 4 KB. Saves serializing every ordinary (2-20 KB) event twice.
 */
function surelyFits(bodyBytes: number | undefined): boolean {
  return bodyBytes !== undefined && bodyBytes * 6 + 4096 <= MAX_MESSAGE_BYTES;
}

export function fitForQueue(original: WebhookEventMessage, from: { bodyBytes?: number } = {}): WebhookEventMessage {
  // A payment intent's client_secret lets a browser confirm the payment: it never needs to sit in a queue.
  const message = withoutClientSecret(original);
  if (surelyFits(from.bodyBytes) || Buffer.byteLength(JSON.stringify(message)) <= MAX_MESSAGE_BYTES) return message;
  const idOnly = (value: unknown) => {
    const record = value as { id?: unknown; object?: unknown } | null;
    return typeof record === 'object' && record !== null && typeof record.id === 'string'
      ? { id: record.id, ...(typeof record.object === 'string' ? { object: record.object } : {}), [TRIMMED]: true }
      : {};
  };
  const payload = { ...message.payload };
  if (message.connector === 'payment') {
    const data = payload.data as { object?: unknown };
    payload.data = { object: idOnly(data.object) };
  } else {
    const content = payload.content as Record<string, unknown>;
    payload.content = Object.fromEntries(Object.entries(content).map(([name, resource]) => [name, idOnly(resource)]));
  }
  return { ...message, payload };
}
