import { taskFunction } from '../shared/handler/engine';
import { log } from '../shared/log/logger';
import { recordMetric } from '../shared/metrics/gateway-metrics';

/**
 * Sizes the poller fleet from the number of active conversations. Conversations arrive with the
 * messaging connector's issue; until then there are none, and the fleet state machine stops.
 * The count is reported (LiveConversations) for the "live conversations, no poller" alarm.
 */
export const handler = taskFunction(async (): Promise<{ active: number; shards: Array<{ shard: number }> }> => {
  const active = 0;
  recordMetric.liveConversations(active);
  log.info('poller fleet planned', { active });
  return { active, shards: [] };
});
