import * as z from 'zod/mini';
import { schedulingPlatforms, syncSchedules } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { taskFunction } from '../shared/handler/engine';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { log } from '../shared/log/logger';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { dispatchDueRetries, dispatchDueSyncs } from '../shared/sync/dispatch-syncs';
import { SyncFrequency } from '../shared/sync/sync-settings';

provideAwsServices({ table: signedTable, queues: signedSqsQueues });
checkSettingsAtLoad('sync-dispatcher');

/** What each EventBridge Scheduler schedule sends (see lib/sync.ts): a frequency, or the retry schedule's `{retries: true}`. */
const ScheduleEvent = z.union([z.object({ frequency: SyncFrequency }), z.object({ retries: z.literal(true) })]);

/**
 * Fired by the hourly, daily and weekly schedules: one sync job per due connection and data
 * object; by the retry schedule: one job per failed sync whose next try has come.
 */
export const handler = taskFunction(async (event: unknown): Promise<{ frequency: string; enqueued: number }> => {
  const parsed = ScheduleEvent.parse(event);
  if ('retries' in parsed) return { frequency: 'retries', enqueued: await dispatchDueRetries(gateway(), log.with({ frequency: 'retries' })) };
  const { frequency } = parsed;
  const enqueued = await dispatchDueSyncs(gateway(), syncSchedules, frequency, log.with({ frequency }), schedulingPlatforms);
  return { frequency, enqueued };
});
