import type { AttributeValue, QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, QueryCommand } from './table-client';
import type { ConnectorName } from '../connectors';
import { DataObjectName, SyncCheckpoint } from './items';
import { indexKey, key } from './table';
import { batchWriteAll, checkAccountId, checkConnector, fromItem, queryAll, toItem, writeIfCondition, type Table } from './table-access';

/**
 * A sync run's checkpoint was taken over (its lease lapsed and another run claimed it) or written
 * by a duplicate of the same run. The run must stop: the other one carries on from the checkpoint.
 */
export class SyncRunLostError extends Error {
  override readonly name = 'SyncRunLostError';
}

export type SyncClaim = {
  runId: string;
  now: Date;
  /** How long the claim holds without a checkpoint write; longer than one page takes, shorter than a retry. */
  leaseSeconds: number;
  /** For a fresh run only: force a full sync (e.g. to detect deletions). Default: incremental once a watermark exists. */
  mode?: SyncCheckpoint['mode'];
};

/**
 * Decides whether a run may take the checkpoint, and what it looks like once taken.
 * Undefined while another run holds an unexpired lease. A checkpoint with a cursor is resumed
 * (a crashed run's work is kept); without one, a fresh run starts with zero counts.
 */
export function claimSyncCheckpoint(
  current: SyncCheckpoint | undefined,
  scope: { accountId: string; connector: ConnectorName; object: string },
  claim: SyncClaim,
): SyncCheckpoint | undefined {
  const nowSeconds = Math.floor(claim.now.getTime() / 1000);
  const heldByAnother =
    current?.runId !== undefined && current.runId !== claim.runId && (current.leaseExpiresAt ?? 0) > nowSeconds;
  if (heldByAnother) return undefined;

  const leaseExpiresAt = nowSeconds + claim.leaseSeconds;
  if (current?.cursor !== undefined) return { ...current, runId: claim.runId, leaseExpiresAt };
  return {
    accountId: scope.accountId,
    connector: scope.connector,
    object: scope.object,
    ...current,
    runId: claim.runId,
    leaseExpiresAt,
    mode: claim.mode ?? (current?.watermark ? 'incremental' : 'full'),
    counts: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
    lastRunStartedAt: claim.now.toISOString(),
    version: current?.version ?? 0,
  };
}

export async function getSyncCheckpoint(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  object: string,
): Promise<SyncCheckpoint | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: toItem(key.syncCheckpoint(checkAccountId(accountId), checkConnector(connector), DataObjectName.parse(object))),
      ConsistentRead: true,
    }),
  );
  return Item ? SyncCheckpoint.parse(fromItem(Item)) : undefined;
}

/** Takes the checkpoint for a run; undefined when another run holds it (the job should retry later). */
export async function startSyncRun(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  object: string,
  claim: SyncClaim,
  /** The checkpoint as the caller just read it, to save a second read; read here when absent. */
  read?: { current: SyncCheckpoint | undefined },
): Promise<SyncCheckpoint | undefined> {
  const current = read ? read.current : await getSyncCheckpoint(table, accountId, connector, object);
  const claimed = claimSyncCheckpoint(current, { accountId, connector, object }, claim);
  if (!claimed) return undefined;
  // Two runs claiming at once both read the same version; only one write lands.
  return writeCheckpoint(table, claimed, current?.version);
}

/**
 * Saves progress after a page: the checkpoint as the run last read or wrote it, with the cursor
 * advanced. Renews the lease. Throws SyncRunLostError if the run no longer owns the checkpoint.
 */
export async function putSyncCheckpoint(
  table: Table,
  checkpoint: SyncCheckpoint,
  lease: { now: Date; leaseSeconds: number },
): Promise<SyncCheckpoint> {
  const leaseExpiresAt = Math.floor(lease.now.getTime() / 1000) + lease.leaseSeconds;
  return ownedWrite(table, { ...checkpoint, leaseExpiresAt });
}

/**
 * Ends a run: clears the cursor, the claim and any retry. Set `watermark`, `lastRunFinishedAt`,
 * `lastSucceededAt` or `lastError` on the checkpoint first.
 */
export async function finishSyncRun(table: Table, checkpoint: SyncCheckpoint): Promise<SyncCheckpoint> {
  // A run that finished ends any series of retries.
  return ownedWrite(table, { ...checkpoint, runId: undefined, leaseExpiresAt: undefined, cursor: undefined, retry: undefined });
}

/**
 * Stops a run that failed, keeping its cursor and counts: the claim is released so the retry (a
 * new run) resumes from the last saved page at once instead of waiting for the lease to lapse.
 */
export async function pauseSyncRun(table: Table, checkpoint: SyncCheckpoint): Promise<SyncCheckpoint> {
  return ownedWrite(table, { ...checkpoint, runId: undefined, leaseExpiresAt: undefined });
}

/**
 * Forgets where a connector's syncs stand (reconnected to another key or site, filters widened,
 * or disconnected): the next run is a full sync, and its sweep removes what is no longer there.
 */
export async function deleteSyncCheckpoints(table: Table, accountId: string, connector: ConnectorName): Promise<number> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.account(checkAccountId(accountId)).pk, ':prefix': `SYNC#${checkConnector(connector)}#` }),
    ProjectionExpression: 'pk, sk',
  });
  for (const item of items) {
    await table.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: toItem({ pk: item.pk, sk: item.sk }) }));
  }
  return items.length;
}

/**
 * Remembers the ids pages of a full sync saw, so the run's deletion sweep knows every record it
 * listed even when the run spanned several invocations (a kill, a retry, a continuation). Each page
 * is one item, named by its number in the run (the engine numbers a slice's pages apart from other
 * slices'), so a page listed again after a kill overwrites what it saved before. 25 pages per
 * BatchWriteItem.
 */
export async function putSeenPages(
  table: Table,
  scope: { accountId: string; connector: ConnectorName; object: string; run: string },
  pages: ReadonlyArray<{ page: number; ids: readonly string[] }>,
  expiresAt: number,
): Promise<void> {
  const items = pages.map(({ page, ids }) => ({
    PutRequest: { Item: toItem({ ...key.seenPage(checkAccountId(scope.accountId), checkConnector(scope.connector), DataObjectName.parse(scope.object), scope.run, page), ids: [...ids], expiresAt }) },
  }));
  await batchWriteAll(table, items, { concurrency: 4 });
}

/**
 * Which of `candidates` a run's pages saw. Reads the run's seen pages one query page at a time and
 * keeps only matches, so memory holds the candidates and one query page, however many records the
 * run listed (the deletion sweep asks for a bounded chunk of stored ids at a time).
 */
export async function seenAmong(
  table: Table,
  scope: { accountId: string; connector: ConnectorName; object: string; run: string },
  candidates: ReadonlySet<string>,
): Promise<Set<string>> {
  const { pk } = key.seenPage(checkAccountId(scope.accountId), checkConnector(scope.connector), DataObjectName.parse(scope.object), scope.run, 0);
  const seen = new Set<string>();
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page: QueryCommandOutput = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: toItem({ ':pk': pk }),
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      for (const id of (fromItem(item).ids as string[] | undefined) ?? []) if (candidates.has(id)) seen.add(id);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return seen;
}

export async function listSyncCheckpoints(table: Table, accountId: string): Promise<SyncCheckpoint[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: toItem({ ':pk': key.account(checkAccountId(accountId)).pk, ':prefix': 'SYNC#' }),
    ConsistentRead: true,
  });
  return items.map((item) => SyncCheckpoint.parse(item));
}

/** Writes on behalf of the run named in the stored item, at the version it last saw. */
async function ownedWrite(table: Table, checkpoint: SyncCheckpoint): Promise<SyncCheckpoint> {
  const runId = checkpoint.runId;
  const written = await writeCheckpoint(table, checkpoint, checkpoint.version);
  if (!written) {
    throw new SyncRunLostError(
      `Sync run ${runId ?? '(none)'} no longer owns the ${checkpoint.connector} ${checkpoint.object} checkpoint of account ${checkpoint.accountId}`,
    );
  }
  return written;
}

/**
 * Every checkpoint across accounts whose next retry is due by `now`, oldest first: what the retry
 * schedule enqueues. Through gsi1, so only waiting retries are read. A checkpoint leaves the index
 * when a run claims it, and comes back with the next try if that run fails again.
 */
export async function listDueSyncRetries(table: Table, now: Date): Promise<SyncCheckpoint[]> {
  const items = await queryAll(table, {
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :retries AND gsi1sk <= :due',
    // `~` sorts after every character of the rest of the key: everything due at `now` is included.
    ExpressionAttributeValues: toItem({ ':retries': indexKey.syncRetryLookup().gsi1pk, ':due': `${now.toISOString()}~` }),
  });
  return items.map((item) => SyncCheckpoint.parse(item));
}

/** A waiting retry (no run holds the checkpoint) is indexed by when it is due. */
function retryIndex(checkpoint: SyncCheckpoint): Record<string, string> {
  const next = checkpoint.retry?.nextAttemptAt;
  if (next === undefined || checkpoint.runId !== undefined) return {};
  return indexKey.syncRetry(next, checkpoint.accountId, checkpoint.connector, checkpoint.object);
}

/**
 * Conditional put at `expectedVersion` (undefined: the item must not exist). The owning run is
 * implied: whoever claimed the checkpoint bumped the version, so a stale run's version no longer matches.
 */
async function writeCheckpoint(
  table: Table,
  checkpoint: SyncCheckpoint,
  expectedVersion: number | undefined,
): Promise<SyncCheckpoint | undefined> {
  const next = SyncCheckpoint.parse({ ...checkpoint, version: (expectedVersion ?? 0) + 1 });
  const written = await writeIfCondition(() =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: toItem({ ...key.syncCheckpoint(next.accountId, next.connector, next.object), ...retryIndex(next), ...next }),
        ConditionExpression: expectedVersion === undefined ? 'attribute_not_exists(pk)' : 'version = :expected',
        ExpressionAttributeValues: expectedVersion === undefined ? undefined : toItem({ ':expected': expectedVersion }),
      }),
    ),
  );
  return written ? next : undefined;
}
