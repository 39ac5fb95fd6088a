import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { Conversation, Message, MessageWrite } from './items';
import { indexKey, key } from './table';
import { checkAccountId, fromItem, putVersioned, queryAll, toItem, writeIfCondition, type Table } from './table-access';

/** States in which a conversation's long-poll is held by a poller. */
const LIVE_STATES: ReadonlySet<Conversation['state']> = new Set(['starting', 'queued', 'active']);

/**
 * Writes a conversation if nobody else wrote it since `conversation.version` was read (0: new).
 * Returns the new version; throws VersionConflictError otherwise. While the conversation is live
 * and has a poller shard, it is listed in that shard's index entry.
 */
export async function putConversation(table: Table, conversation: Conversation): Promise<number> {
  const checked = Conversation.parse(conversation);
  const shardIndex =
    checked.pollerShard !== undefined && LIVE_STATES.has(checked.state)
      ? indexKey.conversationByShard(checked.pollerShard, checked.accountId, checked.conversationId)
      : {};
  return putVersioned(
    table,
    { ...key.conversation(checked.accountId, checked.conversationId), ...shardIndex, ...checked },
    () => `Conversation ${checked.conversationId} of account ${checked.accountId}`,
  );
}

export async function getConversation(table: Table, accountId: string, conversationId: string): Promise<Conversation | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: toItem(key.conversation(checkAccountId(accountId), conversationId)),
      ConsistentRead: true,
    }),
  );
  return Item ? Conversation.parse(fromItem(Item)) : undefined;
}

/**
 * The live conversations whose long-polls a poller shard holds, across accounts: the poller fleet
 * serves every account, so this is the one read not confined to an account. Eventually consistent.
 */
export async function listLiveConversationsInShard(table: Table, shard: number): Promise<Conversation[]> {
  const items = await queryAll(table, {
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :shard',
    ExpressionAttributeValues: toItem({ ':shard': indexKey.shardLookup(shard).gsi1pk }),
  });
  return items.map((item) => Conversation.parse(item));
}

/** Stores a message at its sequence number; false if that sequence was already written (a redelivery). */
export async function appendMessage(
  table: Table,
  accountId: string,
  conversationId: string,
  sequence: number,
  message: MessageWrite,
): Promise<boolean> {
  const checked = Message.parse({ ...message, accountId, conversationId, sequence });
  return writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...key.message(checked.accountId, checked.conversationId, checked.sequence), ...checked }),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
}

/** A conversation's messages in sequence order. */
export async function listMessages(table: Table, accountId: string, conversationId: string): Promise<Message[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({
      ':pk': key.message(checkAccountId(accountId), conversationId, 0).pk,
      ':prefix': 'MESSAGE#',
    }),
    ConsistentRead: true,
  });
  return items.map((item) => Message.parse(item));
}
