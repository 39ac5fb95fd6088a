import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { ConnectorName } from '../connectors';
import { WebhookEventMark } from './items';
import { key } from './table';
import { checkAccountId, checkConnector, toItem, writeIfCondition, type Table } from './table-access';

/**
 * Remembers a platform event id; true the first time only, so a redelivered event is dropped.
 * `expiresAt` (epoch seconds) should lie past the platform's retry horizon (3 days).
 */
export async function markWebhookEventOnce(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  eventId: string,
  expiresAt: number,
): Promise<boolean> {
  const mark = WebhookEventMark.parse({ accountId, connector, eventId, expiresAt });
  return writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...key.webhookEvent(mark.accountId, mark.connector, mark.eventId), ...mark }),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
}

/**
 * Forgets an event mark, for when the event could not be enqueued after it was marked: the
 * platform's retry must then be accepted, not dropped as a duplicate.
 */
export async function forgetWebhookEvent(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  eventId: string,
): Promise<void> {
  await table.client.send(
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: toItem(key.webhookEvent(checkAccountId(accountId), checkConnector(connector), eventId)),
    }),
  );
}
