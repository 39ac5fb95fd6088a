import { DeleteItemCommand, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from './table-client';
import { FleetLease, LiveConversation, PollerRun } from './items';
import { LIVE_BUCKETS, key } from './table';
import { checkAccountId, countAll, fromItem, isConditionalCheckFailed, queryAll, toItem, writeIfCondition, type Table } from './table-access';

/**
 * The poller fleet's items: one small lease item per live conversation (who holds its one
 * long-poll, until when, and the last sequence delivered), one heartbeat per poller run, and the
 * fleet's own lease. Every change is a conditional write, so two pollers can never both believe
 * they hold one conversation.
 *
 * A conversation's lease names the poller run that holds it and a hard expiry (the run's end plus
 * a margin). Between those, it holds while the run's heartbeat is fresh: the run renews all its
 * leases with one heartbeat write instead of one write per conversation (an idle conversation
 * costs no write), and a killed run's leases lapse when its heartbeat does.
 */

export async function putLiveConversation(table: Table, live: LiveConversation): Promise<boolean> {
  const checked = LiveConversation.parse(live);
  return writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...key.liveConversation(checkAccountId(checked.accountId), checked.conversationId), ...checked }),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
}

export async function getLiveConversation(table: Table, accountId: string, conversationId: string): Promise<LiveConversation | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: toItem(key.liveConversation(checkAccountId(accountId), conversationId)), ConsistentRead: true }),
  );
  return Item ? LiveConversation.parse(fromItem(Item)) : undefined;
}

export async function deleteLiveConversation(table: Table, accountId: string, conversationId: string): Promise<void> {
  await table.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: toItem(key.liveConversation(checkAccountId(accountId), conversationId)) }));
}

/** Every live conversation, across accounts (strongly consistent: the fleet decides to stop on it). */
export async function listLiveConversations(table: Table): Promise<LiveConversation[]> {
  const pages = await Promise.all(
    Array.from({ length: LIVE_BUCKETS }, (_, bucket) =>
      queryAll(table, {
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: toItem({ ':pk': key.liveBucket(bucket).pk }),
        ConsistentRead: true,
      }),
    ),
  );
  return pages.flat().map((item) => LiveConversation.parse(item));
}

export async function countLiveConversations(table: Table): Promise<number> {
  const counts = await Promise.all(
    Array.from({ length: LIVE_BUCKETS }, (_, bucket) =>
      countAll(table, { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: toItem({ ':pk': key.liveBucket(bucket).pk }), ConsistentRead: true }),
    ),
  );
  return counts.reduce((a, b) => a + b, 0);
}

export interface LeaseClaim {
  owner: string;
  now: number;
  /** Hard expiry of the lease (epoch ms). */
  expiresAt: number;
  /** A run the claimer saw dead (its heartbeat lapsed): its lease may be taken over. */
  lapsedOwner?: string;
}

/**
 * Takes a conversation's lease if nobody holds it, its hard expiry passed, or it is held by
 * `lapsedOwner`. Returns the item as claimed, or undefined when someone else holds it or the
 * conversation is no longer live. `releasedAt` in the answer is the release this claim follows
 * (a planned handover), and is cleared in the table, so a later claim never reads a stale one.
 */
export async function claimConversationLease(table: Table, accountId: string, conversationId: string, claim: LeaseClaim): Promise<LiveConversation | undefined> {
  const lapsed = claim.lapsedOwner ? ' OR #owner = :lapsed' : '';
  try {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.liveConversation(checkAccountId(accountId), conversationId)),
        UpdateExpression: 'SET #owner = :me, #expires = :expires REMOVE #released',
        ConditionExpression: `attribute_exists(pk) AND (attribute_not_exists(#owner) OR #owner = :me OR #expires < :now${lapsed})`,
        ExpressionAttributeNames: { '#owner': 'leaseOwner', '#expires': 'leaseExpiresAt', '#released': 'releasedAt' },
        ExpressionAttributeValues: toItem({ ':me': claim.owner, ':expires': claim.expiresAt, ':now': claim.now, ...(claim.lapsedOwner ? { ':lapsed': claim.lapsedOwner } : {}) }),
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!Attributes) return undefined;
    const before = LiveConversation.parse(fromItem(Attributes));
    // A release counts only if nobody held the lease in between (a lapsed or expired holder is no handover).
    const { releasedAt, ...rest } = before;
    return { ...rest, leaseOwner: claim.owner, leaseExpiresAt: claim.expiresAt, ...(releasedAt !== undefined && !before.leaseOwner ? { releasedAt } : {}) };
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** Gives a lease back (the run is ending), recording when, so the next claim can measure the gap. */
export async function releaseConversationLease(table: Table, accountId: string, conversationId: string, owner: string, at: number): Promise<boolean> {
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.liveConversation(checkAccountId(accountId), conversationId)),
        UpdateExpression: 'REMOVE #owner, #expires SET #released = :at',
        ConditionExpression: '#owner = :me',
        ExpressionAttributeNames: { '#owner': 'leaseOwner', '#expires': 'leaseExpiresAt', '#released': 'releasedAt' },
        ExpressionAttributeValues: toItem({ ':me': owner, ':at': at }),
      }),
    ),
  );
}

/**
 * Records that every event up to `ack` was persisted and published. Only the lease holder may,
 * and only forwards: false means the lease was lost (the caller stops polling the conversation).
 */
export async function advanceAck(table: Table, accountId: string, conversationId: string, owner: string, ack: number, eventId?: string): Promise<boolean> {
  // The Messaging API's event id moves with the sequence in the same write: it is where the stream resumes.
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.liveConversation(checkAccountId(accountId), conversationId)),
        UpdateExpression: eventId === undefined ? 'SET #ack = :ack' : 'SET #ack = :ack, #eventId = :eventId',
        ConditionExpression: '#owner = :me AND #ack < :ack',
        ExpressionAttributeNames: { '#owner': 'leaseOwner', '#ack': 'ack', ...(eventId === undefined ? {} : { '#eventId': 'lastEventId' }) },
        ExpressionAttributeValues: toItem({ ':me': owner, ':ack': ack, ...(eventId === undefined ? {} : { ':eventId': eventId }) }),
      }),
    ),
  );
}

/** A poller run's heartbeat: written before it claims anything, then every few seconds. */
export async function beatPollerRun(table: Table, run: PollerRun): Promise<void> {
  const checked = PollerRun.parse(run);
  await table.client.send(new PutItemCommand({ TableName: table.tableName, Item: toItem({ ...key.pollerRun(checked.runId), ...checked }) }));
}

/** Every poller run's heartbeat (one small partition): who is alive, and until when. */
export async function listPollerRuns(table: Table): Promise<PollerRun[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :runs)',
    ExpressionAttributeValues: toItem({ ':pk': key.pollerRun('').pk, ':runs': key.pollerRun('').sk }),
    ConsistentRead: true,
  });
  return items.map((item) => PollerRun.parse(item));
}

export async function getPollerRun(table: Table, runId: string): Promise<PollerRun | undefined> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: toItem(key.pollerRun(runId)), ConsistentRead: true }));
  return Item ? PollerRun.parse(fromItem(Item)) : undefined;
}

/**
 * A run that ended at its round's end hands every conversation it held over at once: its heartbeat
 * item says when it ended, and each lease naming it is free to the next claimer (no write per
 * conversation). Kept until nothing is held under it (`endPollerRun`).
 */
export async function markPollerRunEnded(table: Table, runId: string, endedAt: number, handedOver: { shard?: number; held?: number } = {}): Promise<void> {
  await beatPollerRun(table, { runId, renewedAt: endedAt, until: endedAt, endedAt, ...handedOver });
}

/**
 * Takes every conversation an ended run handed over at once: `by` is the adopting run (its
 * heartbeat holds them from now, and it renames their leases as it goes) or `CLAIMED_ONE_BY_ONE`.
 * Exactly one caller wins; false when the run is not ended or someone else took it first.
 */
export async function adoptPollerRun(table: Table, runId: string, by: string): Promise<boolean> {
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.pollerRun(runId)),
        UpdateExpression: 'SET adoptedBy = :by',
        ConditionExpression: 'attribute_exists(endedAt) AND (attribute_not_exists(adoptedBy) OR adoptedBy = :by)',
        ExpressionAttributeValues: toItem({ ':by': by }),
      }),
    ),
  );
}

export async function endPollerRun(table: Table, runId: string): Promise<void> {
  await table.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: toItem(key.pollerRun(runId)) }));
}

export async function getFleetLease(table: Table): Promise<FleetLease | undefined> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: toItem(key.fleet()), ConsistentRead: true }));
  return Item ? FleetLease.parse(fromItem(Item)) : undefined;
}

/**
 * Takes (or renews) the fleet's lease for one execution: free, lapsed, held by this execution, or
 * handed over by `handOverFrom`. Undefined when another live execution holds it.
 */
export async function claimFleetLease(
  table: Table,
  claim: { executionId: string; now: number; until: number; shards: number; handOverFrom?: string },
): Promise<FleetLease | undefined> {
  const handOver = claim.handOverFrom ? ' OR executionId = :from' : '';
  try {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.fleet()),
        UpdateExpression: 'SET executionId = :me, #until = :until, shards = :shards',
        ConditionExpression: `attribute_not_exists(executionId) OR executionId = :me OR #until < :now${handOver}`,
        ExpressionAttributeNames: { '#until': 'until' },
        ExpressionAttributeValues: toItem({ ':me': claim.executionId, ':until': claim.until, ':now': claim.now, ':shards': claim.shards, ...(claim.handOverFrom ? { ':from': claim.handOverFrom } : {}) }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? FleetLease.parse(fromItem(Attributes)) : undefined;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** The fleet stops: its lease lapses at once, so the next conversation's start launches a new fleet. */
export async function releaseFleetLease(table: Table, executionId: string): Promise<boolean> {
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.fleet()),
        // The start turn goes too: a conversation started after the stopping plan's last count
        // must be able to start a fleet, even if another start took the turn a moment ago.
        UpdateExpression: 'SET #until = :zero, shards = :zero REMOVE startUntil',
        ConditionExpression: 'executionId = :me',
        ExpressionAttributeNames: { '#until': 'until' },
        ExpressionAttributeValues: toItem({ ':me': executionId, ':zero': 0 }),
      }),
    ),
  );
}

/**
 * Whether this caller may start a fleet execution now: `start` (no fleet running) or `surge` (an
 * extra poller). One caller per `windowMs`, fleet-wide, so a burst of new conversations starts one
 * execution, not hundreds.
 */
export async function takeFleetTurn(table: Table, kind: 'start' | 'surge', now: number, windowMs: number): Promise<boolean> {
  const attribute = kind === 'start' ? 'startUntil' : 'surgeUntil';
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.fleet()),
        UpdateExpression: 'SET #turn = :until',
        ConditionExpression: 'attribute_not_exists(#turn) OR #turn < :now',
        ExpressionAttributeNames: { '#turn': attribute },
        ExpressionAttributeValues: toItem({ ':until': now + windowMs, ':now': now }),
      }),
    ),
  );
}
