import * as z from 'zod/mini';
import type { SyncCheckpoint } from '../store/items';

/** One data object's sync, as the dashboard shows it. */
export const SyncStatus = z
  .object({
    object: z.string(),
    state: z
      .enum(['never_run', 'running', 'retrying', 'paused_after_failure', 'dead_lettered', 'idle'])
      .check(
        z.describe(
          'retrying: failed on something time fixes, tried again at nextAttemptAt; dead_lettered: still failing after 12 hours of retries, the job is in the dead-letter queue and the next scheduled sync starts again; paused_after_failure: failed on something to fix (see the connection health) or an unreadable answer, resumed by the next sync',
        ),
      ),
    mode: z.enum(['full', 'incremental']),
    lastRunStartedAt: z.optional(z.iso.datetime()),
    lastRunFinishedAt: z.optional(z.iso.datetime()),
    lastSucceededAt: z.optional(z.iso.datetime()),
    lastError: z.optional(z.object({ message: z.string(), at: z.iso.datetime() })),
    nextAttemptAt: z.optional(z.iso.datetime()).check(z.describe('When the failed sync is tried again (within the retry schedule’s 5 minutes after)')),
    failedAttempts: z.optional(z.number().check(z.int(), z.positive())).check(z.describe('Runs that failed in a row, while retrying or dead-lettered')),
    retryingSince: z.optional(z.iso.datetime()).check(z.describe('When the first of those failures happened; retries stop 12 hours after it')),
    deadLetteredAt: z.optional(z.iso.datetime()),
    counts: z.object({ created: z.number(), updated: z.number(), unchanged: z.number(), deleted: z.number() }),
  })
  .register(z.globalRegistry, { id: 'SyncStatus' });
export type SyncStatus = z.infer<typeof SyncStatus>;

export function syncStatusOf(checkpoint: SyncCheckpoint, nowSeconds: number): SyncStatus {
  const running = checkpoint.runId !== undefined && (checkpoint.leaseExpiresAt ?? 0) > nowSeconds;
  const retry = checkpoint.retry;
  const state = running
    ? 'running'
    : retry?.nextAttemptAt
      ? 'retrying'
      : retry?.deadLetteredAt
        ? 'dead_lettered'
        : checkpoint.cursor !== undefined
          ? 'paused_after_failure'
          : checkpoint.lastRunStartedAt
            ? 'idle'
            : 'never_run';
  return {
    object: checkpoint.object,
    state,
    mode: checkpoint.mode,
    counts: checkpoint.counts,
    ...(checkpoint.lastRunStartedAt ? { lastRunStartedAt: checkpoint.lastRunStartedAt } : {}),
    ...(checkpoint.lastRunFinishedAt ? { lastRunFinishedAt: checkpoint.lastRunFinishedAt } : {}),
    ...(checkpoint.lastSucceededAt ? { lastSucceededAt: checkpoint.lastSucceededAt } : {}),
    ...(checkpoint.lastError ? { lastError: checkpoint.lastError } : {}),
    ...(retry ? { failedAttempts: retry.failures, retryingSince: retry.firstFailedAt } : {}),
    ...(retry?.nextAttemptAt ? { nextAttemptAt: retry.nextAttemptAt } : {}),
    ...(retry?.deadLetteredAt ? { deadLetteredAt: retry.deadLetteredAt } : {}),
  };
}
