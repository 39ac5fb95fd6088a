import * as z from 'zod';
import { log } from '../shared/log/logger';

/** What each EventBridge Scheduler schedule sends (see lib/sync.ts). */
const ScheduleEvent = z.object({ frequency: z.enum(['hourly', 'daily', 'weekly']) });

/**
 * Fired by the hourly, daily and weekly schedules. Choosing the connections that are due and
 * enqueueing their sync jobs arrives with the billing and payment connectors' issue; until then
 * the dispatcher validates the schedule event and reports that it enqueued nothing.
 */
export const handler = async (event: unknown): Promise<{ frequency: string; enqueued: number }> => {
  const { frequency } = ScheduleEvent.parse(event);
  log.info('sync schedule fired', { frequency, enqueued: 0 });
  return { frequency, enqueued: 0 };
};
