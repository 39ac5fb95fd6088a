import { log } from '../shared/log/logger';

/**
 * Sizes the poller fleet from the number of active conversations. Conversations arrive with the
 * messaging connector's issue; until then there are none, and the fleet state machine stops.
 */
export const handler = async (): Promise<{ active: number; shards: Array<{ shard: number }> }> => {
  log.info('poller fleet planned', { active: 0 });
  return { active: 0, shards: [] };
};
