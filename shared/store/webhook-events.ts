import { GetItemCommand, UpdateItemCommand } from './table-client';
import type { ConnectorName } from '../connectors';
import { WebhookEventMark } from './items';
import { key } from './table';
import { checkAccountId, checkConnector, fromItem, isConditionalCheckFailed, toItem, writeIfCondition, type Table } from './table-access';

export type WebhookEventClaim =
  /** This worker holds the event now; `attempts` counts this claim too. */
  | { outcome: 'claimed'; attempts: number }
  /** Applied or ignored before: a redelivery, skip it. */
  | { outcome: 'finished'; mark: WebhookEventMark }
  /** Another worker is applying it right now: try again later. */
  | { outcome: 'busy' };

export interface ClaimRequest {
  accountId: string;
  connector: ConnectorName;
  eventId: string;
  eventType: string;
  /** Epoch seconds: now, and how long the claim holds (past the worker's own timeout). */
  now: number;
  leaseSeconds: number;
  /** TTL of the mark (epoch seconds), set by the first claim only. */
  expiresAt: number;
}

/**
 * The event worker's exactly-once step: marks the event `pending` (held until now + lease) if it
 * is new, or pending with a lapsed or released claim (a crashed or failed attempt). One
 * conditional update; a second read only when the condition fails, to tell "done" from "busy".
 */
export async function claimWebhookEvent(table: Table, claim: ClaimRequest): Promise<WebhookEventClaim> {
  const accountId = checkAccountId(claim.accountId);
  const connector = checkConnector(claim.connector);
  const itemKey = toItem(key.webhookEvent(accountId, connector, claim.eventId));
  try {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: itemKey,
        UpdateExpression:
          'SET #state = :pending, claimedUntil = :until, expiresAt = if_not_exists(expiresAt, :expires), eventType = :type, ' +
          'accountId = :account, connector = :connector, eventId = :eventId ADD attempts :one',
        ConditionExpression: 'attribute_not_exists(pk) OR attribute_not_exists(#state) OR (#state = :pending AND claimedUntil < :now)',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: toItem({
          ':pending': 'pending',
          ':until': claim.now + claim.leaseSeconds,
          ':expires': claim.expiresAt,
          ':type': claim.eventType,
          ':account': accountId,
          ':connector': connector,
          ':eventId': claim.eventId,
          ':one': 1,
          ':now': claim.now,
        }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { outcome: 'claimed', attempts: Number(Attributes?.attempts?.N ?? 1) };
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
  const mark = await getWebhookEventMark(table, accountId, connector, claim.eventId);
  if (mark && (mark.state === 'applied' || mark.state === 'ignored')) return { outcome: 'finished', mark };
  return { outcome: 'busy' };
}

/** Records the outcome: `applied`, or `ignored` with why. The mark keeps its TTL. */
export async function finishWebhookEvent(
  table: Table,
  event: { accountId: string; connector: ConnectorName; eventId: string },
  outcome: { state: 'applied' | 'ignored'; note?: string; at: Date },
): Promise<void> {
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(key.webhookEvent(checkAccountId(event.accountId), checkConnector(event.connector), event.eventId)),
      UpdateExpression: outcome.note === undefined ? 'SET #state = :state, finishedAt = :at REMOVE claimedUntil, note' : 'SET #state = :state, finishedAt = :at, note = :note REMOVE claimedUntil',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: toItem({ ':state': outcome.state, ':at': outcome.at.toISOString(), ...(outcome.note === undefined ? {} : { ':note': outcome.note }) }),
    }),
  );
}

/**
 * A failed attempt lets go of its claim at once, so the queue's retry can claim it without waiting
 * for the lease to lapse. Only a pending mark is touched: a finished one stays finished.
 */
export async function releaseWebhookEvent(
  table: Table,
  event: { accountId: string; connector: ConnectorName; eventId: string },
  note: string,
): Promise<void> {
  await writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.webhookEvent(checkAccountId(event.accountId), checkConnector(event.connector), event.eventId)),
        UpdateExpression: 'SET claimedUntil = :zero, note = :note',
        ConditionExpression: '#state = :pending',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: toItem({ ':zero': 0, ':note': note.slice(0, 500), ':pending': 'pending' }),
      }),
    ),
  );
}

export async function getWebhookEventMark(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  eventId: string,
): Promise<WebhookEventMark | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: toItem(key.webhookEvent(checkAccountId(accountId), checkConnector(connector), eventId)),
      ConsistentRead: true,
    }),
  );
  // The schema drops the item's keys.
  return Item ? WebhookEventMark.parse(fromItem(Item)) : undefined;
}
