import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { SDK_LOGGER_MIDDLEWARE, withoutCallLog } from '../../shared/aws/sdk-call-log';
import { localDynamoClient, useTable } from '../support/dynamo';

const db = useTable();

/** A client whose logger counts what the SDK hands it per call. */
function countingClient() {
  const logged: unknown[] = [];
  const quiet = () => undefined;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: db.dynamo.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    logger: { trace: quiet, debug: quiet, info: (entry: unknown) => void logged.push(entry), warn: quiet, error: quiet },
  });
  return { client, logged };
}

describe('withoutCallLog', () => {
  const item = { pk: { S: 'CALL-LOG' }, sk: { S: 'one' }, note: { S: 'kept' } };

  it('the SDK hands every call, input and output copied, to the logger unless the step is removed', async () => {
    const { client, logged } = countingClient();
    await client.send(new PutItemCommand({ TableName: db.dynamo.tableName, Item: item }));
    expect(logged).toHaveLength(1);
    expect(JSON.stringify(logged[0])).toContain('CALL-LOG');
    client.destroy();
  });

  it('takes the per-call log step off a client, which still reads and writes', async () => {
    const { client, logged } = countingClient();
    expect(client.middlewareStack.identify().some((entry) => entry.startsWith(SDK_LOGGER_MIDDLEWARE))).toBe(true);
    expect(withoutCallLog(client)).toBe(client);
    expect(client.middlewareStack.identify().some((entry) => entry.startsWith(SDK_LOGGER_MIDDLEWARE))).toBe(false);
    await client.send(new PutItemCommand({ TableName: db.dynamo.tableName, Item: item }));
    const { Item } = await client.send(new GetItemCommand({ TableName: db.dynamo.tableName, Key: { pk: item.pk, sk: item.sk } }));
    expect(Item?.note).toEqual({ S: 'kept' });
    expect(logged).toHaveLength(0);
    // Twice is harmless.
    withoutCallLog(client);
    client.destroy();
  });

  it('the local gateway’s table client has no per-call log step', () => {
    const client = localDynamoClient(db.dynamo.endpoint);
    expect(client.middlewareStack.identify().some((entry) => entry.startsWith(SDK_LOGGER_MIDDLEWARE))).toBe(false);
    client.destroy();
  });
});
