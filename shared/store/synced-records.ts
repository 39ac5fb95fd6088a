import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from './table-client';
import type { ConnectorName } from '../connectors';
import { DataObjectName, RecordWrite, SyncedRecord } from './items';
import { mergeShardPages, perShardLimit, RECORD_SHARDS, shardOf, type RecordPlace } from './record-layout';
import { indexKey, key } from './table';
import {
  checkAccountId,
  checkConnector,
  fromItem,
  isConditionalCheckFailed,
  isThrottled,
  queryAll,
  toItem,
  writeIfCondition,
  type Table,
  batchGetAll,
  batchWriteAll,
} from './table-access';

export type RecordWriteOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Waits until these records may be sent (a sync paces its writes into each shard key): awaited
 * right before each write request leaves, retries included, so the pace holds where the table counts.
 */
export type RecordPace = (records: readonly RecordWrite[]) => Promise<void>;

/** How a sync's record writes are paced: `pace` before each request leaves; `onRefused` hears of DynamoDB refusing some for throughput. */
export type PacedWrites = { pace?: RecordPace; onRefused?: () => void };

export type { RecordPlace } from './record-layout';

/**
 * Writes a record only if it is new, its hash changed, or it had been marked deleted. Read-free:
 * the condition does the comparison, and a failed condition means "unchanged". (DynamoDB still
 * bills a failed conditional write one write unit, but nothing is rewritten: no index update, no
 * stream record.)
 *
 * If the record carries a `sourceVersion`, a stored copy with a higher one is kept too (a webhook
 * already applied newer data), and that also reports 'unchanged'.
 */
export async function putRecordIfChanged(table: Table, place: RecordPlace, record: RecordWrite, onRefused?: () => void): Promise<RecordWriteOutcome> {
  const changed = '#hash <> :hash OR attribute_exists(deletedAt)';
  // DynamoDB rejects redundant parentheses, so the two shapes are written out.
  const condition =
    record.sourceVersion === undefined
      ? `attribute_not_exists(pk) OR ${changed}`
      : `attribute_not_exists(pk) OR ((${changed}) AND (attribute_not_exists(sourceVersion) OR sourceVersion <= :version))`;
  const outcome = await conditionalRecordPut(table, place, record, condition, {
    values: { ':hash': record.hash, ...(record.sourceVersion === undefined ? {} : { ':version': record.sourceVersion }) },
    names: { '#hash': 'hash' },
    onRefused,
  });
  return outcome ?? 'unchanged';
}

/**
 * For the webhook worker, where events arrive out of order: writes only if the stored copy is
 * older (or has no source version). 'stale' means a newer version is already stored.
 */
export async function putRecordIfNewer(
  table: Table,
  place: RecordPlace,
  record: RecordWrite & { sourceVersion: number },
): Promise<'created' | 'updated' | 'stale'> {
  const outcome = await conditionalRecordPut(table, place, record, 'attribute_not_exists(pk) OR attribute_not_exists(sourceVersion) OR sourceVersion < :version', {
    values: { ':version': record.sourceVersion },
  });
  return outcome ?? 'stale';
}

/**
 * Many records of one data object, as conditional puts a few at a time (conditional writes cannot
 * go in a BatchWriteItem). Outcomes are in the order of `records`.
 */
export async function putRecordsIfChanged(
  table: Table,
  place: RecordPlace,
  records: readonly RecordWrite[],
  options: { concurrency?: number; knownNew?: ReadonlySet<string> } & PacedWrites = {},
): Promise<RecordWriteOutcome[]> {
  const outcomes: RecordWriteOutcome[] = new Array<RecordWriteOutcome>(records.length);
  const concurrency = options.concurrency ?? 10;
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const index = next++;
      const record = records[index]!;
      await options.pace?.([record]);
      outcomes[index] = options.knownNew?.has(record.id)
        ? await putNewRecord(table, place, record, options.onRefused)
        : await putRecordIfChanged(table, place, record, options.onRefused);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, records.length) }, worker));
  return outcomes;
}

/**
 * Deletes up to `limit` records of one data object (a disconnected connection's purge), 25 per
 * BatchWriteItem. Returns how many it deleted; fewer than `limit` means the object is empty. The
 * connection is gone by then, and with it its layout: every key its records may be under is
 * emptied (the single legacy key and each shard's), one after another.
 */
export async function deleteRecords(table: Table, accountId: string, connector: ConnectorName, object: string, limit = 500): Promise<number> {
  const partitions = [...new Set([...recordPartitions({ accountId, connector, object, shards: 1 }), ...recordPartitions({ accountId, connector, object, shards: RECORD_SHARDS })])];
  const keys: Array<Record<string, AttributeValue>> = [];
  for (const pk of partitions) {
    if (keys.length >= limit) break;
    const page = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: toItem({ ':pk': pk }),
        ProjectionExpression: 'pk, sk',
        Limit: limit - keys.length,
      }),
    );
    keys.push(...(page.Items ?? []).map((item) => ({ pk: item.pk!, sk: item.sk! })));
  }
  await batchWriteAll(table, keys.map((Key) => ({ DeleteRequest: { Key } })));
  return keys.length;
}

/**
 * Whether any record of these data objects is still stored under the single key of connections
 * stored before sharding (a connection disconnected, its purge not done): a new connection of the
 * connector then keeps that layout (shared/store/record-layout.ts `newConnectionShards`).
 */
export async function hasLegacyRecords(table: Table, accountId: string, connector: ConnectorName, objects: readonly string[]): Promise<boolean> {
  const found = await Promise.all(
    objects.map(async (object) => {
      const page = await table.client.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: toItem({ ':pk': recordPartitions({ accountId, connector, object, shards: 1 })[0]! }),
          ProjectionExpression: 'pk',
          Limit: 1,
        }),
      );
      return (page.Items ?? []).length > 0;
    }),
  );
  return found.includes(true);
}

/**
 * A record the caller just saw absent: the plain "must not exist" condition (cheaper to evaluate);
 * if it appeared meanwhile (a webhook), the full comparison decides.
 */
async function putNewRecord(table: Table, place: RecordPlace, record: RecordWrite, onRefused?: () => void): Promise<RecordWriteOutcome> {
  const outcome = await conditionalRecordPut(table, place, record, 'attribute_not_exists(pk)', { onRefused });
  return outcome ?? putRecordIfChanged(table, place, record, onRefused);
}

export async function getRecord(table: Table, place: RecordPlace, id: string): Promise<SyncedRecord | undefined> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: recordKey(place, id), ConsistentRead: true }));
  return Item ? SyncedRecord.parse(fromItem(Item)) : undefined;
}

export type RecordPage = { records: SyncedRecord[]; nextStartKey?: string };

/**
 * One page of a data object's records, in id order. `nextStartKey` (absent on the last page) goes
 * back as `startKey`. It is only a record id: the partition is rebuilt from `accountId`, so a
 * start key can never lead into another account. Deleted records are left out unless asked for
 * (a page may then hold fewer than `limit` records and still not be the last).
 */
export async function listRecords(
  table: Table,
  place: RecordPlace,
  options: { limit?: number; startKey?: string; includeDeleted?: boolean } = {},
): Promise<RecordPage> {
  const page = await queryRecordPartition(table, place, options, options.includeDeleted ? {} : { FilterExpression: 'attribute_not_exists(deletedAt)' });
  return {
    records: page.items.map((item) => SyncedRecord.parse(fromItem(item))),
    ...(page.nextStartKey === undefined ? {} : { nextStartKey: page.nextStartKey }),
  };
}

/**
 * One page of a data object's live record ids, in id order (deleted ones left out), the same pages
 * as `listRecords` without the records: only the key comes back, so a caller that needs ids (the
 * deletion sweep) neither reads nor decodes bodies. `nextStartKey` as in `listRecords`.
 */
export async function listRecordIds(
  table: Table,
  place: RecordPlace,
  options: { limit?: number; startKey?: string } = {},
): Promise<{ ids: string[]; nextStartKey?: string }> {
  const page = await queryRecordPartition(table, place, options, {
    FilterExpression: 'attribute_not_exists(deletedAt)',
    ProjectionExpression: 'sk',
  });
  return {
    ids: page.items.flatMap((item) => (item.sk?.S === undefined ? [] : [item.sk.S])),
    ...(page.nextStartKey === undefined ? {} : { nextStartKey: page.nextStartKey }),
  };
}

/**
 * One page of what a sync compares, for a whole data object (tombstones included), in id order:
 * a full run that is its object's only writer reads it once and compares its pages in memory
 * instead of one BatchGetItem each (shared/sync/deletion-sweep.ts). A Query is billed by the
 * items it reads, so the three attributes cost no more than the ids. `nextStartKey` as in `listRecords`.
 * With `shard`, that shard key's records alone: a reader that wants them all, in any order, pages
 * each shard on its own, side by side, with nothing merged or read twice.
 */
export async function listStoredVersions(
  table: Table,
  place: RecordPlace,
  options: { limit?: number; startKey?: string; shard?: number } = {},
): Promise<{ versions: Array<[string, StoredVersion]>; nextStartKey?: string }> {
  const page = await queryRecordPartition(table, place, options, {
    ProjectionExpression: STORED_VERSION_PROJECTION,
    ExpressionAttributeNames: { '#hash': 'hash' },
  });
  return {
    versions: page.items.map((item) => storedVersionOf(item)),
    ...(page.nextStartKey === undefined ? {} : { nextStartKey: page.nextStartKey }),
  };
}

/**
 * One consistent page of a data object's records after `startKey` (an id), in id order, over all
 * its shards: one Query per shard for about its share of the page, merged (mergeShardPages), so a
 * page reads about `limit` items whatever the shard count.
 */
async function queryRecordPartition(
  table: Table,
  place: RecordPlace,
  options: { limit?: number; startKey?: string; shard?: number },
  read: { FilterExpression?: string; ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> },
): Promise<{ items: Array<Record<string, AttributeValue>>; nextStartKey?: string }> {
  const limit = Math.min(Math.max(options.limit ?? 100, 1), 1000);
  // One shard alone (a reader that wants every record, in no order): that key's page, nothing merged.
  const partitions = recordPartitions(place);
  const shardOnly = options.shard === undefined ? undefined : partitions[options.shard];
  if (options.shard !== undefined && shardOnly === undefined) throw new Error(`shard ${options.shard} is not one of the ${partitions.length} of ${place.object}`);
  const pages = await Promise.all(
    (shardOnly === undefined ? partitions : [shardOnly]).map(async (pk) => {
      const page = await table.client.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: options.startKey === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
          ...read,
          ExpressionAttributeValues: toItem({ ':pk': pk, ...(options.startKey === undefined ? {} : { ':after': options.startKey }) }),
          Limit: shardOnly === undefined ? perShardLimit(limit, place.shards) : limit,
          ConsistentRead: true,
        }),
      );
      const cutAfter = page.LastEvaluatedKey?.sk?.S;
      return { items: page.Items ?? [], ...(cutAfter === undefined ? {} : { cutAfter }) };
    }),
  );
  return mergeShardPages(pages, limit, (item) => item.sk?.S ?? '');
}

/** Every record of the account with this email address (any connector, any object), through gsi1. */
export async function findRecordsByEmail(
  table: Table,
  accountId: string,
  email: string,
  options: { includeDeleted?: boolean } = {},
): Promise<SyncedRecord[]> {
  const items = await queryAll(table, {
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :email',
    FilterExpression: options.includeDeleted ? undefined : 'attribute_not_exists(deletedAt)',
    ExpressionAttributeValues: toItem({ ':email': indexKey.emailLookup(checkAccountId(accountId), email).gsi1pk }),
  });
  return items.map((item) => SyncedRecord.parse(item));
}

/** A customer's records on one connector (optionally of one object), through gsi1. */
export async function findRecordsByCustomer(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  customerId: string,
  options: { object?: string; includeDeleted?: boolean } = {},
): Promise<SyncedRecord[]> {
  const items = await queryAll(table, {
    IndexName: 'gsi1',
    KeyConditionExpression: options.object ? 'gsi1pk = :customer AND begins_with(gsi1sk, :object)' : 'gsi1pk = :customer',
    FilterExpression: options.includeDeleted ? undefined : 'attribute_not_exists(deletedAt)',
    ExpressionAttributeValues: toItem({
      ':customer': indexKey.customerLookup(checkAccountId(accountId), checkConnector(connector), customerId).gsi1pk,
      ...(options.object ? { ':object': `${DataObjectName.parse(options.object)}#` } : {}),
    }),
  });
  return items.map((item) => SyncedRecord.parse(item));
}

/** What a sync compares before writing: the stored hash and version of each record, if stored. */
export type StoredVersion = { hash: string; sourceVersion?: number; deleted: boolean };

/**
 * Reads the stored hash of many records (BatchGetItem, 100 keys a call, only three attributes),
 * so a sync writes only what changed. An eventually consistent read costs a quarter of a failed
 * conditional write, and an unchanged record then costs no write at all.
 */
export async function getStoredVersions(table: Table, place: RecordPlace, ids: readonly string[]): Promise<Map<string, StoredVersion>> {
  const unique = [...new Set(ids)];
  const items = await batchGetAll(
    table,
    unique.map((id) => recordKey(place, id)),
    { ProjectionExpression: STORED_VERSION_PROJECTION, ExpressionAttributeNames: { '#hash': 'hash' } },
  );
  return new Map(items.map((item) => storedVersionOf(item)));
}

/** The attributes a sync compares (`#hash` names `hash`). */
const STORED_VERSION_PROJECTION = 'sk, #hash, sourceVersion, deletedAt';

/** A record item's id and what a sync compares of it (read with STORED_VERSION_PROJECTION). */
function storedVersionOf(item: Record<string, AttributeValue>): [string, StoredVersion] {
  const stored = fromItem(item) as { sk: string; hash: string; sourceVersion?: number; deletedAt?: string };
  return [stored.sk, { hash: stored.hash, ...(stored.sourceVersion === undefined ? {} : { sourceVersion: stored.sourceVersion }), deleted: stored.deletedAt !== undefined }];
}

/**
 * Marks a record deleted on the platform. The item stays as a tombstone so an older event cannot
 * bring it back; with `sourceVersion`, an older deletion does not overwrite newer data.
 * False if there is no such record, or a newer version is stored.
 */
export async function markRecordDeleted(
  table: Table,
  place: RecordPlace,
  id: string,
  deletion: { deletedAt: Date; sourceVersion?: number; syncedBefore?: Date },
): Promise<boolean> {
  const versioned = deletion.sourceVersion !== undefined;
  // The deletion sweep: a record written since the run started (a webhook) was not missing.
  const since = deletion.syncedBefore ? ' AND (attribute_not_exists(syncedAt) OR syncedAt < :before)' : '';
  return writeIfCondition(() =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: recordKey(place, id),
        UpdateExpression: versioned ? 'SET deletedAt = :at, sourceVersion = :version' : 'SET deletedAt = :at',
        ConditionExpression:
          (versioned ? 'attribute_exists(pk) AND (attribute_not_exists(sourceVersion) OR sourceVersion <= :version)' : 'attribute_exists(pk)') + since,
        ExpressionAttributeValues: toItem({
          ':at': deletion.deletedAt.toISOString(),
          ...(versioned ? { ':version': deletion.sourceVersion } : {}),
          ...(deletion.syncedBefore ? { ':before': deletion.syncedBefore.toISOString() } : {}),
        }),
      }),
    ),
  );
}

/** A record's key: in its shard (chosen from its id), or the single key of an unsharded connection. */
function recordKey(place: RecordPlace, id: string) {
  return toItem(
    key.record(checkAccountId(place.accountId), checkConnector(place.connector), DataObjectName.parse(place.object), id, shardKeyOf(place, id)),
  );
}

/** Which shard suffix a record's key takes: none with one shard (the layout before sharding). */
function shardKeyOf(place: RecordPlace, id: string): number | undefined {
  return place.shards > 1 ? shardOf(id, place.shards) : undefined;
}

/** The partition keys holding every record of one data object of one connection: one per shard. */
function recordPartitions(place: RecordPlace): string[] {
  const accountId = checkAccountId(place.accountId);
  const connector = checkConnector(place.connector);
  const object = DataObjectName.parse(place.object);
  if (place.shards <= 1) return [key.record(accountId, connector, object, '').pk];
  return Array.from({ length: place.shards }, (_, shard) => key.record(accountId, connector, object, '', shard).pk);
}

/** A record as its item: keys, its one index entry, and the record. */
function recordItem(place: RecordPlace, record: RecordWrite): Record<string, AttributeValue> {
  const checked = RecordWrite.parse(record);
  const stored: SyncedRecord = { accountId: place.accountId, connector: checkConnector(place.connector), object: place.object, ...checked };
  // A record has one index entry: customers by email, everything else by its customer.
  const index =
    checked.email !== undefined && checked.email.trim() !== ''
      ? indexKey.recordByEmail(place.accountId, checked.email, place.connector, place.object, checked.id)
      : checked.customerId
        ? indexKey.recordByCustomer(place.accountId, place.connector, checked.customerId, place.object, checked.id)
        : {};
  return { ...recordKey(place, checked.id), ...toItem({ ...index, ...stored }) };
}

/**
 * Writes records as they are, 25 per BatchWriteItem (unprocessed items are sent again with
 * backoff). Unconditional: only for a writer that knows nobody else writes these records meanwhile
 * and has compared them with what is stored (the sync engine, one run per data object, when no
 * webhooks apply; see shared/sync/page-writes.ts). Everything else uses the conditional puts.
 */
export async function putRecordsBatch(
  table: Table,
  place: RecordPlace,
  records: readonly RecordWrite[],
  options: { concurrency?: number } & PacedWrites = {},
): Promise<void> {
  const { pace } = options;
  const byId = new Map(records.map((record) => [record.id, record]));
  await batchWriteAll(
    table,
    records.map((record) => ({ PutRequest: { Item: recordItem(place, record) } })),
    {
      concurrency: options.concurrency ?? 4,
      ...(options.onRefused ? { onRefused: options.onRefused } : {}),
      ...(pace ? { beforeSend: (requests) => pace(requests.flatMap((request) => byId.get(request.PutRequest?.Item?.sk?.S ?? '') ?? [])) } : {}),
    },
  );
}

/**
 * Puts the whole record under `condition`; the outcome, or undefined when the condition failed.
 * `onRefused` hears of DynamoDB refusing it for throughput (the SDK sent it again, or gave up).
 */
async function conditionalRecordPut(
  table: Table,
  place: RecordPlace,
  record: RecordWrite,
  condition: string,
  { values, names, onRefused }: { values?: Record<string, unknown>; names?: Record<string, string>; onRefused?: (() => void) | undefined } = {},
): Promise<'created' | 'updated' | undefined> {
  try {
    const { Attributes, $metadata } = await table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: recordItem(place, record),
        ConditionExpression: condition,
        ExpressionAttributeValues: values ? toItem(values) : undefined,
        ExpressionAttributeNames: names,
        // The old item tells created from updated without a read; it is dropped right away.
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (($metadata.attempts ?? 1) > 1) onRefused?.();
    return Attributes ? 'updated' : 'created';
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    if (isThrottled(error)) onRefused?.();
    throw error;
  }
}
