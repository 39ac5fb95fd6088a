import type { ReceivingConnector } from '../connections/connector';
import { WEBHOOK_PASSWORD, WEBHOOK_USERNAME, parseBasicAuthorization, sameCredentials } from '../webhooks/basic-credentials';
import type { WebhookReceiver } from '../webhooks/connector-webhooks';
import { readBillingEnvelope, trimmedToId } from '../webhooks/event-envelope';
import { webhookProblems } from '../webhooks/problems';
import { billingNaming } from './naming';

/**
 * The receive side of the billing platform's webhooks: HTTP Basic credentials the gateway made for
 * the account (shared/billing/webhook-credentials.ts).
 */
export const billingWebhookReceiver: WebhookReceiver = {
  path: '/webhooks/billing',
  proof: 'the webhook Basic credentials, checked in constant time',
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
};

/** What the billing webhook receiver runs (its bundle holds this and the shared receiver only). */
export const billingReceiving: ReceivingConnector = { ...billingNaming, webhooks: billingWebhookReceiver };

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
