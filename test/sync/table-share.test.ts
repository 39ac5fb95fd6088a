import { sdkTableClient } from '../../shared/store/sdk-table-client';
import { DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { limitTableWrites } from '../../local/table-throughput';
import { putRecordsIfChanged } from '../../shared/store/synced-records';
import { batchWriteAll } from '../../shared/store/table-access';
import { TABLE_SHARE_CEILING, TABLE_SHARE_FLOOR, TableShare } from '../../shared/sync/write-pace';
import { localDynamoClient, useTable } from '../support/dynamo';

const db = useTable();

describe('a run\'s share of the table (backing off while DynamoDB refuses its writes)', () => {
  it('sets no limit until a refusal, then half the last second\'s units, grown a tenth a second, none again past the ceiling', async () => {
    let now = 0;
    const share = new TableShare(() => now);
    expect(share.unitsPerSecond()).toBe(Number.POSITIVE_INFINITY);
    for (let i = 0; i < 40; i += 1) await share.take(100); // 4,000 units in this second, none held
    share.refused();
    expect(share.unitsPerSecond()).toBe(2_000);
    // More refusals within the second (of writes sent before the cut) do not cut again.
    now = 500;
    share.refused();
    expect(share.unitsPerSecond()).toBe(2_000);
    now = 1_000;
    expect(share.unitsPerSecond()).toBeCloseTo(2_200);
    now = 3_000;
    expect(share.unitsPerSecond()).toBeCloseTo(2_000 * 1.1 ** 3);
    // A refusal now halves what was sent in the last second, however large the share had grown.
    share.refused();
    expect(share.unitsPerSecond()).toBe(TABLE_SHARE_FLOOR); // nothing sent since the first second
    // Without refusals it grows back to no limit.
    now = 3_000 + 1_000 * Math.ceil(Math.log(TABLE_SHARE_CEILING / TABLE_SHARE_FLOOR) / Math.log(1.1) + 1);
    expect(share.unitsPerSecond()).toBe(Number.POSITIVE_INFINITY);
  });

  it('holds units past the share until the second has room', async () => {
    let now = 0;
    const share = new TableShare(() => now);
    await share.take(2_000);
    share.refused(); // share: 1,000 a second
    now = 1_000;
    await share.take(1_000); // grown to 1,100 by now
    let sent = false;
    const waiting = share.take(200).then(() => (sent = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(sent).toBe(false);
    now = 2_000;
    await waiting;
    expect(sent).toBe(true);
  });

  it('hears of a refusal from batchWriteAll: items left unprocessed', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', endpoint: db.dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
    let now = 0;
    limitTableWrites(client, { writeUnitsPerSecond: 20, now: () => now });
    let refusals = 0;
    // 20 of each 25 are taken in a second; the rest are left unprocessed and sent again a second later.
    await batchWriteAll({ client: sdkTableClient(client), tableName: db.dynamo.tableName }, items('UNPROCESSED', 50), { onRefused: () => (refusals += 1), beforeSend: async () => void (now += 1_000) });
    expect(refusals).toBe(2);
    // A table with room: none heard.
    let none = 0;
    await batchWriteAll({ client: sdkTableClient(localDynamoClient(db.dynamo.endpoint)), tableName: db.dynamo.tableName }, items('ROOMY', 50), { onRefused: () => (none += 1) });
    expect(none).toBe(0);
  });

  it('hears of a refusal from batchWriteAll: a batch refused whole, which the SDK sent again', async () => {
    const client = localDynamoClient(db.dynamo.endpoint);
    limitTableWrites(client, { writeUnitsPerSecond: 20 });
    let refusals = 0;
    await batchWriteAll({ client: sdkTableClient(client), tableName: db.dynamo.tableName }, items('FULL', 20), { onRefused: () => (refusals += 1) });
    expect(refusals).toBe(0);
    // The second's 20 units are taken: this batch is refused whole until it frees (the SDK's retries).
    await batchWriteAll({ client: sdkTableClient(client), tableName: db.dynamo.tableName }, items('WHOLE', 5), { onRefused: () => (refusals += 1) });
    expect(refusals).toBeGreaterThan(0);
  });

  it('hears of a refusal from the conditional puts a sync with webhooks uses', async () => {
    const client = localDynamoClient(db.dynamo.endpoint);
    limitTableWrites(client, { writeUnitsPerSecond: 5 });
    const place = { accountId: 'acct-share', connector: 'payment' as const, object: 'customers', shards: 8 };
    const records = Array.from({ length: 8 }, (_, n) => ({ id: `cus_share${n}`, hash: `h${n}`, body: { id: `cus_share${n}` } }));
    let refusals = 0;
    // 5 units a second: three of the eight are refused until the second frees, then sent again by the SDK.
    const outcomes = await putRecordsIfChanged({ client: sdkTableClient(client), tableName: db.dynamo.tableName }, place, records, { onRefused: () => (refusals += 1) });
    expect(outcomes).toEqual(records.map(() => 'created'));
    expect(refusals).toBeGreaterThan(0);
  });
});

function items(prefix: string, count: number): WriteRequest[] {
  return Array.from({ length: count }, (_, n) => ({ PutRequest: { Item: { pk: { S: `${prefix}#${n % 4}` }, sk: { S: `item-${n}` } } } }));
}
