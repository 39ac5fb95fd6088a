import * as z from 'zod';
import { connectors } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { log } from '../shared/log/logger';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { dispatchDueSyncs } from '../shared/sync/dispatch-syncs';
import { SyncFrequency } from '../shared/sync/sync-settings';

provideAwsServices({ queues: sqsQueues });

/** What each EventBridge Scheduler schedule sends (see lib/sync.ts). */
const ScheduleEvent = z.object({ frequency: SyncFrequency });

/** Fired by the hourly, daily and weekly schedules: one sync job per due connection and data object. */
export const handler = async (event: unknown): Promise<{ frequency: string; enqueued: number }> => {
  const { frequency } = ScheduleEvent.parse(event);
  const enqueued = await dispatchDueSyncs(gateway(), connectors.syncing(), frequency, log.with({ frequency }), connectors.scheduling());
  return { frequency, enqueued };
};
