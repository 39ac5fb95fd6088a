import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { Connection } from '../store/items';
import { VersionConflictError } from '../store/store';
import { sealWebhookSecret } from '../webhooks/webhook-secret';
import { connectors } from './registry';
import * as store from '../store/store';

/**
 * Migration of a connection stored before the webhook secret was sealed apart: the API opens its
 * credentials and stores the webhook fields apart (once; a concurrent write wins and the next view
 * tries again). Until then its receiver answers 401 and the platform retries the delivery.
 */
export async function sealWebhookSecretApart(gateway: Gateway, log: Logger, connection: Connection): Promise<Connection> {
  const secretFields = connectors.find(connection.connector)?.webhooks?.secretFields;
  if (connection.webhookSecret || !secretFields) return connection;
  const scope = { accountId: connection.accountId, connector: connection.connector };
  const webhookSecret = await sealWebhookSecret(gateway, scope, await gateway.vault.open(scope, connection.credentials), secretFields);
  if (!webhookSecret) return connection;
  try {
    const updated = { ...connection, webhookSecret };
    updated.version = await store.putConnection(gateway.table, updated);
    log.info('webhook secret sealed apart', scope);
    return updated;
  } catch (error) {
    if (error instanceof VersionConflictError) return connection;
    throw error;
  }
}
