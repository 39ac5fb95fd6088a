import type { SyncCheckpoint, SyncRetryState } from '../store/items';

/**
 * How a sync job that failed on something time fixes (5xx, 429, timeouts, a dropped connection)
 * is tried again. The platform client has already retried each call within seconds; a job that
 * still fails meets an outage, so the next tries wait longer each time: 5, 10, 20, 40, 80, 160
 * minutes, then every 3 hours, for 12 hours from the first failure. A job still failing then is
 * dead-lettered (the dead-letter queue's alarm tells a person) and the next scheduled run starts
 * a new series.
 *
 * The sync queue is FIFO (one group per connection), and FIFO queues cannot delay one message; a
 * message kept invisible would hold up the connection's other jobs for hours. So a failed job
 * leaves the queue, its checkpoint records the next try (indexed), and the retry schedule
 * (every 5 minutes) enqueues the jobs whose next try has come.
 */
export const SYNC_RETRY = {
  firstDelayMs: 5 * 60_000,
  factor: 2,
  maxDelayMs: 3 * 60 * 60_000,
  horizonMs: 12 * 60 * 60_000,
  /** How often the retry schedule looks for due retries (lib/sync.ts, local/local-scheduler.ts). */
  scheduleEveryMs: 5 * 60_000,
} as const;

/** The wait after the n-th failure in a row (n from 1). */
export function retryDelayMs(failures: number, policy: typeof SYNC_RETRY = SYNC_RETRY): number {
  return Math.min(policy.firstDelayMs * policy.factor ** (failures - 1), policy.maxDelayMs);
}

/**
 * The retry state after one more transient failure at `nowMs`: the next try, or, past the
 * horizon, dead-lettered. A series that was dead-lettered before starts over.
 */
export function retryAfterFailure(previous: SyncRetryState | undefined, nowMs: number, policy: typeof SYNC_RETRY = SYNC_RETRY): SyncRetryState {
  const now = new Date(nowMs).toISOString();
  const series = previous && !previous.deadLetteredAt ? previous : undefined;
  const failures = (series?.failures ?? 0) + 1;
  const firstFailedAt = series?.firstFailedAt ?? now;
  const next = nowMs + retryDelayMs(failures, policy);
  if (next - Date.parse(firstFailedAt) > policy.horizonMs) return { failures, firstFailedAt, deadLetteredAt: now };
  return { failures, firstFailedAt, nextAttemptAt: new Date(next).toISOString() };
}

/**
 * Whether a `retry` job should run: its try is due, or it was dead-lettered and an operator
 * replayed it. A duplicate (the try not due yet) or one overtaken by a finished run is skipped.
 */
export function retryJobShouldRun(checkpoint: Pick<SyncCheckpoint, 'retry'> | undefined, nowMs: number): boolean {
  const retry = checkpoint?.retry;
  if (retry?.deadLetteredAt) return true;
  return retry?.nextAttemptAt !== undefined && Date.parse(retry.nextAttemptAt) <= nowMs;
}

/** When each try happens after a first failure at 0, and when the job is dead-lettered (for docs and tests). */
export function retryTimeline(policy: typeof SYNC_RETRY = SYNC_RETRY): { triesAtMs: number[]; deadLetteredAtMs: number } {
  const triesAtMs: number[] = [];
  let state = retryAfterFailure(undefined, 0, policy);
  while (state.nextAttemptAt) {
    const at = Date.parse(state.nextAttemptAt);
    triesAtMs.push(at);
    state = retryAfterFailure(state, at, policy);
  }
  return { triesAtMs, deadLetteredAtMs: triesAtMs.at(-1) ?? 0 };
}
