import type * as z from 'zod';
import type { SyncingConnector } from '../connections/connector';
import type { CommonSyncSettings } from '../connections/connector-platform';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { Connection } from '../store/items';
import type { SyncFrequency } from './sync-settings';
import { scheduledJobsFor } from './scheduled-work';
import type { SchedulingConnector } from '../connections/connector';

/** The jobs one connection's settings ask for: one per selected data object. Pure. */
export function jobsFor(
  connection: Connection,
  settingsSchema: z.ZodType<CommonSyncSettings, unknown>,
  trigger: SyncJob['trigger'],
  requestedAt: string,
  options: { full?: boolean; objects?: readonly string[] } = {},
): SyncJob[] {
  const settings = settingsSchema.safeParse(connection.syncSettings);
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
  const connections = await gateway.store.listScheduledConnections(frequency);
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
