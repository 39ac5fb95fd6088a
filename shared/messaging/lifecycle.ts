import * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import type { Logger } from '../log/logger';
import { LIVE_STATES } from '../store/conversations';
import type { Conversation, TranscriptOutcome } from '../store/items';
import { findSessionRecordId, writeSessionField } from './conversation-api';
import { conversationEvent, publishConversationEvents } from './conversation-events';
import { ensureFleetRunning, finishConversation, instanceUrlOf, messagingConnection } from './conversations';
import type { MessagingSettings } from './settings';
import { chronological, formatTranscript, type ConversationEntry } from './transcript';
import { conversationTransport } from './transports';
import * as store from '../store/store';

/**
 * The steps of a conversation's lifecycle execution (lib/conversations.ts): start → (wait on a
 * task token while the conversation lives: no transitions while idle) → ended → transcript, and
 * mark-failed when a step fails for good.
 */

export const LifecycleStep = z.discriminatedUnion('step', [
  z.object({ step: z.literal('start'), input: z.looseObject({ accountId: z.string(), conversationId: z.string() }) }),
  z.object({
    step: z.literal('await-end'),
    taskToken: z.string().check(z.minLength(1)),
    input: z.looseObject({ accountId: z.string(), conversationId: z.string() }),
  }),
  z.object({ step: z.literal('transcript'), input: z.looseObject({ accountId: z.string(), conversationId: z.string() }) }),
  z.object({ step: z.literal('mark-failed'), input: z.looseObject({ accountId: z.string(), conversationId: z.string(), error: z.optional(z.unknown()) }) }),
]);
export type LifecycleStep = z.infer<typeof LifecycleStep>;

export const TRANSCRIPT_FIELD_REMEDY =
  'Configure transcript field mapping: add a long text area field to MessagingSession and name it in the messaging settings (Transcript field).';

export async function runLifecycleStep(gateway: Gateway, event: LifecycleStep, log: Logger): Promise<Record<string, unknown>> {
  const { accountId, conversationId } = event.input;
  const conversation = await store.getConversation(gateway.table, accountId, conversationId);
  if (!conversation) throw new Error(`conversation ${conversationId} of account ${accountId} is not stored`);
  switch (event.step) {
    case 'start':
      // The start route told the fleet; this makes sure of it if the route died right after starting the execution.
      if (LIVE_STATES.includes(conversation.state)) await ensureFleetRunning(gateway);
      return { state: conversation.state };
    case 'await-end': {
      const waiting = await store.updateConversation(gateway.table, accountId, conversationId, { set: { taskToken: event.taskToken }, whenStateIn: LIVE_STATES });
      // Already over (a short chat ended before this step ran): answer the token at once.
      if (!waiting) await gateway.stateMachines.sendTaskSuccess(event.taskToken, { reason: conversation.endReason ?? 'ended' });
      return {};
    }
    case 'transcript': {
      // Active timed out (a day of silence): the conversation ends here.
      const current = LIVE_STATES.includes(conversation.state)
        ? ((await finishConversation(gateway, conversation, 'silent', log)) ?? conversation)
        : conversation;
      return { transcript: await storeTranscript(gateway, current, log) };
    }
    case 'mark-failed': {
      if (LIVE_STATES.includes(conversation.state)) await finishConversation(gateway, conversation, 'failed', log);
      const at = new Date(gateway.now()).toISOString();
      await store.updateConversation(gateway.table, accountId, conversationId, { set: { state: 'failed', updatedAt: at }, whenStateIn: ['ended'] });
      log.error('conversation lifecycle failed', { conversationId, error: event.input.error });
      return {};
    }
  }
}

/**
 * On Messaging for In-App and Web the transcript is the platform's own record of the conversation
 * (its entries, both sides, oldest first). A token the platform no longer takes (401) falls back to
 * what the gateway stored and sent.
 */
async function platformRecord(
  gateway: Gateway,
  conversation: Conversation,
  settings: MessagingSettings,
  log: Logger,
): Promise<ConversationEntry[] | undefined> {
  if (conversation.transport !== 'messaging_api') return undefined;
  try {
    const transport = await conversationTransport(gateway, conversation, await instanceUrlOf(gateway, conversation), { settings });
    return await transport.entries();
  } catch (error) {
    if (!(error instanceof PlatformError) || error.status !== 401) throw error;
    log.warn("the conversation's entries could not be listed (token refused): the transcript is assembled from what the gateway stored", {
      conversationId: conversation.conversationId,
    });
    return undefined;
  }
}

/**
 * Assembles the transcript (both sides, system events as the message types setting kept them,
 * oldest first), keeps it in the table, and writes it to the MessagingSession field the settings
 * name. A missing field is reported with the spec's remedy; the transcript stays readable from the
 * gateway either way. Platform faults throw, and the state machine retries the step.
 */
export async function storeTranscript(gateway: Gateway, conversation: Conversation, log: Logger): Promise<TranscriptOutcome> {
  const { accountId, conversationId } = conversation;
  const { settings, session } = await messagingConnection(gateway, accountId);
  const at = new Date(gateway.now()).toISOString();
  if (settings.transcriptStorage === 'disabled') {
    const outcome: TranscriptOutcome = { state: 'disabled', at };
    await store.updateConversation(gateway.table, accountId, conversationId, { set: { transcript: outcome, updatedAt: at } });
    return outcome;
  }
  const entries =
    (await platformRecord(gateway, conversation, settings, log)) ??
    chronological(await store.listMessages(gateway.table, accountId, conversationId), await store.listSentMessages(gateway.table, accountId, conversationId));
  const text = formatTranscript(entries);
  await store.putTranscript(gateway.table, { accountId, conversationId, text, entries: entries.length, assembledAt: at });

  const field = settings.transcriptField;
  let outcome: TranscriptOutcome;
  try {
    const recordId = conversation.platformConversationId ? await findSessionRecordId(session, conversation.platformConversationId) : undefined;
    if (!recordId) {
      outcome = {
        state: 'not_written',
        at,
        field,
        reason: 'The platform has no MessagingSession record for this conversation.',
        remedy: 'Nothing to change: the transcript is kept by the gateway.',
      };
    } else {
      await writeSessionField(session, recordId, field, text);
      outcome = { state: 'stored', at, field };
    }
  } catch (error) {
    if (!(error instanceof PlatformError) || error.status !== 400 || !/INVALID_FIELD|No such column/i.test(`${error.platformCode} ${error.platformMessage}`))
      throw error;
    outcome = { state: 'field_missing', at, field, reason: `MessagingSession has no field ${field} the gateway may write.`, remedy: TRANSCRIPT_FIELD_REMEDY };
    await store.updateConnectionHealth(gateway.table, accountId, 'messaging', {
      state: 'degraded',
      checkedAt: at,
      reason: outcome.reason,
      remedy: TRANSCRIPT_FIELD_REMEDY,
    });
  }
  await store.updateConversation(gateway.table, accountId, conversationId, {
    set: { transcript: outcome, state: 'transcribed', updatedAt: at },
    whenStateIn: ['ended'],
  });
  await publishConversationEvents(gateway, [
    conversationEvent(
      'transcript.stored',
      conversation,
      {
        entries: entries.length,
        field,
        writtenToSession: outcome.state === 'stored',
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        ...(outcome.remedy ? { remedy: outcome.remedy } : {}),
      },
      { occurredAt: at },
    ),
  ]);
  log.info('transcript stored', { conversationId, entries: entries.length, state: outcome.state });
  return outcome;
}
