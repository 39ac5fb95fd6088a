import { GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from './table-client';
import { Account } from './items';
import { indexKey, key } from './table';
import { checkAccountId, fromItem, isConditionalCheckFailed, toItem, type Table } from './table-access';

export async function getAccount(table: Table, accountId: string): Promise<Account | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: toItem(key.account(checkAccountId(accountId))), ConsistentRead: true }),
  );
  return Item ? Account.parse(fromItem(Item)) : undefined;
}

export async function putAccount(table: Table, account: Account): Promise<void> {
  const checked = Account.parse(account);
  await table.client.send(
    new PutItemCommand({ TableName: table.tableName, Item: toItem({ ...key.account(checked.accountId), ...indexKey.account(checked.accountId), ...checked }) }),
  );
}

/**
 * The operator's list of accounts, by account id, a page at a time through gsi1 (no scan).
 * `startAfter` is the last account id of the previous page. Accounts saved before the index
 * existed appear once they are saved again.
 */
export async function listAccounts(table: Table, options: { limit: number; startAfter?: string }): Promise<{ accounts: Account[]; lastAccountId?: string }> {
  const page = await table.client.send(
    new QueryCommand({
      TableName: table.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :accounts',
      ExpressionAttributeValues: toItem({ ':accounts': indexKey.accountsLookup().gsi1pk }),
      Limit: options.limit,
      ...(options.startAfter === undefined
        ? {}
        : { ExclusiveStartKey: toItem({ ...key.account(checkAccountId(options.startAfter)), ...indexKey.account(options.startAfter) }) }),
    }),
  );
  const lastAccountId = page.LastEvaluatedKey ? fromItem(page.LastEvaluatedKey).gsi1sk : undefined;
  return {
    accounts: (page.Items ?? []).map((item) => Account.parse(fromItem(item))),
    ...(typeof lastAccountId === 'string' ? { lastAccountId } : {}),
  };
}

/** The operator's switch for the account's Integrations section. Undefined if there is no such account. */
export async function setIntegrationsEnabled(
  table: Table,
  accountId: string,
  enabled: boolean,
  at: Date = new Date(),
): Promise<Account | undefined> {
  try {
    const { Attributes } = await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: toItem(key.account(checkAccountId(accountId))),
        UpdateExpression: 'SET integrationsEnabled = :enabled, updatedAt = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: toItem({ ':enabled': enabled, ':at': at.toISOString() }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? Account.parse(fromItem(Attributes)) : undefined;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}
