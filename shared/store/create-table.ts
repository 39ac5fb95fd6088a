import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from './table';

/**
 * Creates the one table (keys and gsi1 from tableDefinition) and waits until it is usable. For the
 * local runtime and tests; in AWS the CDK stack makes it. A table that already exists (an on-disk
 * dynalite from an earlier run) is left as it is. The TTL setting is not applied: dynalite lacks
 * UpdateTimeToLive, and locally nothing expires by itself anyway.
 */
export async function createTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const index = tableDefinition.indexes[0];
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [tableDefinition.partitionKey, tableDefinition.sortKey, index.partitionKey, index.sortKey].map(
          (name) => ({ AttributeName: name, AttributeType: 'S' }),
        ),
        KeySchema: [
          { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: index.name,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            // The store reads whole items through the index (records by email, conversations by shard).
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilActive(client, tableName);
}

/** Polls briefly: dynalite takes `createTableMs` (500 ms by default) to make a table active. */
async function waitUntilActive(client: DynamoDBClient, tableName: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((gsi) => gsi.IndexStatus === 'ACTIVE');
    if (Table?.TableStatus === 'ACTIVE' && indexesActive) return;
    if (Date.now() > deadline) throw new Error(`Table ${tableName} did not become active within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
