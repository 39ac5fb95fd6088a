import { reactionsTo } from '../shared/connections/registry';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { withReactions } from '../shared/events/reactions';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { taskFunction } from '../shared/handler/engine';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { log } from '../shared/log/logger';
import { PollerInput } from '../shared/messaging/fleet';
import { runPoller } from '../shared/messaging/poller-run';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

provideAwsServices({ table: signedTable, vault: signedKmsVault, events: withReactions(eventBridgeEvents, reactionsTo), queues: signedSqsQueues, stateMachines: stepFunctionsStateMachines, pollerNotices: sqsPollerNotices });
checkSettingsAtLoad('poller');

/**
 * Holds many conversations' long-polls for one fleet round (~14 minutes), then hands them over. It
 * reports the polls it holds (PollsOpen, once a minute and 0 as it ends) and the messages it
 * delivers (MessagesDelivered): shared/metrics/gateway-metrics.ts.
 */
export const handler = taskFunction(async (event: unknown, context) => {
  const input = PollerInput.parse(event);
  // Never past the function's own limit: leases are released with 30 s to spare.
  const limit = context ? Date.now() + context.getRemainingTimeInMillis() - 30_000 : input.endsAt;
  const stats = await runPoller(gateway(), { ...input, endsAt: Math.min(input.endsAt, limit) }, log.with({ shard: input.shard }));
  const { handoverGapsMs, adoptedHandoverGapsMs, firstPollMs, firstPollAcrossRoundsMs, ...counts } = stats;
  log.info('poller run ended', { ...counts, handovers: handoverGapsMs.length, maxHandoverGapMs: Math.max(0, ...handoverGapsMs), adoptedHandovers: adoptedHandoverGapsMs.length, firstPolls: firstPollMs.length + firstPollAcrossRoundsMs.length, firstPollsAcrossRounds: firstPollAcrossRoundsMs.length });
  return { shard: input.shard, polled: counts.claimed + counts.adopted };
});
