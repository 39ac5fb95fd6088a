import * as z from 'zod';
import { log } from '../shared/log/logger';

const PollerInput = z.object({ shard: z.number().int().min(0) });

/** Holds one shard's long-polls. Arrives with the messaging connector; until then a shard has no conversations. */
export const handler = async (event: unknown): Promise<{ shard: number; polled: number }> => {
  const { shard } = PollerInput.parse(event);
  log.info('poller ran', { shard, polled: 0 });
  return { shard, polled: 0 };
};
