import { isAccountId } from '../connectors';
import type { Gateway } from '../gateway';
import { BODY_LIMITS, assertBodyWithin, json, type HttpRequest, type HttpResponse } from '../api/http';
import { ProblemError, problems } from '../api/problem';
import { addToLogContext } from '../log/log-context';
import { log as rootLog } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import type { ReceivingConnector } from '../connections/connector';
import { withBody } from '../queues/message-body';
import type { WebhookEventMessage } from '../queues/messages';
import { countWebhookRefusal } from '../history/record-history';
import { BASIC_CHALLENGE } from './basic-credentials';
import { heldConnection, openedConnection } from './connection-cache';
import type { WebhookReceiver } from './connector-webhooks';
import { refusalReason, webhookProblems } from './problems';

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
 * One platform's receiver: the same checks for every connector, its own verification in between.
 * Answers 200 or throws the refusal (a ProblemError: the handler engine answers it as problem+json
 * and logs it). Each delivery counts once: WebhooksVerified, or WebhooksRefused with its reason.
 */
export async function receiveWebhook(gateway: Gateway, request: HttpRequest, receiving: ReceivingConnector): Promise<HttpResponse> {
  const connector = receiving.name;
  const verifier = receiving.webhooks;
  addToLogContext({ connector, route: 'webhook' });
  const log = rootLog;
  try {
    const accountId = request.query.account;
    if (accountId === undefined || accountId === '') throw webhookProblems.accountMissing(receiving);
    // An id that cannot exist is an unknown account, not a bad request: the address is simply wrong.
    if (!isAccountId(accountId)) throw webhookProblems.unknownAccount(receiving);
    assertBodyWithin(request, BODY_LIMITS.webhook);
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (contentType !== 'application/json') throw problems.unsupportedMediaType('application/json');
    const early = verifier.precheck(request);
    if (early) throw early;

    let opened = heldConnection(gateway, accountId, connector) ?? (await openedConnection(gateway, accountId, connector));
    if (!opened) throw webhookProblems.unknownAccount(receiving);
    const context = { nowSeconds: Math.floor(gateway.now() / 1000), toleranceSeconds: gateway.env.WEBHOOK_TOLERANCE_SECONDS };
    let refusal = verifier.verify(request, opened.credentials, context);
    if (refusal && gateway.now() - opened.loadedAt >= RELOAD_AFTER_REFUSAL_MS) {
      opened = await openedConnection(gateway, accountId, connector, { maxAgeMs: RELOAD_AFTER_REFUSAL_MS });
      if (!opened) throw webhookProblems.unknownAccount(receiving);
      refusal = verifier.verify(request, opened.credentials, context);
    }
    if (refusal) throw refusal;

    // Only a verified body is parsed.
    const text = request.rawBody.toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw problems.malformedJson();
    }
    const envelope = verifier.readEnvelope(body);
    if (!envelope.ok) throw problems.invalidBody(envelope.errors, `The body is not a ${connector} platform event.`);

    const head = { accountId, connector, eventId: envelope.eventId, eventType: envelope.eventType, receivedAt: isoTime(gateway.now()) };
    const message = fitForQueue({ ...head, payload: envelope.payload }, verifier, { bodyBytes: request.rawBody.length });
    // Nothing taken out: the event goes on the queue as the platform sent it, not serialized again.
    if (message.payload === envelope.payload) withBody(message, `${JSON.stringify(head).slice(0, -1)},"payload":${text}}`);
    try {
      await gateway.queues.webhookEvents.send([message]);
    } catch (error) {
      log.error('webhook event could not be enqueued; the platform will retry', { eventId: envelope.eventId, error });
      throw webhookProblems.unavailable();
    }
    // Debug only: the event worker logs each event it applies; the count is the WebhooksVerified metric.
    log.debug('webhook received', { eventId: envelope.eventId, eventType: envelope.eventType });
    recordMetric.webhookVerified(connector);
    return json(200, { received: true, eventId: envelope.eventId });
  } catch (error) {
    recordMetric.webhookRefused(connector, refusalReason(error));
    await countWebhookRefusal(gateway, request.query.account, connector, error);
    // RFC 9110: a 401 names the scheme that would be accepted.
    if (error instanceof ProblemError && error.problem.status === 401 && !error.headers['www-authenticate']) {
      throw new ProblemError(error.problem, { ...error.headers, 'www-authenticate': BASIC_CHALLENGE });
    }
    throw error;
  }
}

let lastTime = { ms: Number.NaN, iso: '' };
/** `new Date(ms).toISOString()`, written once per millisecond: a busy receiver takes many deliveries in one. */
export function isoTime(ms: number): string {
  if (ms !== lastTime.ms) lastTime = { ms, iso: new Date(ms).toISOString() };
  return lastTime.iso;
}

/**
 * The message as it fits on the queue: without what must never wait there, and with record bodies
 * cut to their ids when it is too big for SQS (see MAX_MESSAGE_BYTES).
 */
export function fitForQueue(
  original: WebhookEventMessage,
  webhooks: Pick<WebhookReceiver, 'forQueue'>,
  from: { bodyBytes?: number } = {},
): WebhookEventMessage {
  const payload = webhooks.forQueue(original.payload, false);
  const message = payload === original.payload ? original : { ...original, payload };
  if (surelyFits(from.bodyBytes) || Buffer.byteLength(JSON.stringify(message)) <= MAX_MESSAGE_BYTES) return message;
  return { ...message, payload: webhooks.forQueue(message.payload, true) };
}

/**
 * A message made from a body of `bodyBytes` fits without measuring: re-serialized JSON is no longer
 * than its source except for numbers (`1e20` prints as 21 digits: at most ~6x), and the envelope
 * adds well under 4 KB. Saves serializing every ordinary (2-20 KB) event twice.
 */
function surelyFits(bodyBytes: number | undefined): boolean {
  return bodyBytes !== undefined && bodyBytes * 6 + 4096 <= MAX_MESSAGE_BYTES;
}
