import * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { Connection } from '../store/items';
import type { SyncFrequency } from './sync-settings';

/**
 * Work a connector does on the sync schedules other than record syncs: the data connector sends
 * the engagement events it held for the Hourly or Daily frequency. The dispatcher asks each
 * connector with this capability which jobs a due connection wants; the jobs travel on the sync
 * queue (FIFO, one group per connection: a connection's jobs never run side by side) and the sync
 * job worker hands them back to the connector.
 */
export interface ScheduledWork<Settings = object> {
  /** The jobs (a SyncJob's `object`) these settings ask for when this schedule fires. Pure. */
  jobsFor(settings: Settings, frequency: SyncFrequency): string[];
  /** Whether a job of this name is this capability's. */
  owns(object: string): boolean;
  /** Does one job. `more`: it stopped at its deadline with work left, and is enqueued again. */
  run(job: SyncJob, context: ScheduledWorkContext): Promise<{ more: boolean }>;
}

export interface ScheduledWorkContext {
  gateway: Gateway;
  log: Logger;
  /** When the invocation must stop (epoch ms). */
  deadline?: number;
}

/** The jobs of one connection's scheduled work at this schedule. Pure. */
export function scheduledJobsFor(
  connection: Connection,
  connector: { settings: z.core.$ZodType; scheduled: ScheduledWork<never> },
  frequency: SyncFrequency,
  requestedAt: string,
): SyncJob[] {
  const settings = z.safeParse(connector.settings, connection.syncSettings);
  if (!settings.success) return [];
  return (connector.scheduled as ScheduledWork<unknown>).jobsFor(settings.data, frequency).map((object) => ({
    accountId: connection.accountId,
    connector: connection.connector,
    object,
    trigger: frequency,
    requestedAt,
  }));
}

/** Runs a scheduled job; a job that stopped at its deadline is enqueued again (a new body, so FIFO deduplication keeps it). */
export async function runScheduledWork(scheduled: ScheduledWork<never>, job: SyncJob, context: ScheduledWorkContext): Promise<{ more: boolean }> {
  const result = await (scheduled as ScheduledWork<unknown>).run(job, context);
  if (result.more) {
    const requestedAt = new Date(context.gateway.now()).toISOString();
    await context.gateway.queues.syncJobs.send([{ ...job, requestedAt, runId: `continue-${requestedAt}` }]);
    context.log.info('scheduled work continues in another job', { object: job.object });
  }
  return result;
}
