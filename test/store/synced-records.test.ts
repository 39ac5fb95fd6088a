import { describe, expect, it } from 'vitest';
import type { RecordWrite } from '../../shared/store/items';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { localDynamoClient, watchCommands, useTable } from '../support/dynamo';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

const db = useTable();

function customer(id: string, fields: Partial<RecordWrite> = {}): RecordWrite {
  const body = { id, object: 'customer', name: `Customer ${id}` };
  return { id, hash: `hash-of-${JSON.stringify(body)}`, body, ...fields };
}

/** A store on its own client, so its commands can be counted. */
function watchedStore() {
  const client = localDynamoClient(db.dynamo.endpoint);
  return { table: { client: sdkTableClient(client), tableName: db.dynamo.tableName }, watched: watchCommands(client), client };
}

describe('putRecordIfChanged', () => {
  it('writes a record once, skips it while the hash is the same, and rewrites it when the hash changes', async () => {
    const { table: counted, watched, client } = watchedStore();
    const record = customer('cus_1');
    expect(await store.putRecordIfChanged(counted, recordsAt('acct-r1', 'payment', 'customers'), record)).toBe('created');
    expect(await store.putRecordIfChanged(counted, recordsAt('acct-r1', 'payment', 'customers'), record)).toBe('unchanged');
    expect(await store.putRecordIfChanged(counted, recordsAt('acct-r1', 'payment', 'customers'), { ...record, body: { ignored: true } })).toBe(
      'unchanged',
    );
    expect(watched.sent('PutItemCommand')).toBe(3);
    expect(watched.succeeded('PutItemCommand')).toBe(1);
    expect(watched.sent('GetItemCommand') + watched.sent('QueryCommand')).toBe(0);
    expect((await store.getRecord(db.table, recordsAt('acct-r1', 'payment', 'customers'), 'cus_1'))?.body).toEqual(record.body);

    const changed = { ...record, hash: 'hash-2', body: { id: 'cus_1', name: 'Renamed' } };
    expect(await store.putRecordIfChanged(counted, recordsAt('acct-r1', 'payment', 'customers'), changed)).toBe('updated');
    expect(watched.succeeded('PutItemCommand')).toBe(2);
    expect(await store.getRecord(db.table, recordsAt('acct-r1', 'payment', 'customers'), 'cus_1')).toEqual({
      accountId: 'acct-r1',
      connector: 'payment',
      object: 'customers',
      ...changed,
    });
    client.destroy();
  });

  it('keeps a newer stored version when the written record carries an older sourceVersion', async () => {
    await store.putRecordIfNewer(db.table, recordsAt('acct-r2', 'billing', 'subscriptions'), { ...customer('sub_1'), sourceVersion: 20 });
    const older = { ...customer('sub_1'), hash: 'older', sourceVersion: 10 };
    expect(await store.putRecordIfChanged(db.table, recordsAt('acct-r2', 'billing', 'subscriptions'), older)).toBe('unchanged');
    expect((await store.getRecord(db.table, recordsAt('acct-r2', 'billing', 'subscriptions'), 'sub_1'))?.sourceVersion).toBe(20);
    const newer = { ...customer('sub_1'), hash: 'newer', sourceVersion: 30 };
    expect(await store.putRecordIfChanged(db.table, recordsAt('acct-r2', 'billing', 'subscriptions'), newer)).toBe('updated');
  });
});

describe('putRecordIfNewer', () => {
  it('refuses an older or equal version and accepts a newer one', async () => {
    const v5 = { ...customer('cus_n'), hash: 'h5', sourceVersion: 5 };
    expect(await store.putRecordIfNewer(db.table, recordsAt('acct-r3', 'payment', 'customers'), v5)).toBe('created');
    expect(await store.putRecordIfNewer(db.table, recordsAt('acct-r3', 'payment', 'customers'), { ...v5, hash: 'h4', sourceVersion: 4 })).toBe('stale');
    expect(await store.putRecordIfNewer(db.table, recordsAt('acct-r3', 'payment', 'customers'), { ...v5, hash: 'h5b' })).toBe('stale');
    expect((await store.getRecord(db.table, recordsAt('acct-r3', 'payment', 'customers'), 'cus_n'))?.hash).toBe('h5');
    expect(await store.putRecordIfNewer(db.table, recordsAt('acct-r3', 'payment', 'customers'), { ...v5, hash: 'h6', sourceVersion: 6 })).toBe('updated');
    expect((await store.getRecord(db.table, recordsAt('acct-r3', 'payment', 'customers'), 'cus_n'))?.hash).toBe('h6');
  });

  it('overwrites a record stored without a source version', async () => {
    await store.putRecordIfChanged(db.table, recordsAt('acct-r3', 'payment', 'customers'), customer('cus_plain'));
    expect(
      await store.putRecordIfNewer(db.table, recordsAt('acct-r3', 'payment', 'customers'), { ...customer('cus_plain'), hash: 'x', sourceVersion: 1 }),
    ).toBe('updated');
  });
});

describe('putRecordsIfChanged', () => {
  it('writes many records with at most 10 requests in flight, then skips them all', async () => {
    const { table: counted, watched, client } = watchedStore();
    const records = Array.from({ length: 35 }, (_, i) => customer(`cus_${String(i).padStart(3, '0')}`));
    const first = await store.putRecordsIfChanged(counted, recordsAt('acct-r4', 'payment', 'customers'), records);
    expect(first).toEqual(records.map(() => 'created'));
    expect(watched.maxInFlight()).toBeLessThanOrEqual(10);
    expect(watched.maxInFlight()).toBeGreaterThan(1);

    watched.reset();
    const changed = records.map((r, i) => (i === 7 ? { ...r, hash: 'changed' } : r));
    const second = await store.putRecordsIfChanged(counted, recordsAt('acct-r4', 'payment', 'customers'), changed);
    expect(second.filter((o) => o === 'unchanged')).toHaveLength(34);
    expect(second[7]).toBe('updated');
    expect(watched.succeeded('PutItemCommand')).toBe(1);
    client.destroy();
  });
});

describe('listRecords', () => {
  it('pages through a data object in id order without gaps or repeats', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `inv_${String(i).padStart(2, '0')}`);
    await store.putRecordsIfChanged(db.table, recordsAt('acct-r5', 'payment', 'invoices'), [...ids].reverse().map((id) => customer(id)));
    await store.putRecordsIfChanged(db.table, recordsAt('acct-r5', 'payment', 'customers'), [customer('cus_other')]);

    const pages: string[][] = [];
    let startKey: string | undefined;
    do {
      const page = await store.listRecords(db.table, recordsAt('acct-r5', 'payment', 'invoices'), { limit: 10, startKey });
      pages.push(page.records.map((r) => r.id));
      startKey = page.nextStartKey;
    } while (startKey);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual(ids);
  });

  it("cannot be steered into another account's records by a start key", async () => {
    await store.putRecordsIfChanged(db.table, recordsAt('acct-r6a', 'billing', 'customers'), [customer('c_1'), customer('c_2')]);
    await store.putRecordsIfChanged(db.table, recordsAt('acct-r6b', 'billing', 'customers'), [customer('c_9')]);
    const page = await store.listRecords(db.table, recordsAt('acct-r6b', 'billing', 'customers'), { startKey: 'c_0' });
    expect(page.records.map((r) => r.id)).toEqual(['c_9']);
    expect(page.records.every((r) => r.accountId === 'acct-r6b')).toBe(true);
    expect(await store.getRecord(db.table, recordsAt('acct-r6b', 'billing', 'customers'), 'c_1')).toBeUndefined();
  });
});

describe('pacing record writes', () => {
  it('awaits the pace right before each request leaves, with the records it carries: batches of 25, conditional puts one by one', async () => {
    const { table: counted, watched, client } = watchedStore();
    const records = Array.from({ length: 60 }, (_, i) => customer(`cus_p${String(i).padStart(2, '0')}`));
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const paced: string[][] = [];
    const writing = store.putRecordsBatch(counted, recordsAt('acct-pace', 'payment', 'customers'), records, {
      concurrency: 2,
      pace: async (batch) => {
        paced.push(batch.map((record) => record.id));
        await gate;
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Held at the pace: nothing sent yet, and only as many batches asked for as may be in flight.
    expect(watched.sent('BatchWriteItemCommand')).toBe(0);
    expect(paced.map((batch) => batch.length)).toEqual([25, 25]);
    open();
    await writing;
    expect(paced.map((batch) => batch.length)).toEqual([25, 25, 10]);
    expect(paced.flat().sort()).toEqual(records.map((record) => record.id));
    expect(watched.sent('BatchWriteItemCommand')).toBe(3);

    const one: string[][] = [];
    await store.putRecordsIfChanged(counted, recordsAt('acct-pace', 'payment', 'customers'), records.slice(0, 5).map((record) => ({ ...record, hash: 'changed' })), {
      pace: async (batch) => void one.push(batch.map((record) => record.id)),
    });
    expect(one).toEqual(records.slice(0, 5).map((record) => [record.id]));
    client.destroy();
  });
});

describe('listStoredVersions', () => {
  it('pages every stored version in id order, tombstones included, with what a sync compares', async () => {
    await store.putRecordsIfChanged(db.table, recordsAt('acct-sv', 'payment', 'charges'), [customer('ch_1'), customer('ch_2', { sourceVersion: 7 }), customer('ch_3')]);
    await store.markRecordDeleted(db.table, recordsAt('acct-sv', 'payment', 'charges'), 'ch_2', { deletedAt: new Date() });
    const first = await store.listStoredVersions(db.table, recordsAt('acct-sv', 'payment', 'charges'), { limit: 2 });
    const rest = await store.listStoredVersions(db.table, recordsAt('acct-sv', 'payment', 'charges'), { limit: 2, startKey: first.nextStartKey! });
    expect([...first.versions, ...rest.versions]).toEqual([
      ['ch_1', { hash: customer('ch_1').hash, deleted: false }],
      ['ch_2', { hash: customer('ch_2').hash, sourceVersion: 7, deleted: true }],
      ['ch_3', { hash: customer('ch_3').hash, deleted: false }],
    ]);
    expect(rest.nextStartKey).toBeUndefined();
    // The same versions one BatchGetItem reads for a page.
    expect(await store.getStoredVersions(db.table, recordsAt('acct-sv', 'payment', 'charges'), ['ch_1', 'ch_2', 'ch_3'])).toEqual(new Map([...first.versions, ...rest.versions]));
  });
});

describe('listRecordIds', () => {
  it('pages the same ids as listRecords, in id order, leaving deleted records out and reading no body (one key: each item read once; sharded: test/store/sharded-records.test.ts)', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `ch_${String(i).padStart(2, '0')}`);
    await store.putRecordsIfChanged(db.table, recordsAt('acct-ri', 'payment', 'charges', 'legacy'), ids.map((id) => customer(id)));
    await store.putRecordsIfChanged(db.table, recordsAt('acct-ri', 'payment', 'customers', 'legacy'), [customer('cus_elsewhere')]);
    await store.markRecordDeleted(db.table, recordsAt('acct-ri', 'payment', 'charges', 'legacy'), 'ch_03', { deletedAt: new Date() });

    const { client, watched } = watchedStore();
    const bodies: unknown[] = [];
    client.middlewareStack.add((next) => async (args) => {
      const result = await next(args);
      bodies.push(...(((result.output as { Items?: Array<Record<string, unknown>> }).Items ?? []).map((item) => item.body)));
      return result;
    }, { step: 'initialize' });
    const counted = { client: sdkTableClient(client), tableName: db.dynamo.tableName };
    const listed: string[] = [];
    let startKey: string | undefined;
    do {
      const page = await store.listRecordIds(counted, recordsAt('acct-ri', 'payment', 'charges', 'legacy'), { limit: 10, ...(startKey ? { startKey } : {}) });
      listed.push(...page.ids);
      startKey = page.nextStartKey;
    } while (startKey);
    expect(listed).toEqual(ids.filter((id) => id !== 'ch_03'));
    expect(watched.sent('QueryCommand')).toBe(3);
    expect(bodies.every((body) => body === undefined)).toBe(true);
    expect(bodies).toHaveLength(24);
  });
});

describe('findRecordsByEmail', () => {
  it("finds an account's records by email, whatever the case, across connectors, and only that account's", async () => {
    await store.putRecordIfChanged(db.table, recordsAt('acct-e1', 'payment', 'customers'), customer('cus_e', { email: 'Ada@Example.com' }));
    await store.putRecordIfChanged(db.table, recordsAt('acct-e1', 'billing', 'customers'), customer('bc_e', { email: 'ada@example.com' }));
    await store.putRecordIfChanged(db.table, recordsAt('acct-e1', 'billing', 'customers'), customer('bc_other', { email: 'grace@example.com' }));
    await store.putRecordIfChanged(db.table, recordsAt('acct-e2', 'payment', 'customers'), customer('cus_e2', { email: 'ada@example.com' }));

    const found = await store.findRecordsByEmail(db.table, 'acct-e1', ' ADA@example.COM ');
    expect(found.map((r) => `${r.connector}/${r.id}`).sort()).toEqual(['billing/bc_e', 'payment/cus_e']);
    expect((await store.findRecordsByEmail(db.table, 'acct-e2', 'ada@example.com')).map((r) => r.id)).toEqual(['cus_e2']);
    expect(await store.findRecordsByEmail(db.table, 'acct-e3', 'ada@example.com')).toEqual([]);
  });

  it('stops finding a record by its old email once the email changes', async () => {
    await store.putRecordIfChanged(db.table, recordsAt('acct-e4', 'payment', 'customers'), customer('cus_m', { email: 'old@example.com' }));
    await store.putRecordIfChanged(db.table, recordsAt('acct-e4', 'payment', 'customers'), customer('cus_m', { email: 'new@example.com', hash: 'h2' }));
    expect(await store.findRecordsByEmail(db.table, 'acct-e4', 'old@example.com')).toEqual([]);
    expect((await store.findRecordsByEmail(db.table, 'acct-e4', 'new@example.com')).map((r) => r.id)).toEqual(['cus_m']);
  });
});

describe('markRecordDeleted', () => {
  it('leaves a tombstone that lists and email lookups skip, and that a changed sync write revives', async () => {
    const record = customer('cus_d', { email: 'gone@example.com' });
    await store.putRecordIfChanged(db.table, recordsAt('acct-d1', 'payment', 'customers'), record);
    expect(await store.markRecordDeleted(db.table, recordsAt('acct-d1', 'payment', 'customers'), 'cus_d', { deletedAt: new Date('2025-05-01T00:00:00Z') })).toBe(
      true,
    );
    expect((await store.getRecord(db.table, recordsAt('acct-d1', 'payment', 'customers'), 'cus_d'))?.deletedAt).toBe('2025-05-01T00:00:00.000Z');
    expect((await store.listRecords(db.table, recordsAt('acct-d1', 'payment', 'customers'))).records).toEqual([]);
    expect((await store.listRecords(db.table, recordsAt('acct-d1', 'payment', 'customers'), { includeDeleted: true })).records).toHaveLength(1);
    expect(await store.findRecordsByEmail(db.table, 'acct-d1', 'gone@example.com')).toEqual([]);
    expect(await store.findRecordsByEmail(db.table, 'acct-d1', 'gone@example.com', { includeDeleted: true })).toHaveLength(1);

    // The same content seen again by a sync (restored on the platform) is written again.
    expect(await store.putRecordIfChanged(db.table, recordsAt('acct-d1', 'payment', 'customers'), record)).toBe('updated');
    expect((await store.getRecord(db.table, recordsAt('acct-d1', 'payment', 'customers'), 'cus_d'))?.deletedAt).toBeUndefined();
  });

  it('ignores an older deletion, and a deletion of an unknown record or in another account', async () => {
    await store.putRecordIfNewer(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), { ...customer('sub_d'), sourceVersion: 9 });
    const deletion = { deletedAt: new Date('2025-05-01T00:00:00Z') };
    expect(await store.markRecordDeleted(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), 'sub_d', { ...deletion, sourceVersion: 8 })).toBe(false);
    expect(await store.markRecordDeleted(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), 'sub_missing', deletion)).toBe(false);
    expect(await store.markRecordDeleted(db.table, recordsAt('acct-d3', 'billing', 'subscriptions'), 'sub_d', deletion)).toBe(false);
    expect((await store.getRecord(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), 'sub_d'))?.deletedAt).toBeUndefined();
    expect(await store.getRecord(db.table, recordsAt('acct-d3', 'billing', 'subscriptions'), 'sub_d')).toBeUndefined();

    expect(await store.markRecordDeleted(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), 'sub_d', { ...deletion, sourceVersion: 10 })).toBe(true);
    // An update older than the deletion cannot bring it back.
    expect(
      await store.putRecordIfNewer(db.table, recordsAt('acct-d2', 'billing', 'subscriptions'), { ...customer('sub_d'), hash: 'late', sourceVersion: 9.5 }),
    ).toBe('stale');
  });
});
