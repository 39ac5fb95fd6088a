import type {
  BatchGetItemCommandInput,
  BatchGetItemCommandOutput,
  BatchWriteItemCommandInput,
  BatchWriteItemCommandOutput,
  DeleteItemCommandInput,
  DeleteItemCommandOutput,
  GetItemCommandInput,
  GetItemCommandOutput,
  PutItemCommandInput,
  PutItemCommandOutput,
  QueryCommandInput,
  QueryCommandOutput,
  UpdateItemCommandInput,
  UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';

/**
 * The DynamoDB requests the store makes, as plain values: an operation's name and its input, in the
 * shapes of DynamoDB's JSON API (the SDK's types, imported as types only). A TableClient sends them:
 * a signed HTTPS call in every Lambda function (shared/store/signed-table-client.ts), the AWS SDK's
 * client in the local runtime and the tests (shared/store/sdk-table-client.ts). So the store's code
 * never loads an SDK client itself.
 */
export abstract class TableCommand<Input, Output> {
  abstract readonly operation: TableOperation;
  /** Only the type: what `TableClient.send` answers for this command. */
  declare readonly output?: Output;
  constructor(readonly input: Input) {}
}

/** The command class for one operation. */
function commandFor<Input, Output>(operation: TableOperation) {
  return class extends TableCommand<Input, Output> {
    readonly operation = operation;
  };
}

export const GetItemCommand = /* @__PURE__ */ commandFor<GetItemCommandInput, GetItemCommandOutput>('GetItem');
export const PutItemCommand = /* @__PURE__ */ commandFor<PutItemCommandInput, PutItemCommandOutput>('PutItem');
export const UpdateItemCommand = /* @__PURE__ */ commandFor<UpdateItemCommandInput, UpdateItemCommandOutput>('UpdateItem');
export const DeleteItemCommand = /* @__PURE__ */ commandFor<DeleteItemCommandInput, DeleteItemCommandOutput>('DeleteItem');
export const QueryCommand = /* @__PURE__ */ commandFor<QueryCommandInput, QueryCommandOutput>('Query');
export const BatchGetItemCommand = /* @__PURE__ */ commandFor<BatchGetItemCommandInput, BatchGetItemCommandOutput>('BatchGetItem');
export const BatchWriteItemCommand = /* @__PURE__ */ commandFor<BatchWriteItemCommandInput, BatchWriteItemCommandOutput>('BatchWriteItem');

/** Every DynamoDB operation the store uses. */
export type TableOperation = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query' | 'BatchGetItem' | 'BatchWriteItem';

/**
 * Sends the store's commands to the table. The answer has DynamoDB's fields and `$metadata` (the
 * HTTP status, request id and attempts made), as the SDK's does; a refusal throws an Error whose
 * `name` is DynamoDB's error code (ConditionalCheckFailedException, ThrottlingException...).
 */
export interface TableClient {
  send<Output>(command: TableCommand<unknown, Output>): Promise<Output>;
}
