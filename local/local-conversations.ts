import type { Gateway } from '../shared/gateway';
import { log } from '../shared/log/logger';
import { FleetPlanInput, MAX_POLLER_SHARDS, planFleet, PollerInput } from '../shared/messaging/fleet';
import { runPoller } from '../shared/messaging/poller-run';
import { LifecycleStep, runLifecycleStep } from '../shared/messaging/lifecycle';
import { runAs } from './iam/enforcement';
import type { LocalStateMachineHandlers } from './local-state-machines';


/**
 * What each Task state of the local state machines runs: the same domain calls as the Lambda
 * handlers in functions/ (conversation-task, poller-fleet-plan, poller), on the local gateway.
 */
export function localStateMachineHandlers(gateway: () => Gateway): LocalStateMachineHandlers {
  return {
    // Each runs as its function: its AWS calls are judged against that function's role (local/iam/).
    conversationTask: (payload) =>
      runAs('conversation-task', async () => {
        const step = LifecycleStep.parse(payload);
        return runLifecycleStep(gateway(), step, log.with({ step: step.step, accountId: step.input.accountId }));
      }),
    fleetPlan: (payload) => runAs('poller-fleet-plan', async () => planFleet(gateway(), FleetPlanInput.parse(payload), { maxShards: MAX_POLLER_SHARDS, log })),
    poller: (payload, onStart) => runAs('poller', async () => {
      const input = PollerInput.parse(payload);
      const stats = await runPoller(gateway(), input, log.with({ shard: input.shard }), { onStart });
      return { shard: input.shard, polled: stats.claimed + stats.adopted };
    }),
  };
}
