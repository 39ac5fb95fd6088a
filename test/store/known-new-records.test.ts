import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { recordHash } from '../../shared/sync/record-hash';
import { startDynamo, type LocalDynamo } from '../support/dynamo';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';
import type { Table } from '../../shared/store/table-access';

describe('writing records the sync saw absent', () => {
  let dynamo: LocalDynamo;
  let table: Table;
  beforeAll(async () => {
    dynamo = await startDynamo();
    table = { client: sdkTableClient(dynamo.client), tableName: dynamo.tableName };
  });
  afterAll(() => dynamo.stop());

  const write = (id: string, name: string, sourceVersion?: number) => {
    const body = { id, name };
    return { id, hash: recordHash(body), body, syncedAt: new Date().toISOString(), ...(sourceVersion === undefined ? {} : { sourceVersion }) };
  };

  it('creates them; one that appeared meanwhile with a newer version is not overwritten', async () => {
    // A webhook stored s2 at version 20 after the sync's read saw it absent.
    await store.putRecordIfNewer(table, recordsAt('acme', 'payment', 'subscriptions'), write('s2', 'from webhook', 20) as ReturnType<typeof write> & { sourceVersion: number });
    const outcomes = await store.putRecordsIfChanged(table, recordsAt('acme', 'payment', 'subscriptions'), [write('s1', 'listed', 10), write('s2', 'listed', 10)], {
      knownNew: new Set(['s1', 's2']),
    });
    expect(outcomes).toEqual(['created', 'unchanged']);
    expect((await store.getRecord(table, recordsAt('acme', 'payment', 'subscriptions'), 's2'))?.body).toEqual({ id: 's2', name: 'from webhook' });
  });
});
