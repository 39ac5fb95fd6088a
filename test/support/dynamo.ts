import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';

export { localDynamoClient } from '../../local/local-dynamo';
export type { LocalDynamo };

/** An in-memory dynalite on a loopback port the OS picks, with the gateway's table created. */
export function startDynamo(tableName = 'gateway-test'): Promise<LocalDynamo> {
  return startLocalDynamo({ tableName });
}

export { watchCommands } from '../../local/local-dynamo';
