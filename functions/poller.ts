import * as z from 'zod';
import { taskFunction } from '../shared/handler/engine';
import { log } from '../shared/log/logger';
import { recordMetric } from '../shared/metrics/gateway-metrics';

const PollerInput = z.object({ shard: z.number().int().min(0) });

/**
 * Holds one shard's long-polls. Arrives with the messaging connector; until then a shard has no
 * conversations. It reports the polls it holds (PollsOpen: once a minute while it runs, and 0 as it
 * ends) and the messages it delivers (MessagesDelivered): see shared/metrics/gateway-metrics.ts.
 */
export const handler = taskFunction(async (event: unknown): Promise<{ shard: number; polled: number }> => {
  const { shard } = PollerInput.parse(event);
  recordMetric.pollsOpen(0);
  log.info('poller ran', { shard, polled: 0 });
  return { shard, polled: 0 };
});
