import { DeleteItemCommand, GetItemCommand, PutItemCommand } from './table-client';
import { ApiKeyRecord } from '../api-keys/api-key';
import { key } from './table';
import { checkAccountId, fromItem, queryAll, toItem, type Table } from './table-access';

export async function putApiKey(table: Table, record: ApiKeyRecord): Promise<void> {
  const checked = ApiKeyRecord.parse(record);
  await table.client.send(new PutItemCommand({ TableName: table.tableName, Item: toItem({ ...key.apiKey(checked.accountId, checked.keyId), ...checked }) }));
}

export async function getApiKey(table: Table, accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: toItem(key.apiKey(checkAccountId(accountId), keyId)) }));
  return Item ? ApiKeyRecord.parse(fromItem(Item)) : undefined;
}

export async function listApiKeys(table: Table, accountId: string): Promise<ApiKeyRecord[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.account(checkAccountId(accountId)).pk, ':prefix': 'APIKEY#' }),
  });
  return items.map((item) => ApiKeyRecord.parse(item));
}

export async function deleteApiKey(table: Table, accountId: string, keyId: string): Promise<boolean> {
  const { Attributes } = await table.client.send(
    new DeleteItemCommand({ TableName: table.tableName, Key: toItem(key.apiKey(checkAccountId(accountId), keyId)), ReturnValues: 'ALL_OLD' }),
  );
  return Attributes !== undefined;
}
