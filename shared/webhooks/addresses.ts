import * as z from 'zod/mini';
import type { HttpRequest } from '../api/http';
import type { GatewayEnvironment } from '../config';
import type { WebhookConnector } from '../connections/connector';
import { ConnectorName } from '../connectors';
import type { Connection } from '../store/items';
import { LOOPBACK_HOST } from '../http/loopback';

/**
 * Where each platform sends an account's webhooks: the spec's path plus the account, exactly as
 * the dashboard shows it. The account in the address decides whose credentials verify the
 * delivery, and whose records it may touch.
 */
export function webhookAddress(baseUrl: string, path: string, accountId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${path}?account=${encodeURIComponent(accountId)}`;
}

/** The gateway's public address: BASE_URL when deployed with one, else the address the caller reached. */
export function gatewayBaseUrl(env: Pick<GatewayEnvironment, 'BASE_URL'>, request: HttpRequest): string {
  if (env.BASE_URL) return env.BASE_URL;
  const host = request.headers['x-forwarded-host'] ?? request.headers.host ?? 'localhost';
  const scheme = request.headers['x-forwarded-proto'] ?? (LOOPBACK_HOST.test(host) ? 'http' : 'https');
  return `${scheme}://${host}`;
}

export const WebhookEndpoint = z
  .object({
    connector: ConnectorName,
    url: z.string().check(z.describe('Paste this address into the platform’s webhook settings')),
    connected: z.boolean(),
    /** Whether deliveries to the address can be verified now. */
    ready: z.boolean(),
    /** What is missing or worth knowing before the platform's events are applied. */
    notes: z.array(z.string()),
    /** Billing: the Basic username (the password is shown once, when the credentials are created). */
    username: z.optional(z.string()),
    events: z.array(z.string()).check(z.describe('Platform events to select for the endpoint')),
  })
  .register(z.globalRegistry, { id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** One platform's webhook endpoint for the account, with no secret in it. */
export function webhookEndpoint(baseUrl: string, accountId: string, connector: WebhookConnector, connection: Connection | undefined): WebhookEndpoint {
  const readiness = connection ? connector.webhooks.readiness(connection) : { ready: false, notes: [`Connect the ${connector.name} connector first.`] };
  const notes = [...readiness.notes];
  const method = (connection?.syncSettings as { method?: unknown } | undefined)?.method;
  if (connection && (method === undefined || method === 'api')) {
    notes.push('The sync method is API Direct: webhooks are acknowledged but not applied. Choose Webhooks or Both in the sync settings to apply them.');
  }
  return {
    connector: connector.name,
    url: webhookAddress(baseUrl, connector.webhooks.path, accountId),
    connected: connection !== undefined,
    ready: readiness.ready,
    notes,
    ...(readiness.username ? { username: readiness.username } : {}),
    events: [...connector.webhooks.subscribeTo],
  };
}
