import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { withoutCallLog } from '../aws/sdk-call-log';
import { tracedAwsClient } from '../tracing/segments';
import type { TableClient, TableCommand, TableOperation } from './table-client';
import { STORE_MAX_ATTEMPTS } from './table';

/** The SDK's command for each operation the store uses. */
const SDK_COMMANDS = {
  GetItem: GetItemCommand,
  PutItem: PutItemCommand,
  UpdateItem: UpdateItemCommand,
  DeleteItem: DeleteItemCommand,
  Query: QueryCommand,
  BatchGetItem: BatchGetItemCommand,
  BatchWriteItem: BatchWriteItemCommand,
} satisfies Record<TableOperation, unknown>;

type SdkCommand = Parameters<DynamoDBClient['send']>[0];

/**
 * The store's commands sent through an AWS SDK DynamoDB client, with its retries, tracing and
 * middleware (locally: the IAM check and the commands tests count, on the dynalite client).
 */
export function sdkTableClient(client: DynamoDBClient): TableClient {
  return {
    send<Output>(command: TableCommand<unknown, Output>): Promise<Output> {
      const Command = SDK_COMMANDS[command.operation] as unknown as new (input: unknown) => SdkCommand;
      return client.send(new Command(command.input)) as Promise<Output>;
    },
  };
}

/** The table through the SDK, for `provideAwsServices({ table: sdkTable })`: retries enough to ride out the table's refusals. */
export function sdkTable(): TableClient {
  return sdkTableClient(tracedAwsClient(withoutCallLog(new DynamoDBClient({ maxAttempts: STORE_MAX_ATTEMPTS }))));
}
