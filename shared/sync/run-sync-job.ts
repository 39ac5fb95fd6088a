import { randomUUID } from 'node:crypto';
import type { ConnectionProblem, ConnectorPlatform } from '../connections/connector-platform';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { SyncCheckpoint, SyncCounts, SyncRetryState } from '../store/items';
import { PlatformError } from '../http/platform-error';
import { recordMetric } from '../metrics/gateway-metrics';
import { SyncRunLostError } from '../store/store';
import { FullSyncNeeded, type SyncPage } from './sync-source';
import { cursorAfter, modeForNewRun, nextWatermark, planPage, startingPoint, watermarkOf, type RunCursor } from './sync-decisions';
import { retryAfterFailure } from './sync-retry';

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
  /** Called after each saved page (benchmarks use it to stop a run as a kill would). */
  afterPage?: (pages: number) => void | Promise<void>;
  /** The queue message carrying the job: named on the checkpoint if this failure dead-letters it. */
  messageId?: string;
}


const seconds = (iso: string | undefined, fallback: number) => (iso ? Math.floor(Date.parse(iso) / 1000) : fallback);

/**
 * Runs one sync job: one data object of one connection, page by page from its checkpoint.
 * Every page is written (only what changed) and then checkpointed, so a run stopped anywhere
 * resumes at the last saved page. A failure keeps the cursor, records the reason on the checkpoint
 * and the connection's health, and says whether a retry can help.
 */
export async function runSyncJob(
  gateway: Gateway,
  platforms: Readonly<Record<string, ConnectorPlatform>>,
  job: SyncJob,
  log: Logger,
  options: SyncRunOptions = {},
): Promise<SyncRunResult> {
  const { accountId, connector, object } = job;
  const { store } = gateway;
  const skipped = (reason: string): SyncRunResult => {
    log.info('sync job skipped', { reason });
    return { outcome: 'skipped', reason };
  };

  const connection = await store.getConnection(accountId, connector);
  if (!connection) return skipped('the connection was disconnected');
  const platform = platforms[connector];
  if (!platform) return skipped(`the ${connector} connector has no scheduled sync`);
  const settings = platform.settings.parse(connection.syncSettings);
  if (!settings.dataObjects.includes(object)) return skipped(`${object} is not among the connection's data objects`);
  // A retry continues a run that was allowed to start (on a Webhooks-only connection, a manual one).
  if (settings.method === 'webhooks' && job.trigger !== 'manual' && job.trigger !== 'retry') return skipped('the sync method is Webhooks only');

  const now = () => new Date(gateway.now());
  const leaseSeconds = options.leaseSeconds ?? 120;
  const runId = job.runId ?? randomUUID();
  const previous = await store.getSyncCheckpoint(accountId, connector, object);
  const mode = job.full ? 'full' : modeForNewRun(previous, Math.floor(gateway.now() / 1000));
  let checkpoint: SyncCheckpoint | undefined = await store.startSyncRun(accountId, connector, object, { runId, now: now(), leaseSeconds, mode }, { current: previous });
  if (!checkpoint) return skipped('another run of this sync is in progress');

  const client = platform.client({
    accountId,
    env: gateway.env,
    config: connection.config,
    credentials: await gateway.vault.open({ accountId, connector }, connection.credentials),
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

  try {
    // One page ahead: the next page is fetched while this one is written, so a sync paced by the
    // platform's rate limit spends no extra time on the store. A rejected prefetch is observed
    // only when awaited (after this page's checkpoint is saved).
    const fetchAt = (at: RunCursor) => {
      // The fetch time is the records' syncedAt: the state they show is at least that recent.
      const fetchedAt = now().toISOString();
      const fetching = source.fetchPage(at.window, at.page).then((page) => ({ ...page, fetchedAt }));
      fetching.catch(() => undefined);
      return fetching;
    };
    const budgetLeft = (afterPages: number) => afterPages < (options.maxPages ?? Infinity) && gateway.now() < (options.deadline ?? Infinity);
    let fetching: Promise<SyncPage & { fetchedAt: string }> | undefined = fetchAt(point);
    for (;;) {
      let page: SyncPage & { fetchedAt: string };
      try {
        page = await fetching!;
      } catch (error) {
        if (!(error instanceof FullSyncNeeded) || point.window.mode !== 'incremental') throw error;
        log.warn('incremental window out of the platform’s reach; syncing everything instead');
        point = { window: { mode: 'full' }, pageIndex: 0 };
        fetching = fetchAt(point);
        continue;
      }
      const after = cursorAfter(point, page.next);
      fetching = page.next && budgetLeft(pages + 1) ? fetchAt(after) : undefined;

      const stored = await store.getStoredVersions(accountId, connector, object, [...page.records.map((r) => r.id), ...page.deletedIds]);
      const plan = planPage(page, stored, keeps, page.fetchedAt);
      const knownNew = new Set(plan.writes.filter((write) => !stored.has(write.id)).map((write) => write.id));
      // What a full run saw is saved alongside the page's writes (both before the checkpoint).
      const seenSaved =
        point.window.mode === 'full'
          ? store.putSeenIds(seenScope, point.pageIndex, page.records.filter((record) => keeps(record)).map((record) => record.id), Math.floor(gateway.now() / 1000) + SEEN_KEPT_SECONDS)
          : Promise.resolve();
      const [outcomes] = await Promise.all([store.putRecordsIfChanged(accountId, connector, object, plan.writes, { knownNew }), seenSaved]);
      for (const outcome of outcomes) counts[outcome] += 1;
      counts.unchanged += plan.unchanged;
      for (const { id, sourceVersion } of plan.removals) {
        if (await store.markRecordDeleted(accountId, connector, object, id, { deletedAt: now(), ...(sourceVersion === undefined ? {} : { sourceVersion }) })) {
          counts.deleted += 1;
        }
      }
      point = after;
      pages += 1;
      if (!page.next) break;

      checkpoint = await store.putSyncCheckpoint({ ...checkpoint, mode: point.window.mode, cursor: point, counts }, { now: now(), leaseSeconds });
      await options.afterPage?.(pages);
      if (!fetching) {
        await gateway.queues.syncJobs.send([{ ...job, runId, requestedAt: now().toISOString() }]);
        log.info('sync job continues in a new invocation', { pages, counts });
        return { outcome: 'continued', pages, runId };
      }
    }

    if (point.window.mode === 'full') {
      // The exact start: a record synced earlier in the same second was not written by this run.
      const startedAt = new Date(checkpoint.lastRunStartedAt ?? runStartedAt * 1000);
      counts.deleted += await sweepDeleted(gateway, job, await store.listSeenIds(seenScope), now(), startedAt);
    }
    const finishedAt = now().toISOString();
    checkpoint = await store.finishSyncRun({
      ...checkpoint,
      mode: point.window.mode,
      counts,
      watermark: nextWatermark(watermarkOf(checkpoint), point.window, runStartedAt),
      lastRunFinishedAt: finishedAt,
      lastSucceededAt: finishedAt,
      lastError: undefined,
    });
    if (connection.health.state !== 'healthy') {
      await store.updateConnectionHealth(accountId, connector, { state: 'healthy', checkedAt: finishedAt });
    }
    log.info('sync job finished', { pages, counts });
    recordMetric.syncRun(connector, 'finished');
    recordMetric.recordsSynced(connector, object, counts.created + counts.updated + counts.deleted);
    return { outcome: 'finished', mode: point.window.mode, pages, counts };
  } catch (error) {
    if (error instanceof SyncRunLostError) return skipped('another run took this sync over');
    const problem = platform.problem(error);
    const at = now().toISOString();
    // Retry what time can fix (rate limits, outages); not a page the platform will answer the same
    // way again (an unreadable record): on the FIFO queue a doomed retry would hold up the connection.
    const retry = problem.health === 'degraded' && !(error instanceof PlatformError && !error.retryable);
    // When the next try is (sync-retry.ts); a failure only the user can fix ends the series.
    const planned = retry ? retryAfterFailure(checkpoint.retry, gateway.now()) : undefined;
    const retryState = planned?.deadLetteredAt && options.messageId ? { ...planned, deadLetterMessageId: options.messageId } : planned;
    const recorded = await store
      .pauseSyncRun({ ...checkpoint, mode: point.window.mode, cursor: point, counts, lastError: { message: problem.reason, at }, retry: retryState })
      .then(
        () => true,
        (pauseError: unknown) => {
          log.warn('could not record the failure on the checkpoint', { error: pauseError });
          return false;
        },
      );
    await store.updateConnectionHealth(accountId, connector, { state: problem.health, checkedAt: at, reason: problem.reason, remedy: problem.remedy });
    recordMetric.syncRun(connector, 'failed');
    log.warn('sync job failed', { pages, reason: problem.reason, health: problem.health, retry, nextAttemptAt: retryState?.nextAttemptAt, error });
    // Without a recorded next try, the caller leaves the retry to the queue.
    return { outcome: 'failed', problem, retry, ...(retryState && recorded ? { retryState } : {}) };
  }
}

/**
 * After a complete full sync (however many invocations it took): records still
 * stored but no longer listed were deleted on the platform (or left the settings' filter).
 */
async function sweepDeleted(gateway: Gateway, job: SyncJob, seen: ReadonlySet<string>, now: Date, runStartedAt: Date): Promise<number> {
  let deleted = 0;
  let startKey: string | undefined;
  do {
    const page = await gateway.store.listRecords(job.accountId, job.connector, job.object, { limit: 500, ...(startKey ? { startKey } : {}) });
    for (const record of page.records) {
      // A record written since the run started (a webhook's) is new, not missing.
      if (seen.has(record.id)) continue;
      if (await gateway.store.markRecordDeleted(job.accountId, job.connector, job.object, record.id, { deletedAt: now, syncedBefore: runStartedAt })) deleted += 1;
    }
    startKey = page.nextStartKey;
  } while (startKey);
  return deleted;
}
