import { DeleteItemCommand, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from './table-client';
import { Conversation, ConversationState, Message, MessageWrite, SentMessage, StoredTranscript } from './items';
import { key } from './table';
import { batchGetAll, checkAccountId, fromItem, isConditionalCheckFailed, countAll, putVersioned, queryAll, toItem, writeIfCondition, type Table } from './table-access';

/** States in which a conversation's long-poll is held by a poller. */
export const LIVE_STATES: readonly ConversationState[] = ['starting', 'queued', 'active'];

/**
 * Writes a conversation if nobody else wrote it since `conversation.version` was read (0: new).
 * Returns the new version; throws VersionConflictError otherwise. After creation, the gateway
 * changes conversations with `updateConversation` (named attributes, conditioned on the state),
 * so a lifecycle step and a poller never overwrite each other's fields.
 */
export async function putConversation(table: Table, conversation: Conversation): Promise<number> {
  const checked = Conversation.parse(conversation);
  return putVersioned(
    table,
    { ...key.conversation(checked.accountId, checked.conversationId), ...checked },
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
 * Many conversations at once (BatchGetItem, 100 keys a call, strongly consistent: the same read
 * units as one GetItem each, in a hundredth of the requests), by `accountId/conversationId`.
 * A poller taking over a round's conversations reads them this way.
 */
export async function getConversations(table: Table, keys: ReadonlyArray<{ accountId: string; conversationId: string }>): Promise<Map<string, Conversation>> {
  const unique = [...new Map(keys.map((k) => [`${k.accountId}/${k.conversationId}`, k])).values()];
  const items = await batchGetAll(table, unique.map((k) => toItem(key.conversation(checkAccountId(k.accountId), k.conversationId))), { ConsistentRead: true });
  const found = new Map<string, Conversation>();
  for (const item of items) {
    const conversation = Conversation.parse(fromItem(item));
    found.set(`${conversation.accountId}/${conversation.conversationId}`, conversation);
  }
  return found;
}

export interface ConversationChange {
  set?: Partial<Omit<Conversation, 'accountId' | 'conversationId' | 'version'>>;
  remove?: ReadonlyArray<keyof Conversation>;
  /** Only if the conversation is in one of these states now. */
  whenStateIn?: readonly ConversationState[];
  /** Only if this attribute is absent now (a field written once, e.g. `handedOff`). */
  whenAbsent?: keyof Conversation;
}

/**
 * Changes named attributes of a stored conversation and bumps its version, if the conditions
 * hold. Returns the conversation as written, or undefined when it does not exist or a condition
 * failed (the caller lost a race: someone else ended it, handed it off...).
 */
export async function updateConversation(table: Table, accountId: string, conversationId: string, change: ConversationChange): Promise<Conversation | undefined> {
  const names: Record<string, string> = { '#version': 'version' };
  const values: Record<string, unknown> = { ':one': 1 };
  const sets = ['#version = #version + :one'];
  for (const [field, value] of Object.entries(change.set ?? {})) {
    if (value === undefined) continue;
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  const removes = (change.remove ?? []).map((field) => {
    names[`#${field}`] = field;
    return `#${field}`;
  });
  const conditions = ['attribute_exists(pk)'];
  if (change.whenStateIn) {
    names['#state'] = 'state';
    const states = change.whenStateIn.map((state, i) => {
      values[`:when${i}`] = state;
      return `:when${i}`;
    });
    conditions.push(`#state IN (${states.join(', ')})`);
  }
  if (change.whenAbsent) {
    names[`#${change.whenAbsent}`] = change.whenAbsent;
    conditions.push(`attribute_not_exists(#${change.whenAbsent})`);
  }
  try {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.conversation(checkAccountId(accountId), conversationId)),
        UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: toItem(values),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? Conversation.parse(fromItem(Attributes)) : undefined;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

export interface ConversationPage {
  conversations: Conversation[];
  /** Pass back as `startKey` for the next page. */
  nextKey?: string;
}

/** An account's conversations, newest first (ids are time-ordered). */
export async function listConversations(table: Table, accountId: string, options: { limit?: number; startKey?: string } = {}): Promise<ConversationPage> {
  const pk = key.conversation(checkAccountId(accountId), '').pk;
  const page = await table.client.send(
    new QueryCommand({
      TableName: table.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: toItem({ ':pk': pk, ':prefix': 'CONVERSATION#' }),
      ScanIndexForward: false,
      Limit: options.limit ?? 50,
      ...(options.startKey ? { ExclusiveStartKey: toItem({ pk, sk: `CONVERSATION#${options.startKey}` }) } : {}),
    }),
  );
  const conversations = (page.Items ?? []).map((item) => Conversation.parse(fromItem(item)));
  const last = page.LastEvaluatedKey ? String(fromItem(page.LastEvaluatedKey).sk).replace(/^CONVERSATION#/, '') : undefined;
  return { conversations, ...(last ? { nextKey: last } : {}) };
}

/** Stores a message at its sequence number; false if that sequence was already written (a redelivery). */
export async function appendMessage(table: Table, accountId: string, conversationId: string, sequence: number, message: MessageWrite): Promise<boolean> {
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

/** A conversation's received messages in sequence order. */
export async function listMessages(table: Table, accountId: string, conversationId: string): Promise<Message[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.message(checkAccountId(accountId), conversationId, 0).pk, ':prefix': 'MESSAGE#' }),
    ConsistentRead: true,
  });
  return items.map((item) => Message.parse(item));
}

/** Claims a sent message's id before the platform call; false if that id exists (a retried send). */
export async function claimSentMessage(table: Table, message: SentMessage): Promise<boolean> {
  const checked = SentMessage.parse(message);
  return writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...key.sentMessage(checkAccountId(checked.accountId), checked.conversationId, checked.messageId), ...checked }),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
}

export async function putSentMessage(table: Table, message: SentMessage): Promise<void> {
  const checked = SentMessage.parse(message);
  await table.client.send(
    new PutItemCommand({
      TableName: table.tableName,
      Item: toItem({ ...key.sentMessage(checkAccountId(checked.accountId), checked.conversationId, checked.messageId), ...checked }),
    }),
  );
}

export async function getSentMessage(table: Table, accountId: string, conversationId: string, messageId: string): Promise<SentMessage | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: toItem(key.sentMessage(checkAccountId(accountId), conversationId, messageId)), ConsistentRead: true }),
  );
  return Item ? SentMessage.parse(fromItem(Item)) : undefined;
}

export async function deleteSentMessage(table: Table, accountId: string, conversationId: string, messageId: string): Promise<void> {
  await table.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: toItem(key.sentMessage(checkAccountId(accountId), conversationId, messageId)) }));
}

export async function listSentMessages(table: Table, accountId: string, conversationId: string): Promise<SentMessage[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.sentMessage(checkAccountId(accountId), conversationId, '').pk, ':prefix': 'SENT#' }),
    ConsistentRead: true,
  });
  return items.map((item) => SentMessage.parse(item));
}

export async function putTranscript(table: Table, transcript: StoredTranscript): Promise<void> {
  const checked = StoredTranscript.parse(transcript);
  await table.client.send(
    new PutItemCommand({ TableName: table.tableName, Item: toItem({ ...key.transcript(checkAccountId(checked.accountId), checked.conversationId), ...checked }) }),
  );
}

export async function getTranscript(table: Table, accountId: string, conversationId: string): Promise<StoredTranscript | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: toItem(key.transcript(checkAccountId(accountId), conversationId)), ConsistentRead: true }),
  );
  return Item ? StoredTranscript.parse(fromItem(Item)) : undefined;
}

/**
 * Takes one of the account's concurrent-conversation slots if fewer than `cap` are taken; false
 * at the cap. The count is one small item updated conditionally, so two starts racing for the
 * last slot cannot both win.
 */
export async function reserveLiveSlot(table: Table, accountId: string, cap: number): Promise<boolean> {
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.liveCount(checkAccountId(accountId))),
        UpdateExpression: 'ADD #live :one',
        ConditionExpression: 'attribute_not_exists(#live) OR #live < :cap',
        ExpressionAttributeNames: { '#live': 'live' },
        ExpressionAttributeValues: toItem({ ':one': 1, ':cap': cap }),
      }),
    ),
  );
}

/** Gives a slot back (the conversation ended, or its start failed). Never below zero. */
export async function releaseLiveSlot(table: Table, accountId: string): Promise<void> {
  await writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.liveCount(checkAccountId(accountId))),
        UpdateExpression: 'ADD #live :minus',
        ConditionExpression: '#live > :zero',
        ExpressionAttributeNames: { '#live': 'live' },
        ExpressionAttributeValues: toItem({ ':minus': -1, ':zero': 0 }),
      }),
    ),
  );
}

/**
 * Recounts the account's live conversations and stores the count: a crash between a
 * conversation's end and its slot's release would otherwise keep a slot taken for good. Called
 * only when a start meets the cap, so its cost (reading the account's conversations) is rare.
 */
export async function recountLiveSlots(table: Table, accountId: string): Promise<number> {
  const pk = key.conversation(checkAccountId(accountId), '').pk;
  const count = await countAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    FilterExpression: '#state IN (:s0, :s1, :s2)',
    ExpressionAttributeNames: { '#state': 'state' },
    ExpressionAttributeValues: toItem({ ':pk': pk, ':prefix': 'CONVERSATION#', ':s0': LIVE_STATES[0], ':s1': LIVE_STATES[1], ':s2': LIVE_STATES[2] }),
    ConsistentRead: true,
  });
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(key.liveCount(accountId)),
      UpdateExpression: 'SET #live = :count',
      ExpressionAttributeNames: { '#live': 'live' },
      ExpressionAttributeValues: toItem({ ':count': count }),
    }),
  );
  return count;
}
