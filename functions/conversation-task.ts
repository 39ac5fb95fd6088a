import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { gateway, provideAwsServices } from '../shared/gateway';
import { log } from '../shared/log/logger';
import { LifecycleStep, runLifecycleStep } from '../shared/messaging/lifecycle';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';

provideAwsServices({ events: eventBridgeEvents, stateMachines: stepFunctionsStateMachines, pollerNotices: sqsPollerNotices });

/** One step of a conversation's lifecycle execution (lib/conversations.ts): start, await-end, transcript, mark-failed. */
export const handler = async (event: unknown): Promise<Record<string, unknown>> => {
  const step = LifecycleStep.parse(event);
  return runLifecycleStep(gateway(), step, log.with({ step: step.step, accountId: step.input.accountId }));
};
