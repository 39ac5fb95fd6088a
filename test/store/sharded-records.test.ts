import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import type { RecordWrite } from '../../shared/store/items';
import { compareIds, RECORD_SHARDS, shardOf, type RecordPlace } from '../../shared/store/record-layout';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { localDynamoClient, useTable } from '../support/dynamo';
import * as store from '../../shared/store/store';

const db = useTable();

function record(id: string, fields: Partial<RecordWrite> = {}): RecordWrite {
  const body = { id, name: `Record ${id}` };
  return { id, hash: `h-${id}`, body, email: `${id}@example.com`, ...fields };
}

const sharded = (accountId: string, object = 'customers'): RecordPlace => ({ accountId, connector: 'payment', object, shards: RECORD_SHARDS });
const legacy = (accountId: string, object = 'customers'): RecordPlace => ({ accountId, connector: 'payment', object, shards: 1 });

/** The items under one partition key, read straight from the table. */
async function itemsUnder(pk: string): Promise<string[]> {
  const { Items } = await db.dynamo.client.send(
    new QueryCommand({ TableName: db.dynamo.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: pk } }, ConsistentRead: true }),
  );
  return (Items ?? []).map((item) => item.sk!.S!);
}

/** Every page of a listing, at page sizes drawn from `sizes` in turn. */
async function pageThrough<T>(read: (options: { limit: number; startKey?: string }) => Promise<{ items: T[]; nextStartKey?: string }>, sizes: number[]): Promise<T[]> {
  const all: T[] = [];
  let startKey: string | undefined;
  let page = 0;
  do {
    const answer = await read({ limit: sizes[page++ % sizes.length]!, ...(startKey ? { startKey } : {}) });
    expect(answer.items.length).toBeLessThanOrEqual(sizes[(page - 1) % sizes.length]!);
    all.push(...answer.items);
    startKey = answer.nextStartKey;
  } while (startKey);
  return all;
}

describe('sharded synced records (dynalite)', () => {
  it('spreads a data object over its shard keys, each record in the shard its id hashes to', async () => {
    const place = sharded('acct-sh1');
    const ids = Array.from({ length: 240 }, (_, i) => `cus_${(i * 7919).toString(36)}`);
    await store.putRecordsBatch(db.table, place, ids.map((id) => record(id)));
    const perShard = await Promise.all(Array.from({ length: RECORD_SHARDS }, (_, shard) => itemsUnder(`ACCOUNT#acct-sh1#payment#customers#${shard}`)));
    expect(perShard.flat().sort()).toEqual([...ids].sort());
    perShard.forEach((inShard, shard) => {
      expect(inShard.length).toBeGreaterThan(10);
      for (const id of inShard) expect(shardOf(id, RECORD_SHARDS)).toBe(shard);
    });
    // Nothing under the single key of the layout before sharding.
    expect(await itemsUnder('ACCOUNT#acct-sh1#payment#customers')).toEqual([]);
  });

  it('lists every shard merged in id order, deleted ones left out but for the stored versions, at any page size', async () => {
    const place = sharded('acct-sh2', 'invoices');
    const ids = Array.from({ length: 530 }, (_, i) => `in_${((i * 104_729) % 99_991).toString(36).padStart(5, '0')}`);
    await store.putRecordsBatch(db.table, place, ids.map((id) => record(id)));
    const deleted = ids.filter((_, i) => i % 9 === 0);
    for (const id of deleted) await store.markRecordDeleted(db.table, place, id, { deletedAt: new Date() });
    const live = ids.filter((id) => !deleted.includes(id)).sort(compareIds);

    const records = await pageThrough(async (options) => {
      const page = await store.listRecords(db.table, place, options);
      return { items: page.records.map((stored) => stored.id), ...(page.nextStartKey ? { nextStartKey: page.nextStartKey } : {}) };
    }, [7, 100, 33, 1]);
    expect(records).toEqual(live);
    const recordIds = await pageThrough(async (options) => {
      const page = await store.listRecordIds(db.table, place, options);
      return { items: page.ids, ...(page.nextStartKey ? { nextStartKey: page.nextStartKey } : {}) };
    }, [1000, 64]);
    expect(recordIds).toEqual(live);
    const versions = await pageThrough(async (options) => {
      const page = await store.listStoredVersions(db.table, place, options);
      return { items: page.versions, ...(page.nextStartKey ? { nextStartKey: page.nextStartKey } : {}) };
    }, [250]);
    expect(versions.map(([id]) => id)).toEqual([...ids].sort(compareIds));
    expect(versions.filter(([, version]) => version.deleted).length).toBe(deleted.length);
  });

  it('lists one shard alone when asked: every record in exactly one shard\'s listing, each in its own shard', async () => {
    const place = sharded('acct-sh-one');
    const ids = Array.from({ length: 600 }, (_, i) => `sub_${String(i).padStart(4, '0')}`);
    await store.putRecordsBatch(db.table, place, ids.map((id) => record(id)));
    const listed: string[] = [];
    for (let shard = 0; shard < RECORD_SHARDS; shard += 1) {
      const inShard = await pageThrough(async (options) => {
        const page = await store.listStoredVersions(db.table, place, { ...options, shard });
        return { items: page.versions, ...(page.nextStartKey ? { nextStartKey: page.nextStartKey } : {}) };
      }, [40]);
      for (const [id] of inShard) expect(shardOf(id, RECORD_SHARDS)).toBe(shard);
      listed.push(...inShard.map(([id]) => id));
    }
    expect(listed.sort()).toEqual(ids);
    await expect(store.listStoredVersions(db.table, place, { shard: RECORD_SHARDS })).rejects.toThrow(/shard 8/);
  });

  it('reads about a page of items a page, not a page per shard', async () => {
    const place = sharded('acct-sh3');
    await store.putRecordsBatch(db.table, place, Array.from({ length: 1000 }, (_, i) => record(`cus_${String(i).padStart(4, '0')}`)));
    const client = localDynamoClient(db.dynamo.endpoint);
    let scanned = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        scanned += (result.output as { ScannedCount?: number }).ScannedCount ?? 0;
        return result;
      },
      { step: 'initialize', name: 'scanned' },
    );
    const counted = { client: sdkTableClient(client), tableName: db.dynamo.tableName };
    const listed = await pageThrough(async (options) => {
      const page = await store.listRecordIds(counted, place, options);
      return { items: page.ids, ...(page.nextStartKey ? { nextStartKey: page.nextStartKey } : {}) };
    }, [100]);
    expect(listed.length).toBe(1000);
    // Each page asks a shard for its share and a margin: what sorts after the page is read again next time.
    expect(scanned).toBeLessThan(1000 * 1.8);
    client.destroy();
  });

  it('addresses one record in its shard: reads, conditional writes and deletions', async () => {
    const place = sharded('acct-sh4');
    expect(await store.putRecordIfChanged(db.table, place, record('cus_a'))).toBe('created');
    expect(await store.putRecordIfChanged(db.table, place, record('cus_a'))).toBe('unchanged');
    expect(await store.putRecordIfNewer(db.table, place, { ...record('cus_b'), sourceVersion: 3 })).toBe('created');
    expect(await store.putRecordIfNewer(db.table, place, { ...record('cus_b'), sourceVersion: 2 })).toBe('stale');
    expect((await store.getRecord(db.table, place, 'cus_a'))?.id).toBe('cus_a');
    expect(await itemsUnder(`ACCOUNT#acct-sh4#payment#customers#${shardOf('cus_a', RECORD_SHARDS)}`)).toContain('cus_a');
    expect(await store.markRecordDeleted(db.table, place, 'cus_b', { deletedAt: new Date() })).toBe(true);
    // BatchGetItem answers in no particular order: compared by id.
    expect([...(await store.getStoredVersions(db.table, place, ['cus_a', 'cus_b', 'cus_c'])).entries()].sort(([a], [b]) => a.localeCompare(b))).toEqual([
      ['cus_a', { hash: 'h-cus_a', deleted: false }],
      ['cus_b', { hash: 'h-cus_b', sourceVersion: 3, deleted: true }],
    ]);
  });

  it('keeps a connection stored before sharding on its one key: its records are found once, and a new connection then keeps that key', async () => {
    const accountId = 'acct-sh5';
    await store.putRecordsBatch(db.table, legacy(accountId), [record('cus_old')]);
    expect(await itemsUnder(`ACCOUNT#${accountId}#payment#customers`)).toEqual(['cus_old']);
    // The legacy connection keeps writing where its records are: one copy, one index entry.
    expect(await store.putRecordIfChanged(db.table, legacy(accountId), { ...record('cus_old'), hash: 'h2' })).toBe('updated');
    expect((await store.findRecordsByEmail(db.table, accountId, 'cus_old@example.com')).length).toBe(1);
    expect((await store.listRecords(db.table, legacy(accountId))).records.map((stored) => stored.id)).toEqual(['cus_old']);
    expect(await store.hasLegacyRecords(db.table, accountId, 'payment', ['subscriptions', 'customers'])).toBe(true);
    expect(await store.hasLegacyRecords(db.table, 'acct-sh1', 'payment', ['customers'])).toBe(false);
  });

  it('a purge empties every key a data object may be under, the single one and each shard', async () => {
    const accountId = 'acct-sh6';
    await store.putRecordsBatch(db.table, legacy(accountId), Array.from({ length: 30 }, (_, i) => record(`old_${i}`)));
    await store.putRecordsBatch(db.table, sharded(accountId), Array.from({ length: 300 }, (_, i) => record(`new_${i}`)));
    let deleted = 0;
    for (;;) {
      const count = await store.deleteRecords(db.table, accountId, 'payment', 'customers', 100);
      deleted += count;
      if (count < 100) break;
    }
    expect(deleted).toBe(330);
    expect((await store.listStoredVersions(db.table, sharded(accountId))).versions).toEqual([]);
    expect((await store.listStoredVersions(db.table, legacy(accountId))).versions).toEqual([]);
    expect(await store.hasLegacyRecords(db.table, accountId, 'payment', ['customers'])).toBe(false);
  });
});
