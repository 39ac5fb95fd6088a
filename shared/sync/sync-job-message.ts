import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import { syncRunRecorder } from '../history/record-history';
import { runSyncJob, type SyncRunOptions } from './run-sync-job';
import { retryJobShouldRun } from './sync-retry';
import * as store from '../store/store';

/** The queue message a sync job came in. */
export interface SyncJobMessage {
  messageId: string;
  receiptHandle: string;
  receiveCount: number;
}

/** Thrown to give the message back to the queue (the consumer reports it as a batch item failure). */
export class SyncJobReturned extends Error {
  override readonly name = 'SyncJobReturned';
}

/**
 * One sync job message, with the retries of shared/sync/sync-retry.ts around the run:
 * - a transient failure records its next try on the checkpoint and the message is done (the
 *   retry schedule enqueues the next try), so the connection's FIFO group is not held up;
 * - past the retry horizon the message is given back at once (visibility 0) and every redelivery
 *   fails at once without calling the platform, so it reaches the dead-letter queue (alarmed) in
 *   seconds, where `npm run replay-dlq` can send it back after a fix;
 * - a failure whose next try could not be recorded is given back to the queue's own retries.
 */
export async function processSyncJob(
  gateway: Gateway,
  platforms: Parameters<typeof runSyncJob>[1],
  job: SyncJob,
  message: SyncJobMessage,
  log: Logger,
  options: Pick<SyncRunOptions, 'deadline'> = {},
): Promise<void> {
  const checkpoint = message.receiveCount > 1 || job.trigger === 'retry' ? await store.getSyncCheckpoint(gateway.table, job.accountId, job.connector, job.object) : undefined;
  if (message.receiveCount > 1 && checkpoint?.retry?.deadLetterMessageId === message.messageId) {
    await returnNow(gateway, message);
    throw new SyncJobReturned('this sync job was dead-lettered after its retries; on its way to the dead-letter queue');
  }
  if (job.trigger === 'retry' && !retryJobShouldRun(checkpoint, gateway.now())) {
    log.info('sync retry skipped: no try is due (a duplicate, or a run finished meanwhile)');
    return;
  }

  const history = syncRunRecorder(gateway, platforms, job);
  const result = await runSyncJob(gateway, history.platforms, job, log, { ...options, messageId: message.messageId });
  await history.record(result, log);
  if (result.outcome !== 'failed' || !result.retry) return;
  const state = result.retryState;
  if (!state) throw new SyncJobReturned(`sync failed and its next try could not be recorded; the queue retries it: ${result.problem.reason}`);
  if (state.deadLetteredAt) {
    log.error('sync failed past its retry horizon; dead-lettering the job', { failures: state.failures, firstFailedAt: state.firstFailedAt, reason: result.problem.reason });
    await returnNow(gateway, message);
    throw new SyncJobReturned(`sync failed ${state.failures} times since ${state.firstFailedAt}: ${result.problem.reason}`);
  }
  log.info('sync will be retried', { failures: state.failures, nextAttemptAt: state.nextAttemptAt });
}

/** The message's next receive comes at once (and, at maxReceiveCount, moves it to the dead-letter queue). */
async function returnNow(gateway: Gateway, message: SyncJobMessage): Promise<void> {
  await gateway.queues.syncJobs.changeVisibility?.(message.receiptHandle, 0);
}
