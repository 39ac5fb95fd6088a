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
import type { TableClient, TableCommand, TableOperation } from './table-client';

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
 * The store's commands sent through an AWS SDK DynamoDB client, with its retries and middleware: the
 * local runtime's table (the IAM check and the commands tests count, on the dynalite client). Lambda
 * functions send them as signed calls (shared/store/signed-table-client.ts).
 */
export function sdkTableClient(client: DynamoDBClient): TableClient {
  return {
    send<Output>(command: TableCommand<unknown, Output>): Promise<Output> {
      const Command = SDK_COMMANDS[command.operation] as unknown as new (input: unknown) => SdkCommand;
      return client.send(new Command(command.input)) as Promise<Output>;
    },
  };
}
