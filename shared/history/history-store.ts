import { GetItemCommand, QueryCommand, UpdateItemCommand } from '../store/table-client';
import type { ConnectorName } from '../connectors';
import { key } from '../store/table';
import { checkAccountId, checkConnector, fromItem, queryAll, toItem, type Table } from '../store/table-access';
import { FIRST_AGENT_BUCKETS, hourOf, type ConversationTally } from './history-decisions';
import type { ConversationDay, DeliveryHour, RefusalReason, SyncRun } from './history-schemas';
import { HISTORY_DAYS, REFUSAL_REASONS } from './history-terms';

/**
 * The schemas that check what a read finds, loaded by the first read: every function writes
 * history, only the API reads it, and building them costs every other function's cold start.
 */
const schemas = () => import('./history-schemas');

/**
 * The history items: what happened over time, kept with a TTL. Each lives in a partition of its
 * own under the account (`ACCOUNT#a#HISTORY#...`), so counting never crowds the account's main
 * partition, and the webhook receivers' narrow grant can name their partition alone
 * (lib/storage.ts). Writes are counters (ADD: concurrent writers add up) or one item per run.
 * Functions over the table, as the store's are (shared/store/store.ts): a function keeps the ones it
 * calls (a receiver counts deliveries, the API reads).
 */

const DAY_SECONDS = 86_400;

export const historyKey = {
  /** One run of one data object; sorted by start, so a query reads newest first. */
  syncRun: (accountId: string, connector: string, startedAt: string, object: string) => ({
    pk: `ACCOUNT#${accountId}#HISTORY#SYNC#${connector}`,
    sk: `${startedAt}#${object}`,
  }),
  /** One hour's webhook delivery counters of a connector. */
  deliveryHour: (accountId: string, connector: string, hour: string) => ({ pk: `ACCOUNT#${accountId}#HISTORY#WEBHOOKS#${connector}`, sk: hour }),
  /** One day's conversation counters. */
  conversationDay: (accountId: string, day: string) => ({ pk: `ACCOUNT#${accountId}#HISTORY#CONVERSATIONS`, sk: day }),
} as const;

/** What the end of a run's invocation adds to its history item. */
export interface SyncRunWrite {
  accountId: string;
  connector: ConnectorName;
  object: string;
  startedAt: string;
  status: SyncRun['status'];
  at: Date;
  mode?: 'full' | 'incremental';
  trigger?: string;
  /** This invocation's requests, retries and pages (added to the run's). */
  added: { requests: number; retries: number; pages: number };
  /** The run's record counts so far (the checkpoint's; set, not added). */
  counts?: { created: number; updated: number; deleted: number };
  error?: { reason: string; remedy?: string };
}

/** One UpdateItem per invocation of a run (a run is usually one invocation). */
export async function recordSyncRun(table: Table, run: SyncRunWrite): Promise<void> {
  const finishedAt = run.at.toISOString();
  const set: Record<string, unknown> = {
    connector: run.connector,
    object: run.object,
    startedAt: run.startedAt,
    status: run.status,
    expiresAt: Math.floor(Date.parse(run.startedAt) / 1000) + HISTORY_DAYS.syncRuns * DAY_SECONDS,
    ...(run.status === 'running' ? {} : { finishedAt, durationMs: Math.max(0, run.at.getTime() - Date.parse(run.startedAt)) }),
    ...(run.mode ? { mode: run.mode } : {}),
    ...(run.trigger ? { trigger: run.trigger } : {}),
    ...(run.counts ?? {}),
    ...(run.error ? { error: run.error } : {}),
  };
  const add: Record<string, number> = { ...run.added, failures: run.status === 'failed' ? 1 : 0 };
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(historyKey.syncRun(checkAccountId(run.accountId), checkConnector(run.connector), run.startedAt, run.object)),
      ...setAndAdd(set, add),
    }),
  );
}

/** A page of a connection's runs since `sinceMs`, newest first. */
export async function listSyncRuns(table: Table, 
  accountId: string,
  connector: ConnectorName,
  options: { limit: number; sinceMs: number; startKey?: string; object?: string },
): Promise<{ runs: SyncRun[]; lastKey?: string }> {
  const pk = historyKey.syncRun(checkAccountId(accountId), checkConnector(connector), '', '').pk;
  const runs: SyncRun[] = [];
  const { SyncRun } = await schemas();
  let startKey = options.startKey;
  // A filter by object may leave a page short: read on until the page is full or the runs end.
  do {
    const { Items, LastEvaluatedKey } = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'pk = :pk AND sk > :since',
        ExpressionAttributeValues: toItem({ ':pk': pk, ':since': new Date(options.sinceMs).toISOString(), ...(options.object ? { ':object': options.object } : {}) }),
        ...(options.object ? { FilterExpression: '#object = :object', ExpressionAttributeNames: { '#object': 'object' } } : {}),
        ScanIndexForward: false,
        Limit: options.limit - runs.length,
        ...(startKey ? { ExclusiveStartKey: toItem({ pk, sk: startKey }) } : {}),
      }),
    );
    for (const item of Items ?? []) runs.push(SyncRun.parse(withDefaults(fromItem(item))));
    startKey = LastEvaluatedKey ? String(fromItem(LastEvaluatedKey).sk) : undefined;
  } while (startKey && runs.length < options.limit);
  return { runs, ...(startKey ? { lastKey: startKey } : {}) };
}

/** One UpdateItem: adds a delivery outcome to its hour's counters (a refusal also keeps its time). */
export async function countDelivery(table: Table, 
  accountId: string,
  connector: ConnectorName,
  atMs: number,
  outcome: { verified?: number; duplicates?: number; refused?: RefusalReason },
): Promise<void> {
  const hour = hourOf(atMs);
  const add: Record<string, number> = {};
  if (outcome.verified) add.verified = outcome.verified;
  if (outcome.duplicates) add.duplicates = outcome.duplicates;
  if (outcome.refused) add[`refused_${outcome.refused}`] = 1;
  if (Object.keys(add).length === 0) return;
  const set: Record<string, unknown> = { hour, expiresAt: Math.floor(atMs / 1000) + HISTORY_DAYS.deliveries * DAY_SECONDS };
  if (outcome.refused) set[`last_${outcome.refused}`] = new Date(atMs).toISOString();
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(historyKey.deliveryHour(checkAccountId(accountId), checkConnector(connector), hour)),
      ...setAndAdd(set, add),
    }),
  );
}

/** The hours since `sinceMs` that had deliveries, oldest first, each with its refusals' latest times. */
export async function listDeliveryHours(table: Table, accountId: string, connector: ConnectorName, sinceMs: number): Promise<Array<DeliveryHour & { lastRefusedAt: Partial<Record<RefusalReason, string>> }>> {
  const first = historyKey.deliveryHour(checkAccountId(accountId), checkConnector(connector), hourOf(sinceMs));
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND sk >= :from',
    ExpressionAttributeValues: toItem({ ':pk': first.pk, ':from': first.sk }),
  });
  const { DeliveryHour } = await schemas();
  return items.map((item) => ({
    ...DeliveryHour.parse({
      hour: item.hour,
      verified: Number(item.verified ?? 0),
      duplicates: Number(item.duplicates ?? 0),
      refused: Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, Number(item[`refused_${reason}`] ?? 0)])),
    }),
    lastRefusedAt: Object.fromEntries(REFUSAL_REASONS.filter((reason) => typeof item[`last_${reason}`] === 'string').map((reason) => [reason, String(item[`last_${reason}`])])),
  }));
}

/** One UpdateItem per account and day: adds a batch's lifecycle counts and first-agent-message times (histogram buckets). */
export async function countConversations(table: Table, tally: ConversationTally, firstAgentBuckets: readonly number[] = []): Promise<void> {
  const add: Record<string, number> = {};
  for (const field of ['started', 'handedOff', 'ended', 'expired'] as const) if (tally[field]) add[field] = tally[field];
  for (const bucket of firstAgentBuckets) add[`ttfa_${bucket}`] = (add[`ttfa_${bucket}`] ?? 0) + 1;
  if (firstAgentBuckets.length) add.firstAgentMessages = firstAgentBuckets.length;
  if (Object.keys(add).length === 0) return;
  const expiresAt = Math.floor(Date.parse(tally.day) / 1000) + (HISTORY_DAYS.conversations + 1) * DAY_SECONDS;
  await table.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: toItem(historyKey.conversationDay(checkAccountId(tally.accountId), tally.day)),
      ...setAndAdd({ day: tally.day, expiresAt }, add),
    }),
  );
}

/** The days from `firstDay` that had conversations, oldest first, each with its histogram. */
export async function listConversationDays(table: Table, accountId: string, firstDay: string): Promise<Array<{ day: ConversationDay; histogram: number[] }>> {
  const first = historyKey.conversationDay(checkAccountId(accountId), firstDay);
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND sk >= :from',
    ExpressionAttributeValues: toItem({ ':pk': first.pk, ':from': first.sk }),
  });
  const { ConversationDay } = await schemas();
  return items.map((item) => ({
    day: ConversationDay.parse({
      day: item.day,
      ...Object.fromEntries((['started', 'handedOff', 'ended', 'expired', 'firstAgentMessages'] as const).map((field) => [field, Number(item[field] ?? 0)])),
    }),
    histogram: Array.from({ length: FIRST_AGENT_BUCKETS.length + 1 }, (_, i) => Number(item[`ttfa_${i}`] ?? 0)),
  }));
}

/** The account's live conversations, as the concurrent-conversation cap counts them. */
export async function liveConversations(table: Table, accountId: string): Promise<number> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: toItem(key.liveCount(checkAccountId(accountId))), ProjectionExpression: 'live' }));
  return Item ? Math.max(0, Number(fromItem(Item).live ?? 0)) : 0;
}

/** One UpdateItem's expression: `set` these attributes, `add` to these counters (ADD: concurrent writers add up). */
function setAndAdd(set: Record<string, unknown>, add: Record<string, number>) {
  const names = [...Object.keys(set), ...Object.keys(add)];
  return {
    UpdateExpression: `SET ${Object.keys(set).map((name) => `#${name} = :${name}`).join(', ')} ADD ${Object.keys(add).map((name) => `#${name} :${name}`).join(', ')}`,
    ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
    ExpressionAttributeValues: toItem(Object.fromEntries([...Object.entries(set), ...Object.entries(add)].map(([name, value]) => [`:${name}`, value]))),
  };
}

/** Counters that were never added to are absent from the item. */
function withDefaults(item: Record<string, unknown>): Record<string, unknown> {
  return { requests: 0, retries: 0, pages: 0, created: 0, updated: 0, deleted: 0, failures: 0, ...item };
}

