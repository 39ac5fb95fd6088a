import type { ConnectorName } from '../connectors';
import type { Gateway } from '../gateway';
import type { Connection } from '../store/items';
import type { Credentials, SealedCredentials } from '../vault/sealed-credentials';

/**
 * A connection's webhook secret, sealed apart from its other credentials under the context
 * {account, connector, purpose: webhook}. The receivers' key grants require that purpose, so an
 * internet-facing receiver opens the one secret it verifies with and never a platform API key,
 * private key or refresh token (docs/permissions.md).
 */

/** The fields the connector's receiver verifies with (its `secretFields`), picked from the credentials (none: nothing to seal). */
export function webhookFieldsOf(fields: readonly string[], credentials: Credentials): Credentials | undefined {
  const picked = Object.fromEntries(Object.entries(credentials).filter(([field]) => fields.includes(field)));
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/** Seals the webhook secret apart, for the connection being stored (undefined when it has none). */
export async function sealWebhookSecret(gateway: Pick<Gateway, 'vault'>, scope: { accountId: string; connector: ConnectorName }, credentials: Credentials, secretFields: readonly string[]): Promise<SealedCredentials | undefined> {
  const fields = webhookFieldsOf(secretFields, credentials);
  return fields ? gateway.vault.seal({ ...scope, purpose: 'webhook' }, fields) : undefined;
}

/** What a receiver verifies with: the webhook secret alone ({} when the connection has none sealed apart). */
export async function openWebhookSecret(gateway: Gateway, connection: Connection): Promise<Credentials> {
  if (!connection.webhookSecret) return {};
  return gateway.vault.open({ accountId: connection.accountId, connector: connection.connector, purpose: 'webhook' }, connection.webhookSecret);
}
