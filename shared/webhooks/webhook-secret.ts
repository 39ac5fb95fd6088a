import type { ConnectorName } from '../connectors';
import { connectors } from '../connections/registry';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { VersionConflictError } from '../store/store';
import type { Connection } from '../store/items';
import type { Credentials, SealedCredentials } from '../vault/sealed-credentials';

/**
 * A connection's webhook secret, sealed apart from its other credentials under the context
 * {account, connector, purpose: webhook}. The receivers' key grants require that purpose, so an
 * internet-facing receiver opens the one secret it verifies with and never a platform API key,
 * private key or refresh token (docs/permissions.md).
 */

/** The fields the connector's receiver verifies with, picked from the credentials (none: nothing to seal). */
export function webhookFieldsOf(connector: ConnectorName, credentials: Credentials): Credentials | undefined {
  const fields = connectors.find(connector)?.webhooks?.secretFields ?? [];
  const picked = Object.fromEntries(Object.entries(credentials).filter(([field]) => fields.includes(field)));
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/** Seals the webhook secret apart, for the connection being stored (undefined when it has none). */
export async function sealWebhookSecret(gateway: Pick<Gateway, 'vault'>, scope: { accountId: string; connector: ConnectorName }, credentials: Credentials): Promise<SealedCredentials | undefined> {
  const fields = webhookFieldsOf(scope.connector, credentials);
  return fields ? gateway.vault.seal({ ...scope, purpose: 'webhook' }, fields) : undefined;
}

/** What a receiver verifies with: the webhook secret alone ({} when the connection has none sealed apart). */
export async function openWebhookSecret(gateway: Gateway, connection: Connection): Promise<Credentials> {
  if (!connection.webhookSecret) return {};
  return gateway.vault.open({ accountId: connection.accountId, connector: connection.connector, purpose: 'webhook' }, connection.webhookSecret);
}

/**
 * Migration of a connection stored before the webhook secret was sealed apart: the API opens its
 * credentials and stores the webhook fields apart (once; a concurrent write wins and the next view
 * tries again). Until then its receiver answers 401 and the platform retries the delivery.
 */
export async function sealWebhookSecretApart(gateway: Gateway, log: Logger, connection: Connection): Promise<Connection> {
  if (connection.webhookSecret || !connectors.find(connection.connector)?.webhooks) return connection;
  const scope = { accountId: connection.accountId, connector: connection.connector };
  const webhookSecret = await sealWebhookSecret(gateway, scope, await gateway.vault.open(scope, connection.credentials));
  if (!webhookSecret) return connection;
  try {
    const updated = { ...connection, webhookSecret };
    updated.version = await gateway.store.putConnection(updated);
    log.info('webhook secret sealed apart', scope);
    return updated;
  } catch (error) {
    if (error instanceof VersionConflictError) return connection;
    throw error;
  }
}
