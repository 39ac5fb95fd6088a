import type { ConnectorWebhooks } from '../webhooks/connector-webhooks';
import { WEBHOOK_PASSWORD, WEBHOOK_USERNAME, parseBasicAuthorization, sameCredentials } from '../webhooks/basic-credentials';
import { readBillingEnvelope, trimmedToId } from '../webhooks/event-envelope';
import { getOrGone, unreadableRecord } from '../webhooks/platform-records';
import { webhookProblems } from '../webhooks/problems';
import { billingRowKey, readBillingRecord } from './objects';
import { BillingSyncSettings, type BillingObject } from './settings';
import { keepsSubscription } from './sync';
import { billingEventEffects } from './webhook';

const BILLING_PATHS: Record<BillingObject, string> = {
  customers: '/api/v2/customers',
  subscriptions: '/api/v2/subscriptions',
  invoices: '/api/v2/invoices',
  // The platform has no payments resource: payments are transactions.
  payments: '/api/v2/transactions',
};

/**
 * The billing platform's webhooks: HTTP Basic credentials the gateway made for the account
 * (shared/billing/webhook-credentials.ts), applied by the event worker with `billingEventEffects`.
 */
export const billingWebhooks: ConnectorWebhooks = {
  path: '/webhooks/billing',
  secretFields: [WEBHOOK_USERNAME, WEBHOOK_PASSWORD],

  precheck(request) {
    return parseBasicAuthorization(request.headers.authorization) ? undefined : billingWebhookProblems.unauthorized('The delivery carries no Basic credentials.');
  },
  verify(request, credentials) {
    const given = parseBasicAuthorization(request.headers.authorization);
    const username = credentials[WEBHOOK_USERNAME];
    const password = credentials[WEBHOOK_PASSWORD];
    if (!username || !password) return billingWebhookProblems.unauthorized('No webhook credentials are set up for this billing connection.');
    if (!given || !sameCredentials(given, { username, password })) {
      return billingWebhookProblems.unauthorized("The Basic credentials are not the billing connection's webhook credentials.");
    }
    return undefined;
  },
  readEnvelope: readBillingEnvelope,
  forQueue(payload, idsOnly) {
    if (!idsOnly) return payload;
    const content = payload.content as Record<string, unknown>;
    return { ...payload, content: Object.fromEntries(Object.entries(content).map(([name, resource]) => [name, trimmedToId(resource)])) };
  },

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

  subscribeTo: [
    'customer_created',
    'customer_changed',
    'customer_deleted',
    'subscription_created',
    'subscription_changed',
    'subscription_renewed',
    'subscription_cancelled',
    'subscription_paused',
    'subscription_resumed',
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

/** The billing receiver's refusal (the spec's Errors row "Webhook not received": missing Basic auth). */
export const billingWebhookProblems = {
  unauthorized: (detail: string) =>
    webhookProblems.refused({
      slug: 'webhook-unauthorized',
      title: 'Webhook credentials required',
      status: 401,
      detail,
      remedy:
        "Create webhook credentials for the billing connection in the dashboard, and enter them as the webhook's Basic authentication username and password on the billing platform.",
    }),
};
