import type { AttributeValue, QueryCommandInput, WriteRequest, BatchWriteItemCommandOutput, BatchGetItemCommandOutput, KeysAndAttributes } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { BatchGetItemCommand, BatchWriteItemCommand, PutItemCommand, QueryCommand, type TableClient } from './table-client';
import { AccountId, ConnectorName } from '../connectors';

/** The one table and the client that reaches it. */
export type Table = { client: TableClient; tableName: string };

export type Item = Record<string, AttributeValue>;

export function toItem(value: object): Item {
  return marshall(value, { removeUndefinedValues: true });
}

export function fromItem(item: Item): Record<string, unknown> {
  return unmarshall(item);
}

/**
 * DynamoDB refused a request for the table's throughput (the SDK's own retries spent): nothing of it
 * was written, so sending it again is safe.
 */
export function isThrottled(error: unknown): boolean {
  return error instanceof Error && THROTTLING_ERRORS.has(error.name);
}
const THROTTLING_ERRORS = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/** The one DynamoDB error the store turns into an answer; every other error propagates. */
export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** Runs a conditional write; true if it was written, false if its condition did not hold. */
export async function writeIfCondition(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** All items of a query, following pages. For the small partitions of one account (connections, messages). */
/** Someone else wrote the item since it was read: read it again, reapply the change, retry. */
export class VersionConflictError extends Error {
  override readonly name = 'VersionConflictError';
}

/**
 * Optimistic concurrency: writes `item` if nobody wrote it since `version` was read (0: it must not
 * exist yet), storing version + 1. Returns the new version; throws VersionConflictError otherwise.
 */
export async function putVersioned(table: Table, item: Record<string, unknown> & { version: number }, describe: () => string): Promise<number> {
  const nextVersion = item.version + 1;
  const isNew = item.version === 0;
  const written = await writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...item, version: nextVersion }),
        ConditionExpression: isNew ? 'attribute_not_exists(pk)' : 'version = :read',
        ExpressionAttributeValues: isNew ? undefined : toItem({ ':read': item.version }),
      }),
    ),
  );
  if (!written) throw new VersionConflictError(`${describe()} changed since version ${item.version} was read`);
  return nextVersion;
}

export async function queryAll(
  table: Table,
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Item | undefined;
  do {
    const page = await table.client.send(
      new QueryCommand({ ...input, TableName: table.tableName, ExclusiveStartKey: startKey }),
    );
    for (const item of page.Items ?? []) items.push(fromItem(item));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** How many items a query matches, every page, with `Select: COUNT`: the items themselves are never read out. */
export async function countAll(table: Table, input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey' | 'Select' | 'ProjectionExpression'>): Promise<number> {
  let count = 0;
  let startKey: Item | undefined;
  do {
    const page = await table.client.send(new QueryCommand({ ...input, TableName: table.tableName, Select: 'COUNT', ExclusiveStartKey: startKey }));
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return count;
}

/**
 * Checks the ids that go into keys. An account id cannot contain `#`, so no value handed to a
 * store method can reach into another account's keys.
 */
export function checkAccountId(accountId: string): string {
  return AccountId.parse(accountId);
}

export function checkConnector(connector: string): ConnectorName {
  return ConnectorName.parse(connector);
}

/**
 * Writes (puts or deletes) 25 per BatchWriteItem, resending what DynamoDB leaves unprocessed (or
 * refuses whole for the table's throughput) with a short backoff; throws if some remain after 10
 * attempts.
 */
export async function batchWriteAll(
  table: Table,
  requests: readonly WriteRequest[],
  options: { concurrency?: number; beforeSend?: (requests: readonly WriteRequest[]) => Promise<void>; onRefused?: () => void } = {},
): Promise<void> {
  const batches: WriteRequest[][] = [];
  for (let start = 0; start < requests.length; start += 25) batches.push(requests.slice(start, start + 25));
  let next = 0;
  // `concurrency` batches in flight at once (default one after another).
  const worker = async () => {
    while (next < batches.length) {
      let pending: WriteRequest[] | undefined = batches[next++];
      for (let attempt = 0; pending && pending.length > 0; attempt += 1) {
        if (attempt >= 10) throw new Error(`DynamoDB left ${pending.length} write(s) unprocessed after ${attempt} attempts`);
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
        // A caller pacing its writes waits here, as each batch (or retry) leaves: the table counts them as they arrive.
        await options.beforeSend?.(pending);
        let response: BatchWriteItemCommandOutput;
        try {
          response = await table.client.send(new BatchWriteItemCommand({ RequestItems: { [table.tableName]: pending } }));
        } catch (error) {
          // Refused whole (the SDK's own retries spent): nothing was written; sent again after the backoff.
          if (!isThrottled(error)) throw error;
          options.onRefused?.();
          continue;
        }
        pending = response.UnprocessedItems?.[table.tableName];
        // Items left unprocessed, or attempts the SDK retried before this answer: the table was full.
        if ((pending?.length ?? 0) > 0 || (response.$metadata.attempts ?? 1) > 1) options.onRefused?.();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 1, batches.length)) }, worker));
}

/**
 * Reads items by key, 100 per BatchGetItem, asking again with a short backoff for the keys DynamoDB
 * leaves unprocessed under load; throws if some remain after 10 attempts. Missing items are absent.
 */
export async function batchGetAll(table: Table, keys: readonly Item[], read: Omit<KeysAndAttributes, 'Keys'> = {}): Promise<Item[]> {
  const items: Item[] = [];
  for (let start = 0; start < keys.length; start += 100) {
    let pending: Item[] | undefined = keys.slice(start, start + 100);
    for (let attempt = 0; pending && pending.length > 0; attempt += 1) {
      if (attempt >= 10) throw new Error(`DynamoDB left ${pending.length} key(s) unprocessed after ${attempt} attempts`);
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
      const response: BatchGetItemCommandOutput = await table.client.send(new BatchGetItemCommand({ RequestItems: { [table.tableName]: { ...read, Keys: pending } } }));
      items.push(...(response.Responses?.[table.tableName] ?? []));
      pending = response.UnprocessedKeys?.[table.tableName]?.Keys;
    }
  }
  return items;
}
