import * as z from 'zod';
import type { SyncCheckpoint } from '../store/items';

/** One data object's sync, as the dashboard shows it. */
export const SyncStatus = z
  .object({
    object: z.string(),
    state: z.enum(['never_run', 'running', 'paused_after_failure', 'idle']),
    mode: z.enum(['full', 'incremental']),
    lastRunStartedAt: z.iso.datetime().optional(),
    lastRunFinishedAt: z.iso.datetime().optional(),
    lastSucceededAt: z.iso.datetime().optional(),
    lastError: z.object({ message: z.string(), at: z.iso.datetime() }).optional(),
    counts: z.object({ created: z.number(), updated: z.number(), unchanged: z.number(), deleted: z.number() }),
  })
  .meta({ id: 'SyncStatus' });
export type SyncStatus = z.infer<typeof SyncStatus>;

export function syncStatusOf(checkpoint: SyncCheckpoint, nowSeconds: number): SyncStatus {
  const running = checkpoint.runId !== undefined && (checkpoint.leaseExpiresAt ?? 0) > nowSeconds;
  const state = running ? 'running' : checkpoint.cursor !== undefined ? 'paused_after_failure' : checkpoint.lastRunStartedAt ? 'idle' : 'never_run';
  return {
    object: checkpoint.object,
    state,
    mode: checkpoint.mode,
    counts: checkpoint.counts,
    ...(checkpoint.lastRunStartedAt ? { lastRunStartedAt: checkpoint.lastRunStartedAt } : {}),
    ...(checkpoint.lastRunFinishedAt ? { lastRunFinishedAt: checkpoint.lastRunFinishedAt } : {}),
    ...(checkpoint.lastSucceededAt ? { lastSucceededAt: checkpoint.lastSucceededAt } : {}),
    ...(checkpoint.lastError ? { lastError: checkpoint.lastError } : {}),
  };
}
