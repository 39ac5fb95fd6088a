import type { ConnectorWebhooks } from '../webhooks/connector-webhooks';
import type { ApplyingConnector } from '../connections/connector';
import { getOrGone, unreadableRecord } from '../webhooks/platform-records';
import { billingConnectionClient } from './client';
import { billingNaming } from './naming';
import { billingRowKey, readBillingRecord } from './objects';
import { BillingSyncSettings, type BillingObject } from './settings';
import { keepsSubscription } from './sync';
import { billingEventEffects } from './webhook';
import { billingWebhookReceiver } from './webhook-receiver';

const BILLING_PATHS: Record<BillingObject, string> = {
  customers: '/api/v2/customers',
  subscriptions: '/api/v2/subscriptions',
  invoices: '/api/v2/invoices',
  // The platform has no payments resource: payments are transactions.
  payments: '/api/v2/transactions',
};

/**
 * The billing platform's webhooks: received as `billingWebhookReceiver` checks them, applied by
 * the event worker with `billingEventEffects`.
 */
export const billingWebhooks: ConnectorWebhooks = {
  ...billingWebhookReceiver,

  effects: billingEventEffects,
  settings: (raw) => {
    const settings = BillingSyncSettings.parse(raw);
    return {
      ...settings,
      keeps: (object, fields) => object !== 'subscriptions' || keepsSubscription({ id: String(fields.id ?? ''), fields }, settings.subscriptionStatus),
    };
  },
  versionAt: (epochMs) => epochMs,
  /** `GET /api/v2/<resource>/<id>` answers a row (`{customer: {...}}`); its `resource_version` is the version. */
  fetcher: (client) => async (object, id) => {
    const path = `${BILLING_PATHS[object as BillingObject]}/${encodeURIComponent(id)}`;
    const row = (await getOrGone(client, path)) as Record<string, unknown> | undefined;
    const raw = row?.[billingRowKey(object as BillingObject)] as { deleted?: unknown } | undefined;
    if (!raw || raw.deleted === true) return { found: false };
    const reading = readBillingRecord(object as BillingObject, raw);
    if (!reading.ok) throw unreadableRecord('billing', path, reading.problem);
    return { found: true, record: reading.record };
  },

  // Deliveries carry Basic credentials and no signature: the event is read back from the platform
  // (GET /api/v2/events/{id} answers { event }) before anything is applied or published.
  confirm: async (client, eventId) => {
    const answer = (await getOrGone(client, `/api/v2/events/${encodeURIComponent(eventId)}`)) as { event?: unknown } | undefined;
    const event = answer?.event;
    return event && typeof event === 'object' && (event as { id?: unknown }).id === eventId ? (event as Record<string, unknown>) : undefined;
  },

  subscribeTo: [
    'customer_created',
    'customer_changed',
    'customer_deleted',
    'subscription_created',
    'subscription_changed',
    'subscription_activated',
    'subscription_renewed',
    'subscription_cancelled',
    'subscription_deleted',
    'subscription_paused',
    'subscription_resumed',
    'subscription_reactivated',
    'subscription_cancellation_scheduled',
    'subscription_scheduled_cancellation_removed',
    'payment_succeeded',
    'payment_failed',
    'invoice_generated',
    'invoice_updated',
  ],
  readiness(connection) {
    const username = typeof connection.config.webhookUsername === 'string' ? connection.config.webhookUsername : undefined;
    return username
      ? { ready: true, notes: [], username }
      : { ready: false, notes: ['Create webhook credentials, and enter them as the endpoint’s Basic authentication on the billing platform.'] };
  },
};

/** What the event worker runs of the billing connector: its webhooks and the client that fetches records. */
export const billingApplying: ApplyingConnector = { ...billingNaming, webhooks: billingWebhooks, client: billingConnectionClient };
