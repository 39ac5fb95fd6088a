import * as z from 'zod/mini';
import type { SyncingConnector } from '../connections/connector';
import type { CommonSyncSettings } from '../connections/connector-platform';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { Connection } from '../store/items';
import type { SyncFrequency } from './sync-settings';
import { scheduledJobsFor } from './scheduled-work';
import type { SchedulingConnector } from '../connections/connector';
import * as store from '../store/store';

/** The jobs one connection's settings ask for: one per selected data object. Pure. */
export function jobsFor(
  connection: Pick<Connection, 'accountId' | 'connector' | 'syncSettings'>,
  settingsSchema: z.core.$ZodType<CommonSyncSettings, unknown>,
  trigger: SyncJob['trigger'],
  requestedAt: string,
  options: { full?: boolean; objects?: readonly string[] } = {},
): SyncJob[] {
  const settings = z.safeParse(settingsSchema, connection.syncSettings);
  if (!settings.success) return [];
  const selected = options.objects ? settings.data.dataObjects.filter((o) => options.objects!.includes(o)) : settings.data.dataObjects;
  return selected.map((object) => ({
    accountId: connection.accountId,
    connector: connection.connector,
    object,
    trigger,
    requestedAt,
    ...(options.full ? { full: true } : {}),
  }));
}

/**
 * The sync Connect Account starts once Test Connection passed, so a new customer's records arrive
 * now rather than at the connection's schedule (daily by default): one `connected` job per selected
 * data object. None when the sync method is Webhooks only, which no schedule syncs either. Pure.
 */
export function firstSyncJobs(
  connection: Pick<Connection, 'accountId' | 'connector' | 'syncSettings'>,
  settingsSchema: z.core.$ZodType<CommonSyncSettings, unknown>,
  requestedAt: string,
): SyncJob[] {
  const settings = z.safeParse(settingsSchema, connection.syncSettings);
  if (!settings.success || settings.data.method === 'webhooks') return [];
  return jobsFor(connection, settingsSchema, 'connected', requestedAt);
}

/**
 * A schedule fired: enqueue one sync job per due connection and data object, and the jobs of
 * connectors' other scheduled work (see ./scheduled-work.ts). Connections are found
 * through the schedule index (only those whose settings choose this frequency and an API sync).
 */
export async function dispatchDueSyncs(
  gateway: Gateway,
  syncing: Readonly<Record<string, Pick<SyncingConnector, 'settings'>>>,
  frequency: SyncFrequency,
  log: Logger,
  scheduling: Readonly<Record<string, Pick<SchedulingConnector, 'settings' | 'scheduled'>>> = {},
): Promise<number> {
  const requestedAt = new Date(gateway.now()).toISOString();
  const connections = await store.listScheduledConnections(gateway.table, frequency);
  const jobs = connections.flatMap((connection) => {
    const connector = syncing[connection.connector];
    const scheduled = scheduling[connection.connector];
    return [
      ...(connector ? jobsFor(connection, connector.settings, frequency, requestedAt) : []),
      ...(scheduled ? scheduledJobsFor(connection, scheduled, frequency, requestedAt) : []),
    ];
  });
  await gateway.queues.syncJobs.send(jobs);
  log.info('sync jobs enqueued', { frequency, connections: connections.length, jobs: jobs.length });
  return jobs.length;
}

/**
 * The retry schedule fired (every few minutes): enqueue one `retry` job per sync whose next try
 * has come (found through the retry index, no scan). A job that finds its try no longer due (a
 * duplicate, or a run finished meanwhile) is skipped by the sync job.
 */
export async function dispatchDueRetries(gateway: Gateway, log: Logger): Promise<number> {
  const now = new Date(gateway.now());
  const due = await store.listDueSyncRetries(gateway.table, now);
  const jobs: SyncJob[] = due.map((checkpoint) => ({
    accountId: checkpoint.accountId,
    connector: checkpoint.connector,
    object: checkpoint.object,
    trigger: 'retry',
    requestedAt: now.toISOString(),
  }));
  await gateway.queues.syncJobs.send(jobs);
  if (jobs.length > 0) log.info('sync retries enqueued', { jobs: jobs.length });
  return jobs.length;
}
