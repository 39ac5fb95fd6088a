import { GetItemCommand, UpdateItemCommand } from './table-client';
import { parseConnectionRateKey, type RateBucketState, type RateBuckets } from '../http/rate-budget';
import { quotaDecision, type QuotaDecision, type QuotaKind, type QuotaRate } from '../tenants/quotas';
import { key } from './table';
import { checkAccountId, checkConnector, fromItem, isConditionalCheckFailed, toItem, type Table } from './table-access';

/**
 * Connections' shared rate buckets in the table (the budget's logic is in shared/http/rate-budget.ts).
 * Each reservation is one conditional UpdateItem: DynamoDB cannot compute max(tat, now) in an
 * update, so it is tried as "tat is ahead of now: push it on", and when that condition fails (the
 * connection was idle), "start from now"; a lost race between the two just tries again.
 */

const bucketsOfTable = new WeakMap<Table, RateBuckets>();

/**
 * The table's buckets as a rate budget's (shared/http/rate-budget.ts): every Lambda calling a
 * platform shares them. One object per table, the same at every call: a process keeps one budget
 * per connection and buckets (`rateBudgetFor`), so its sync, webhook worker and Test Connection
 * reserve from one queue, and a warm function does not add a budget with each client it makes.
 */
export function rateBucketsIn(table: Table): RateBuckets {
  let buckets = bucketsOfTable.get(table);
  if (!buckets) {
    buckets = {
      reserveRate: (rateKey, spanMs, now) => reserveRate(table, rateKey, spanMs, now),
      slowRate: (rateKey, change) => slowRate(table, rateKey, change),
    };
    bucketsOfTable.set(table, buckets);
  }
  return buckets;
}

/** A bucket unused for a day is forgotten (TTL): its state only matters while requests flow. */
const KEPT_SECONDS = 86_400;
const MAX_TRIES = 8;

function bucketKey(rateKey: string) {
  const { accountId, connector, endpoint } = parseConnectionRateKey(rateKey);
  return toItem(key.rateBucket(checkAccountId(accountId), checkConnector(connector), endpoint));
}

function stateOf(attributes: Record<string, unknown> | undefined): RateBucketState {
  const item = attributes ?? {};
  const state: RateBucketState = { tat: typeof item.tat === 'number' ? item.tat : 0 };
  if (typeof item.slowedTo === 'number') state.slowedTo = item.slowedTo;
  if (typeof item.slowedAt === 'number') state.slowedAt = item.slowedAt;
  return state;
}

export async function reserveRate(table: Table, rateKey: string, spanMs: number, now: number): Promise<{ start: number; state: RateBucketState }> {
  const Key = bucketKey(rateKey);
  const expiresAt = Math.floor(now / 1000) + KEPT_SECONDS;
  for (let attempt = 0; attempt < MAX_TRIES; attempt += 1) {
    try {
      const { Attributes } = await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key,
          UpdateExpression: 'SET tat = tat + :span, expiresAt = :expires',
          ConditionExpression: 'tat >= :now',
          ExpressionAttributeValues: toItem({ ':span': spanMs, ':now': now, ':expires': expiresAt }),
          ReturnValues: 'ALL_NEW',
        }),
      );
      const state = stateOf(Attributes && fromItem(Attributes));
      return { start: state.tat - spanMs, state };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    try {
      const { Attributes } = await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key,
          UpdateExpression: 'SET tat = :end, expiresAt = :expires',
          ConditionExpression: 'attribute_not_exists(tat) OR tat < :now',
          ExpressionAttributeValues: toItem({ ':end': now + spanMs, ':now': now, ':expires': expiresAt }),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { start: now, state: stateOf(Attributes && fromItem(Attributes)) };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
  throw new Error(`the rate bucket ${rateKey} stayed contended for ${MAX_TRIES} tries`);
}

export async function slowRate(
  table: Table,
  rateKey: string,
  change: { rate: number; now: number; unlessSlowedSince: number; pausedUntil?: number },
): Promise<RateBucketState> {
  const Key = bucketKey(rateKey);
  let state: RateBucketState | undefined;
  const update = async (expression: string, condition: string, values: Record<string, unknown>) => {
    try {
      const { Attributes } = await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key,
          UpdateExpression: expression,
          ConditionExpression: condition,
          ExpressionAttributeValues: toItem(values),
          ReturnValues: 'ALL_NEW',
        }),
      );
      state = stateOf(Attributes && fromItem(Attributes));
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  };
  // Many slices see the same storm: only the first 429 of a window halves the rate.
  await update(
    'SET slowedTo = :rate, slowedAt = :now, tat = if_not_exists(tat, :zero)',
    'attribute_not_exists(slowedAt) OR slowedAt < :since',
    { ':rate': change.rate, ':now': change.now, ':since': change.unlessSlowedSince, ':zero': 0 },
  );
  if (change.pausedUntil !== undefined) {
    await update('SET tat = :until', 'attribute_not_exists(tat) OR tat < :until', { ':until': change.pausedUntil });
  }
  if (state) return state;
  // Another caller had already slowed it down: what it set is the state.
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key, ConsistentRead: true }));
  return stateOf(Item && fromItem(Item));
}

/** A connection's bucket as it stands (undefined before its first request): for the dashboard, tests and benchmarks. */
export async function getRateBucket(table: Table, rateKey: string): Promise<RateBucketState | undefined> {
  const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key: bucketKey(rateKey), ConsistentRead: true }));
  return Item ? stateOf(fromItem(Item)) : undefined;
}

/**
 * Takes `cost` from an account's quota bucket, or refuses (nothing taken) with how long to wait.
 * The same two conditional updates as reserveRate, each also conditioned on staying within the
 * burst; when both fail the item is read once to tell "over the quota" from a lost race.
 */
export async function takeQuota(table: Table, accountId: string, kind: QuotaKind, cost: number, rate: QuotaRate, now: number): Promise<QuotaDecision> {
  const Key = toItem(key.quotaBucket(checkAccountId(accountId), kind));
  const spanMs = (cost * 1000) / rate.ratePerSecond;
  const latest = now + ((rate.burst - cost) * 1000) / rate.ratePerSecond;
  const expiresAt = Math.floor(now / 1000) + KEPT_SECONDS;
  const tried = (UpdateExpression: string, ConditionExpression: string, values: Record<string, unknown>) =>
    table.client
      .send(new UpdateItemCommand({ TableName: table.tableName, Key, UpdateExpression, ConditionExpression, ExpressionAttributeValues: toItem({ ...values, ':expires': expiresAt }) }))
      .then(() => true)
      .catch((error: unknown) => {
        if (isConditionalCheckFailed(error)) return false;
        throw error;
      });
  if (cost > rate.burst) return quotaDecision(now, now, cost, rate);
  for (let attempt = 0; attempt < MAX_TRIES; attempt += 1) {
    if (await tried('SET tat = tat + :span, expiresAt = :expires', 'tat >= :now AND tat <= :latest', { ':span': spanMs, ':now': now, ':latest': latest })) return { allowed: true };
    if (await tried('SET tat = :end, expiresAt = :expires', 'attribute_not_exists(tat) OR tat < :now', { ':end': now + spanMs, ':now': now })) return { allowed: true };
    const { Item } = await table.client.send(new GetItemCommand({ TableName: table.tableName, Key, ConsistentRead: true }));
    const decision = quotaDecision(stateOf(Item && fromItem(Item)).tat, now, cost, rate);
    if (!decision.allowed) return decision;
  }
  // Contended past every try: the account is evidently busy; ask it to come back in a second.
  return { allowed: false, retryAfterMs: 1000 };
}
