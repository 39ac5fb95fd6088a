import { QueryCommand, UpdateItemCommand } from './table-client';
import type { ConnectorName } from '../connectors';
import { key } from './table';
import { batchWriteAll, checkAccountId, checkConnector, countAll, fromItem, queryAll, toItem, type Table } from './table-access';

/**
 * Events a connection accepted and holds until its schedule sends them (the data connector's
 * Hourly and Daily frequencies). One partition per account and connector, sorted by acceptance
 * (`<accepted at ms>#<batch>#<index>`), so reading it in order replays the events as they came.
 * They stay until they are sent and deleted: a restart between acceptance and sending loses none.
 */

export interface HeldEvent {
  /** The item's sort key: its place in the order. */
  position: string;
  payload: Record<string, unknown>;
}

/**
 * A held event is kept 14 days at most (SQS's longest retention): a daily send retried for days
 * still finds it, and the events of an account that disconnected and never came back go away.
 */
export const HELD_EVENT_TTL_SECONDS = 14 * 24 * 60 * 60;

/** Holds events in the order given; `batch` makes keys of one acceptance unique. */
export async function holdEvents(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  events: readonly Record<string, unknown>[],
  acceptedAtMs: number,
  batch: string,
): Promise<void> {
  const at = String(Math.max(0, Math.floor(acceptedAtMs))).padStart(15, '0');
  const expiresAt = Math.floor(acceptedAtMs / 1000) + HELD_EVENT_TTL_SECONDS;
  const requests = events.map((payload, index) => ({
    PutRequest: { Item: toItem({ ...key.heldEvent(checkAccountId(accountId), checkConnector(connector), `${at}#${batch}#${String(index).padStart(5, '0')}`), payload, expiresAt }) },
  }));
  await batchWriteAll(table, requests);
}

/** The oldest held events, in acceptance order. */
export async function listHeldEvents(table: Table, accountId: string, connector: ConnectorName, limit: number): Promise<HeldEvent[]> {
  const { Items } = await table.client.send(
    new QueryCommand({
      TableName: table.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: toItem({ ':pk': key.heldEvent(checkAccountId(accountId), checkConnector(connector), '').pk }),
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((item) => {
    const value = fromItem(item) as { sk: string; payload: Record<string, unknown> };
    return { position: value.sk, payload: value.payload };
  });
}

/** Deletes held events that were sent (or handed on). */
export async function releaseHeldEvents(table: Table, accountId: string, connector: ConnectorName, positions: readonly string[]): Promise<void> {
  const pk = key.heldEvent(checkAccountId(accountId), checkConnector(connector), '').pk;
  await batchWriteAll(table, positions.map((sk) => ({ DeleteRequest: { Key: toItem({ pk, sk }) } })));
}

/** How many events are held (a count query: reads keys only). */
export async function countHeldEvents(table: Table, accountId: string, connector: ConnectorName): Promise<number> {
  return countAll(table, {
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: toItem({ ':pk': key.heldEvent(checkAccountId(accountId), checkConnector(connector), '').pk }),
  });
}

// ---- what happened to a connection's events, per hour ----

export interface DeliveryCounts {
  accepted?: number;
  held?: number;
  sent?: number;
  retried?: number;
  refused?: number;
  deadLettered?: number;
}
export type DeliveryHour = Required<DeliveryCounts> & { hour: string };

const COUNT_NAMES = ['accepted', 'held', 'sent', 'retried', 'refused', 'deadLettered'] as const;
/** Hourly counters are kept a week. */
const DELIVERY_COUNTS_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Adds to the hour's counters (one UpdateItem: ADD is atomic, so concurrent workers add up). */
export async function addDeliveryCounts(table: Table, accountId: string, connector: ConnectorName, atMs: number, counts: DeliveryCounts): Promise<void> {
  const present = COUNT_NAMES.filter((name) => (counts[name] ?? 0) > 0);
  if (present.length === 0) return;
  const hour = new Date(Math.floor(atMs / 3_600_000) * 3_600_000).toISOString();
  const values: Record<string, number> = { ':expiresAt': Math.floor(atMs / 1000) + DELIVERY_COUNTS_TTL_SECONDS };
  for (const name of present) values[`:${name}`] = counts[name] ?? 0;
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(key.deliveryHour(checkAccountId(accountId), checkConnector(connector), hour)),
      UpdateExpression: `ADD ${present.map((name) => `${name} :${name}`).join(', ')} SET expiresAt = :expiresAt, #hour = :hour`,
      ExpressionAttributeNames: { '#hour': 'hour' },
      ExpressionAttributeValues: toItem({ ...values, ':hour': hour }),
    }),
  );
}

/** The hours since `sinceMs`, oldest first. */
export async function listDeliveryCounts(table: Table, accountId: string, connector: ConnectorName, sinceMs: number): Promise<DeliveryHour[]> {
  const since = new Date(Math.floor(sinceMs / 3_600_000) * 3_600_000).toISOString();
  const first = key.deliveryHour(checkAccountId(accountId), checkConnector(connector), since);
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: toItem({ ':pk': first.pk, ':from': first.sk, ':to': key.deliveryHour(accountId, connector, '~').sk }),
    ConsistentRead: true,
  });
  return items.map((item) => ({
    hour: String(item.hour),
    ...(Object.fromEntries(COUNT_NAMES.map((name) => [name, Number(item[name] ?? 0)])) as Required<DeliveryCounts>),
  }));
}
