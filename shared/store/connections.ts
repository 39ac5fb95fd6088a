import { DeleteItemCommand, GetItemCommand, UpdateItemCommand } from './table-client';
import type { ConnectorName } from '../connectors';
import { Connection, ConnectionHealth } from './items';
import { indexKey, key } from './table';
import {
  checkAccountId,
  checkConnector,
  fromItem,
  putVersioned,
  queryAll,
  toItem,
  writeIfCondition,
  type Table,
} from './table-access';

export { VersionConflictError } from './table-access';

export async function getConnection(table: Table, accountId: string, connector: ConnectorName): Promise<Connection | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: toItem(key.connection(checkAccountId(accountId), checkConnector(connector))),
      ConsistentRead: true,
    }),
  );
  return Item ? Connection.parse(fromItem(Item)) : undefined;
}

/**
 * Writes a connection if nobody else wrote it since `connection.version` was read (0 means "new:
 * must not exist yet"). Returns the new version; throws VersionConflictError otherwise.
 */
export async function putConnection(table: Table, connection: Connection): Promise<number> {
  const checked = Connection.parse(connection);
  return putVersioned(
    table,
    { ...key.connection(checked.accountId, checked.connector), ...scheduleIndex(checked), ...checked },
    () => `The ${checked.connector} connection of account ${checked.accountId}`,
  );
}

/**
 * A connection whose sync settings ask for scheduled API syncs is indexed under its frequency, so
 * the hourly, daily and weekly dispatchers find exactly the connections due without a scan.
 */
function scheduleIndex(connection: Connection): Record<string, string> {
  const { frequency, method } = connection.syncSettings as { frequency?: unknown; method?: unknown };
  if (typeof frequency !== 'string' || method === 'webhooks') return {};
  return indexKey.connectionBySchedule(frequency, connection.accountId, connection.connector);
}

/**
 * Every connection scheduled at `frequency`, across accounts: the one read that is not confined to
 * an account, made by the sync dispatcher only. Paged through gsi1.
 */
export async function listScheduledConnections(table: Table, frequency: string): Promise<Connection[]> {
  const items = await queryAll(table, {
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :schedule',
    ExpressionAttributeValues: toItem({ ':schedule': indexKey.scheduleLookup(frequency).gsi1pk }),
  });
  return items.map((item) => Connection.parse(item));
}

/** Removes a connection; true if there was one. Its synced records and checkpoints are left to the caller. */
export async function deleteConnection(table: Table, accountId: string, connector: ConnectorName): Promise<boolean> {
  const { Attributes } = await table.client.send(
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: toItem(key.connection(checkAccountId(accountId), checkConnector(connector))),
      ReturnValues: 'ALL_OLD',
    }),
  );
  return Attributes !== undefined;
}

export async function listConnections(table: Table, accountId: string): Promise<Connection[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.account(checkAccountId(accountId)).pk, ':prefix': 'CONNECTION#' }),
    ConsistentRead: true,
  });
  return items.map((item) => Connection.parse(item));
}

/**
 * Records the outcome of a connection test or sync. Leaves `version` alone: health changes on its
 * own schedule and must not make the user's concurrent edit of the settings fail.
 * False if the connection does not exist (it is never created here).
 */
export async function updateConnectionHealth(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  health: ConnectionHealth,
): Promise<boolean> {
  const checked = ConnectionHealth.parse(health);
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.connection(checkAccountId(accountId), checkConnector(connector))),
        UpdateExpression: 'SET health = :health',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: toItem({ ':health': checked }),
      }),
    ),
  );
}
