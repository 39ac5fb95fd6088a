import * as z from 'zod';
import type { HttpRequest } from '../api/http';
import type { GatewayEnvironment } from '../config';
import type { Connection } from '../store/items';
import type { WebhookConnector } from './problems';

/**
 * Where each platform sends an account's webhooks: the spec's path plus the account, exactly as
 * the dashboard shows it. The account in the address decides whose credentials verify the
 * delivery, and whose records it may touch.
 */
export function webhookAddress(baseUrl: string, connector: WebhookConnector, accountId: string): string {
  const path = connector === 'payment' ? '/webhooks/payments' : '/webhooks/billing';
  return `${baseUrl.replace(/\/+$/, '')}${path}?account=${encodeURIComponent(accountId)}`;
}

/** The gateway's public address: BASE_URL when deployed with one, else the address the caller reached. */
export function gatewayBaseUrl(env: Pick<GatewayEnvironment, 'BASE_URL'>, request: HttpRequest): string {
  if (env.BASE_URL) return env.BASE_URL;
  const host = request.headers['x-forwarded-host'] ?? request.headers.host ?? 'localhost';
  const loopback = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(host);
  const scheme = request.headers['x-forwarded-proto'] ?? (loopback ? 'http' : 'https');
  return `${scheme}://${host}`;
}

/** The platform events to select when creating the webhook endpoint (the spec's Events tables). */
export const SUBSCRIBE_TO: Record<WebhookConnector, readonly string[]> = {
  payment: [
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
  billing: [
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
};

export const WebhookEndpoint = z
  .object({
    connector: z.enum(['payment', 'billing']),
    url: z.string().describe('Paste this address into the platform’s webhook settings'),
    connected: z.boolean(),
    /** Whether deliveries to the address can be verified now. */
    ready: z.boolean(),
    /** What is missing or worth knowing before the platform's events are applied. */
    notes: z.array(z.string()),
    /** Billing: the Basic username (the password is shown once, when the credentials are created). */
    username: z.string().optional(),
    events: z.array(z.string()).describe('Platform events to select for the endpoint'),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** One platform's webhook endpoint for the account, with no secret in it. */
export function webhookEndpoint(baseUrl: string, accountId: string, connector: WebhookConnector, connection: Connection | undefined): WebhookEndpoint {
  const notes: string[] = [];
  let ready = false;
  let username: string | undefined;
  if (!connection) {
    notes.push(`Connect the ${connector} connector first.`);
  } else if (connector === 'payment') {
    ready = connection.config.webhookSigningSecretSet === true;
    if (!ready) notes.push('Add the Webhook Signing Secret to the payment connection (the endpoint’s signing secret, whsec_...).');
  } else {
    username = typeof connection.config.webhookUsername === 'string' ? connection.config.webhookUsername : undefined;
    ready = username !== undefined;
    if (!ready) notes.push('Create webhook credentials, and enter them as the endpoint’s Basic authentication on the billing platform.');
  }
  const method = (connection?.syncSettings as { method?: unknown } | undefined)?.method;
  if (connection && (method === undefined || method === 'api')) {
    notes.push('The sync method is API Direct: webhooks are acknowledged but not applied. Choose Webhooks or Both in the sync settings to apply them.');
  }
  return {
    connector,
    url: webhookAddress(baseUrl, connector, accountId),
    connected: connection !== undefined,
    ready,
    notes,
    ...(username ? { username } : {}),
    events: [...SUBSCRIBE_TO[connector]],
  };
}
