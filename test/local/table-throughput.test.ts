import { BatchWriteItemCommand, DynamoDBClient, PutItemCommand, ProvisionedThroughputExceededException, ScanCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { itemBytes, itemWriteUnits, limitTableWrites } from '../../local/table-throughput';
import { useTable } from '../support/dynamo';

const db = useTable();

/** A client of the test's dynalite that tries once: a refusal is seen as the caller sees it after the SDK's retries. */
const oneAttemptClient = () => new DynamoDBClient({ region: 'us-east-1', endpoint: db.dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
const item = (n: number, extra: Record<string, { S: string }> = {}) => ({ pk: { S: `LIMIT#${n % 3}` }, sk: { S: `item-${n}` }, body: { S: 'x'.repeat(100) }, ...extra });

describe('a table\'s write throughput, enforced locally as DynamoDB does', () => {
  it('takes a batch\'s items up to the second\'s units, answers the rest as UnprocessedItems, and refuses a single write whole', async () => {
    let now = 0;
    const client = oneAttemptClient();
    const counts = limitTableWrites(client, { writeUnitsPerSecond: 10, now: () => now });
    const requests = Array.from({ length: 25 }, (_, n) => ({ PutRequest: { Item: item(n) } }));
    const answer = await client.send(new BatchWriteItemCommand({ RequestItems: { [db.dynamo.tableName]: requests } }));
    expect(answer.UnprocessedItems?.[db.dynamo.tableName]).toHaveLength(15);
    const stored = await client.send(new ScanCommand({ TableName: db.dynamo.tableName, FilterExpression: 'begins_with(pk, :p)', ExpressionAttributeValues: { ':p': { S: 'LIMIT#' } } }));
    expect(stored.Items).toHaveLength(10);

    await expect(client.send(new PutItemCommand({ TableName: db.dynamo.tableName, Item: item(99) }))).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    // A batch with no room at all is refused whole, as DynamoDB refuses one.
    await expect(client.send(new BatchWriteItemCommand({ RequestItems: { [db.dynamo.tableName]: requests.slice(0, 2) } }))).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    // A second later the table takes writes again.
    now = 1_000;
    await client.send(new PutItemCommand({ TableName: db.dynamo.tableName, Item: item(99) }));
    expect(counts).toMatchObject({ unitsTaken: 11, unitsRefused: 15 + 1 + 2, requestsRefused: 2 });
  });

  it('counts an item\'s size in 1 KB units, rounded up, as DynamoDB sizes items (names and values, not JSON)', () => {
    expect(itemWriteUnits(item(1))).toBe(1);
    expect(itemWriteUnits({ pk: { S: 'k' }, body: { S: 'x'.repeat(2_500) } })).toBe(3);
    // 2 + 1 + 4 + 1,017 = 1,024 bytes: one unit (its JSON is 1,047 characters); a byte more is two.
    expect(itemBytes({ pk: { S: 'k' }, body: { S: 'x'.repeat(1_017) } })).toBe(1_024);
    expect(itemWriteUnits({ pk: { S: 'k' }, body: { S: 'x'.repeat(1_017) } })).toBe(1);
    expect(itemWriteUnits({ pk: { S: 'k' }, body: { S: 'x'.repeat(1_018) } })).toBe(2);
    // Strings count UTF-8 bytes; binary its raw bytes (not its base64).
    expect(itemBytes({ n: { S: 'é' } })).toBe(1 + 2);
    expect(itemBytes({ b: { B: new Uint8Array(30) } })).toBe(1 + 30);
    // Numbers: a byte per two significant digits (zeros at either end trimmed), plus one.
    expect(itemBytes({ n: { N: '12345' } })).toBe(1 + 4);
    expect(itemBytes({ n: { N: '1200' } })).toBe(1 + 2);
    expect(itemBytes({ n: { N: '-0.0012' } })).toBe(1 + 2);
    // A map or list: 3 bytes, and a byte for each element besides its name and value.
    expect(itemBytes({ m: { M: { a: { N: '12' }, b: { BOOL: true } } } })).toBe(1 + 3 + (1 + 1 + 2) + (1 + 1 + 1));
    expect(itemBytes({ l: { L: [{ S: 'ab' }, { NULL: true }] } })).toBe(1 + 3 + (1 + 2) + (1 + 1));
    expect(itemBytes({ s: { SS: ['ab', 'c'] } })).toBe(1 + 3);
  });
});
