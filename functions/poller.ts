import type { Context } from 'aws-lambda';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { gateway, provideAwsServices } from '../shared/gateway';
import { log } from '../shared/log/logger';
import { PollerInput, runPoller } from '../shared/messaging/fleet';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';

provideAwsServices({ events: eventBridgeEvents, stateMachines: stepFunctionsStateMachines, pollerNotices: sqsPollerNotices });

/** Holds many conversations' long-polls for one fleet round (~14 minutes), then hands them over. */
export const handler = async (event: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>) => {
  const input = PollerInput.parse(event);
  // Never past the function's own limit: leases are released with 30 s to spare.
  const limit = context ? Date.now() + context.getRemainingTimeInMillis() - 30_000 : input.endsAt;
  const stats = await runPoller(gateway(), { ...input, endsAt: Math.min(input.endsAt, limit) }, log.with({ shard: input.shard }));
  const { handoverGapsMs, firstPollMs, ...counts } = stats;
  log.info('poller run ended', { ...counts, handovers: handoverGapsMs.length, maxHandoverGapMs: Math.max(0, ...handoverGapsMs) });
  return { shard: input.shard, polled: counts.claimed };
};
