import * as z from 'zod/mini';
import { randomUUID } from 'node:crypto';
import type { ConnectorPlatform } from '../connections/connector';
import type { ConnectionProblem } from '../connections/connector-platform';
import type { ConnectorName } from '../connectors';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { SyncCheckpoint, SyncCounts, SyncRetryState } from '../store/items';
import { PlatformError } from '../http/platform-error';
import { recordMetric } from '../metrics/gateway-metrics';
import { recordPlace, type RecordPlace } from '../store/record-layout';
import { SyncRunLostError } from '../store/store';
import { modeForNewRun, nextWatermark, startingPoint, watermarkOf, type RunCursor } from './sync-decisions';
import { pageSlices, PagingStopped, type PagingOutcome } from './page-slices';
import { retryAfterFailure } from './sync-retry';
import { pagesAwaitListing, storedVersionsIn, sweepFromStore, SweepInMemory, sweepsInMemory } from './deletion-sweep';
import * as store from '../store/store';

export type SyncRunResult =
  | { outcome: 'finished'; mode: 'full' | 'incremental'; pages: number; counts: SyncCounts }
  | { outcome: 'continued'; pages: number; runId: string }
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'failed'; problem: ConnectionProblem; retry: boolean; retryState?: SyncRetryState };

export interface SyncRunOptions {
  /** When the invocation must hand over to a continuation job (epoch ms): the Lambda's time budget. */
  deadline?: number;
  /** Pages per invocation before handing over; bounds one invocation's work. */
  maxPages?: number;
  /** How long a claim holds between checkpoint writes; a killed run's claim lapses after it. */
  leaseSeconds?: number;
  /** Called after each checkpoint save with the run's pages so far (benchmarks use it to stop a run as a kill would). */
  afterPage?: (pages: number) => void | Promise<void>;
  /** Ids the deletion sweep holds at a time, in memory or from the store (bounds its memory). Default SWEEP_CHUNK_IDS. */
  sweepChunk?: number;
  /** Most slices of the listing in flight at once (default MAX_SLICES); 1 pages it as one listing. */
  maxSlices?: number;
  /** At most one checkpoint save per this long while pages flow (default CHECKPOINT_EVERY_MS); 0: after every page. */
  checkpointEveryMs?: number;
  /** The queue message carrying the job: named on the checkpoint if this failure dead-letters it. */
  messageId?: string;
}

/** The deletion sweep holds this many stored ids at a time (about 10 MB), however many records the object has. */
export const SWEEP_CHUNK_IDS = 100_000;

const seconds = (iso: string | undefined, fallback: number) => (iso ? Math.floor(Date.parse(iso) / 1000) : fallback);

/**
 * Runs one sync job: one data object of one connection, from its checkpoint. The listing is paged
 * in slices side by side (shared/sync/page-slices.ts); every page is written (only what changed)
 * before the checkpoint moves past it, so a run stopped anywhere resumes every slice at its last
 * saved page. A failure keeps the cursor, records the reason on the checkpoint and the connection's
 * health, and says whether a retry can help.
 */
export async function runSyncJob(
  gateway: Gateway,
  platforms: Readonly<Record<string, ConnectorPlatform>>,
  job: SyncJob,
  log: Logger,
  options: SyncRunOptions = {},
): Promise<SyncRunResult> {
  const { accountId, connector, object } = job;
  const { table } = gateway;
  const skipped = (reason: string): SyncRunResult => {
    log.info('sync job skipped', { reason });
    return { outcome: 'skipped', reason };
  };

  const connection = await store.getConnection(table, accountId, connector);
  if (!connection) return skipped('the connection was disconnected');
  // The operator's switch stops an account's syncs too, not only its dashboard section.
  if ((await store.getAccount(table, accountId))?.integrationsEnabled === false) return skipped("the account's Integrations are switched off");
  const platform = platforms[connector];
  if (!platform) return skipped(`the ${connector} connector has no scheduled sync`);
  const settings = z.parse(platform.settings, connection.syncSettings);
  if (!settings.dataObjects.includes(object)) return skipped(`${object} is not among the connection's data objects`);
  // A retry continues a run that was allowed to start (on a Webhooks-only connection, a manual one).
  if (settings.method === 'webhooks' && job.trigger !== 'manual' && job.trigger !== 'retry') return skipped('the sync method is Webhooks only');

  const now = () => new Date(gateway.now());
  const leaseSeconds = options.leaseSeconds ?? 120;
  const runId = job.runId ?? randomUUID();
  const previous = await store.getSyncCheckpoint(table, accountId, connector, object);
  const mode = job.full ? 'full' : modeForNewRun(previous, Math.floor(gateway.now() / 1000));
  let checkpoint: SyncCheckpoint | undefined = await store.startSyncRun(table, 
    accountId,
    connector,
    object,
    { runId, now: now(), leaseSeconds, mode },
    { current: previous },
  );
  if (!checkpoint) return skipped('another run of this sync is in progress');

  const client = platform.client({
    accountId,
    env: gateway.env,
    config: connection.config,
    credentials: await gateway.vault.open({ accountId, connector }, connection.credentials),
    // The connection's rate budget lives in the table: every Lambda calling this platform account shares it.
    rateBuckets: store.rateBucketsIn(table),
  });
  const source = platform.sync.source(object, client, settings);
  const keeps = source.keeps?.bind(source) ?? (() => true);
  let point: RunCursor = startingPoint(checkpoint);
  const counts: SyncCounts = { ...checkpoint.counts };
  const runStartedAt = seconds(checkpoint.lastRunStartedAt, Math.floor(gateway.now() / 1000));
  let pages = 0;
  log = log.with({ runId, mode: point.window.mode, resumed: point.pageIndex > 0 });
  // What each page of a full run saw, kept with the run (not in memory) so the deletion sweep is
  // complete even when the run spans several invocations.
  const seenScope = { accountId, connector, object, run: checkpoint.lastRunStartedAt ?? runId };
  const SEEN_KEPT_SECONDS = 8 * 24 * 60 * 60;
  // A full run starting afresh sweeps in memory, reading the stored ids while its pages are fetched.
  const sweepChunk = options.sweepChunk ?? SWEEP_CHUNK_IDS;
  // Where the object's records are, in the connection's layout (shared/store/record-layout.ts).
  const place = recordPlace(connection, object);
  const sweepInMemory = sweepsInMemory(point, watermarkOf(checkpoint)?.listing, sweepChunk) ? new SweepInMemory(storedVersionsIn(table), place, sweepChunk) : undefined;

  try {
    let outcome: PagingOutcome;
    try {
      outcome = await pageSlices(
        {
          table,
          place,
          source,
          keeps,
          pace: () => client.pace?.(source.listing),
          // API Direct: webhooks are not applied, so this run (the only one holding the checkpoint) is
          // the records' only writer, and its compared pages can go in unconditional batches.
          batchWrites: settings.method === 'api',
          seenScope,
          seenExpiresAt: () => Math.floor(gateway.now() / 1000) + SEEN_KEPT_SECONDS,
          ...(sweepInMemory ? { inMemory: sweepInMemory, awaitListing: pagesAwaitListing(watermarkOf(checkpoint)?.listing) } : {}),
          runStartedAt,
          ...(point.window.mode === 'full' && watermarkOf(checkpoint)?.listing ? { previousListing: watermarkOf(checkpoint)!.listing! } : {}),
          now: () => gateway.now(),
          log,
          save: async (saved, savedCounts) => {
            checkpoint = await store.putSyncCheckpoint(table, 
              { ...checkpoint!, mode: saved.window.mode, cursor: saved, counts: savedCounts },
              { now: now(), leaseSeconds },
            );
          },
          ...(options.afterPage ? { afterSave: options.afterPage } : {}),
          mayFetch: (fetched) => fetched < (options.maxPages ?? Infinity) && gateway.now() < (options.deadline ?? Infinity),
          ...(options.maxSlices === undefined ? {} : { maxSlices: options.maxSlices }),
          ...(options.checkpointEveryMs === undefined ? {} : { checkpointEveryMs: options.checkpointEveryMs }),
        },
        point,
        counts,
      );
    } catch (error) {
      if (!(error instanceof PagingStopped)) throw error;
      point = error.point;
      pages = error.pages;
      throw error.error;
    }
    point = outcome.point;
    pages = outcome.pages;

    if (!outcome.complete) {
      await gateway.queues.syncJobs.send([{ ...job, runId, requestedAt: now().toISOString() }]);
      log.info('sync job continues in a new invocation', { pages, counts });
      return { outcome: 'continued', pages, runId };
    }

    if (point.window.mode === 'full') {
      // The exact start: a record synced earlier in the same second was not written by this run.
      const startedAt = new Date(checkpoint.lastRunStartedAt ?? runStartedAt * 1000);
      counts.deleted += await sweepDeleted(gateway, place, seenScope, { startedAt, sweepChunk, ...(sweepInMemory ? { inMemory: sweepInMemory } : {}) });
    }
    const finishedAt = now().toISOString();
    checkpoint = await store.finishSyncRun(table, {
      ...checkpoint,
      mode: point.window.mode,
      counts,
      // A full run's profile lets the next full run cut its slices at the start.
      watermark: nextWatermark(watermarkOf(checkpoint), point.window, runStartedAt, point.profile),
      lastRunFinishedAt: finishedAt,
      lastSucceededAt: finishedAt,
      lastError: undefined,
    });
    if (connection.health.state !== 'healthy') {
      await store.updateConnectionHealth(table, accountId, connector, { state: 'healthy', checkedAt: finishedAt });
    }
    log.info('sync job finished', { pages, counts });
    recordMetric.syncRun(connector, 'finished');
    recordMetric.recordsSynced(connector, object, counts.created + counts.updated + counts.deleted);
    return { outcome: 'finished', mode: point.window.mode, pages, counts };
  } catch (error) {
    if (error instanceof SyncRunLostError) return skipped('another run took this sync over');
    return recordFailure(gateway, platform, error, {
      checkpoint: { ...checkpoint, mode: point.window.mode, cursor: point, counts },
      pages,
      log,
      ...(options.messageId ? { messageId: options.messageId } : {}),
    });
  }
}

/**
 * The deletion sweep of a complete full run: records stored before it started that it did not
 * list are marked deleted (from the ids it held in memory, or those its pages saw, read back).
 */
async function sweepDeleted(
  gateway: Gateway,
  place: RecordPlace,
  seenScope: { accountId: string; connector: ConnectorName; object: string; run: string },
  sweep: { startedAt: Date; sweepChunk: number; inMemory?: SweepInMemory },
): Promise<number> {
  const deletedAt = new Date(gateway.now());
  // A record written since the run started (a webhook's) is new, not missing.
  const markDeleted = (id: string) => store.markRecordDeleted(gateway.table, place, id, { deletedAt, syncedBefore: sweep.startedAt });
  const missing = await sweep.inMemory?.missing();
  if (!missing) return sweepFromStore(gateway.table, place, seenScope, sweep.sweepChunk, markDeleted);
  let deleted = 0;
  for (const id of missing) if (await markDeleted(id)) deleted += 1;
  return deleted;
}

/**
 * A failed run keeps its place: the reason goes on the checkpoint (with its next try, when time can
 * fix it) and on the connection's health.
 */
async function recordFailure(
  gateway: Gateway,
  platform: ConnectorPlatform,
  error: unknown,
  run: { checkpoint: SyncCheckpoint; pages: number; log: Logger; messageId?: string },
): Promise<SyncRunResult> {
  const { checkpoint, log } = run;
  const { accountId, connector } = checkpoint;
  const problem = platform.problem(error);
  const at = new Date(gateway.now()).toISOString();
  // Retry what time can fix (rate limits, outages); not a page the platform will answer the same
  // way again (an unreadable record): on the FIFO queue a doomed retry would hold up the connection.
  const retry = problem.health === 'degraded' && !(error instanceof PlatformError && !error.retryable);
  // When the next try is (sync-retry.ts); a failure only the user can fix ends the series.
  const planned = retry ? retryAfterFailure(checkpoint.retry, gateway.now()) : undefined;
  const retryState = planned?.deadLetteredAt && run.messageId ? { ...planned, deadLetterMessageId: run.messageId } : planned;
  const recorded = await store.pauseSyncRun(gateway.table, { ...checkpoint, lastError: { message: problem.reason, at }, retry: retryState }).then(
    () => true,
    (pauseError: unknown) => {
      log.warn('could not record the failure on the checkpoint', { error: pauseError });
      return false;
    },
  );
  await store.updateConnectionHealth(gateway.table, accountId, connector, { state: problem.health, checkedAt: at, reason: problem.reason, remedy: problem.remedy });
  recordMetric.syncRun(connector, 'failed');
  log.warn('sync job failed', { pages: run.pages, reason: problem.reason, health: problem.health, retry, nextAttemptAt: retryState?.nextAttemptAt, error });
  // Without a recorded next try, the caller leaves the retry to the queue.
  return { outcome: 'failed', problem, retry, ...(retryState && recorded ? { retryState } : {}) };
}
