import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DYNAMODB, signedCall, type CallOptions } from '../aws/signed-call';
import { STORE_MAX_ATTEMPTS } from './table';
import type { TableClient, TableCommand } from './table-client';

/**
 * The store's commands as signed calls to DynamoDB's JSON API, without the SDK's client
 * (shared/aws/signed-call.ts says why): every Lambda function's table.
 */
export function signedTableClient(options: CallOptions = {}): TableClient {
  return {
    async send<Output>(command: TableCommand<unknown, Output>): Promise<Output> {
      const answer = await signedCall<Record<string, unknown>>(DYNAMODB, command.operation, command.input as object, { maxAttempts: STORE_MAX_ATTEMPTS, ...options });
      return withBinaryValues(answer) as Output;
    },
  };
}

/** The table through signed calls, for `provideAwsServices({ table: signedTable })`. */
export function signedTable(): TableClient {
  return signedTableClient();
}

type WireItem = Record<string, Record<string, unknown>>;

/**
 * Binary attributes (`B`, `BS`) come back as base64 text; the SDK's answers hold bytes. The gateway's
 * items hold none today, so this only keeps the answer's shape the SDK's should one appear.
 */
function withBinaryValues(answer: Record<string, unknown>): Record<string, unknown> {
  const items = (value: unknown) => (Array.isArray(value) ? value.map((item) => decodeItem(item as WireItem)) : value);
  for (const field of ['Item', 'Attributes', 'LastEvaluatedKey'] as const) if (answer[field]) answer[field] = decodeItem(answer[field] as WireItem);
  if (answer.Items) answer.Items = items(answer.Items);
  if (answer.Responses) answer.Responses = Object.fromEntries(Object.entries(answer.Responses as Record<string, unknown>).map(([table, list]) => [table, items(list)]));
  return answer;
}

function decodeItem(item: WireItem): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, decodeValue(value)]));
}

function decodeValue(value: Record<string, unknown>): AttributeValue {
  if (typeof value.B === 'string') return { B: Buffer.from(value.B, 'base64') };
  if (Array.isArray(value.BS)) return { BS: (value.BS as string[]).map((b) => Buffer.from(b, 'base64')) };
  if (Array.isArray(value.L)) return { L: (value.L as Array<Record<string, unknown>>).map(decodeValue) };
  if (value.M && typeof value.M === 'object') return { M: decodeItem(value.M as WireItem) };
  return value as unknown as AttributeValue;
}
