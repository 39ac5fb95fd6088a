import { reactionsTo } from '../shared/connections/registry';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { withReactions } from '../shared/events/reactions';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { taskFunction } from '../shared/handler/engine';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { log } from '../shared/log/logger';
import { LifecycleStep, runLifecycleStep } from '../shared/messaging/lifecycle';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

// Conversation events (connectors may react: the data connector queues an engagement event).
provideAwsServices({ table: signedTable, vault: signedKmsVault, events: withReactions(eventBridgeEvents, reactionsTo), queues: signedSqsQueues, stateMachines: stepFunctionsStateMachines, pollerNotices: sqsPollerNotices });
checkSettingsAtLoad('conversation-task');

/** One step of a conversation's lifecycle execution (lib/conversations.ts): start, await-end, transcript, mark-failed. */
export const handler = taskFunction(async (event: unknown): Promise<Record<string, unknown>> => {
  const step = LifecycleStep.parse(event);
  return runLifecycleStep(gateway(), step, log.with({ step: step.step, accountId: step.input.accountId }));
});
