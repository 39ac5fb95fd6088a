import { DeleteItemCommand, PutItemCommand } from './table-client';
import { PendingAuthorization } from './items';
import { key } from './table';
import { fromItem, isConditionalCheckFailed, toItem, type Table } from './table-access';

/** Stores an OAuth authorization in flight under its `state`; a state is never reused. */
export async function putPendingAuthorization(table: Table, pending: PendingAuthorization): Promise<void> {
  const { state, ...stored } = PendingAuthorization.parse(pending);
  await table.client.send(
    new PutItemCommand({
      TableName: table.tableName,
      Item: toItem({ ...key.oauthState(state), ...stored }),
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/**
 * Takes a pending authorization exactly once: the delete both reads and consumes it, so two
 * callbacks with the same state cannot both succeed. Undefined if unknown, already taken, or
 * expired (checked here because TTL deletion lags by up to days).
 */
export async function takePendingAuthorization(
  table: Table,
  state: string,
  now: Date,
  options: { connector?: string } = {},
): Promise<PendingAuthorization | undefined> {
  // A state comes from the browser: anything that cannot be one of ours is simply unknown.
  if (state.length === 0 || state.length > MAX_STATE_LENGTH) return undefined;
  try {
    const { Attributes } = await table.client.send(
      new DeleteItemCommand({
        TableName: table.tableName,
        Key: toItem(key.oauthState(state)),
        // Another connector's state is left alone: its own callback may still finish it.
        ConditionExpression: options.connector ? 'attribute_exists(pk) AND connector = :connector' : 'attribute_exists(pk)',
        ...(options.connector ? { ExpressionAttributeValues: toItem({ ':connector': options.connector }) } : {}),
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!Attributes) return undefined;
    const pending = PendingAuthorization.parse({ ...fromItem(Attributes), state });
    return pending.expiresAt > Math.floor(now.getTime() / 1000) ? pending : undefined;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

const MAX_STATE_LENGTH = 512;
