import type { ConnectorWebhooks } from '../webhooks/connector-webhooks';
import type { ApplyingConnector } from '../connections/connector';
import { getOrGone, unreadableRecord } from '../webhooks/platform-records';
import { paymentConnectionClient } from './client';
import { paymentNaming } from './naming';
import { readPaymentRecord } from './objects';
import { PaymentSyncSettings, type PaymentObject } from './settings';
import { paymentEventEffects } from './webhook';
import { paymentWebhookReceiver } from './webhook-receiver';

/**
 * The payment platform's webhooks: received as `paymentWebhookReceiver` checks them, applied by
 * the event worker with `paymentEventEffects`.
 */
export const paymentWebhooks: ConnectorWebhooks = {
  ...paymentWebhookReceiver,

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

/** What the event worker runs of the payment connector: its webhooks and the client that fetches records. */
export const paymentApplying: ApplyingConnector = { ...paymentNaming, webhooks: paymentWebhooks, client: paymentConnectionClient };
