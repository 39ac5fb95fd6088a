import { ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { sdkTableClient } from '../../shared/store/sdk-table-client';
import type { Table } from '../../shared/store/table-access';
import { startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';

export { localDynamoClient } from '../../local/local-dynamo';
export type { LocalDynamo };

/** An in-memory dynalite on a loopback port the OS picks, with the gateway's table created. */
export function startDynamo(tableName = 'gateway-test'): Promise<LocalDynamo> {
  return startLocalDynamo({ tableName });
}

export { watchCommands } from '../../local/local-dynamo';

/**
 * A table on its own in-memory dynalite for one test file: started before its tests, stopped
 * after. Use `db.table` (for the store's functions) and `db.dynamo` inside tests (they exist once
 * `beforeAll` has run).
 */
export function useTable(): { readonly table: Table; readonly dynamo: LocalDynamo } {
  const held = {} as { table: Table; dynamo: LocalDynamo };
  beforeAll(async () => {
    held.dynamo = await startDynamo();
    held.table = { client: sdkTableClient(held.dynamo.client), tableName: held.dynamo.tableName };
  });
  afterAll(() => held.dynamo.stop());
  return held;
}

/**
 * Every raw item of the table, all pages, as one text with binary attributes shown as base64 so
 * nothing hides in them: for checks that a string (a secret, a token) is nowhere in the table.
 */
export async function tableText(dynamo: Pick<LocalDynamo, 'client' | 'tableName'>): Promise<string> {
  const items: Record<string, AttributeValue>[] = [];
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamo.client.send(new ScanCommand({ TableName: dynamo.tableName, ExclusiveStartKey: startKey }));
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return JSON.stringify(items, (_field, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value));
}
