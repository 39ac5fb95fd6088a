import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import type { Conversation } from '../store/items';
import { conversationEvent, publishConversationEvents } from './conversation-events';
import { finishConversation } from './conversations';
import type { EventBatch, TransportMessage } from './conversation-transport';
import { keepsMessageType, type MessagingSettings } from './settings';
import * as store from '../store/store';

/** What applying events needs of the poller run holding the conversation. */
export interface ApplyContext {
  gateway: Gateway;
  log: Logger;
  runId: string;
  settings: MessagingSettings;
  /** Throws once the run was killed or fenced: nothing is touched after that. */
  guard(): void;
  stats: { delivered: number };
}

/**
 * Persists the answer's events at their sequences (in order; a redelivery is a no-op), then
 * publishes them, then moves the conversation's state, then acknowledges. A crash anywhere before
 * the acknowledgement means the next holder gets the same events again: stored once, and
 * re-published under the same event ids (lifecycle events too: named by their sequence, and the
 * state change accepts the state it already made, so a run fenced between the two loses nothing).
 */
export async function applyEvents(context: ApplyContext, conversation: Conversation, ack: number, answer: EventBatch): Promise<'ok' | 'ended' | 'lost'> {
  const settings = context.settings;
  const firstSequence = answer.position.sequence - answer.events.length + 1;
  const events = [];
  let lifecycle: { queued?: TransportMessage; agent?: TransportMessage; ended?: TransportMessage } = {};
  // The sequence of each lifecycle event names what it publishes, so a redelivered answer publishes under the same id.
  const at: { queued?: number; agent?: number } = {};
  for (const [index, read] of answer.events.entries()) {
    const sequence = firstSequence + index;
    if (sequence <= ack || read === undefined) continue;
    // The lifecycle fields are the transport's reading, not part of the stored message.
    const { lifecycle: effect, endedBy: _endedBy, ...message } = read;
    if (effect === 'queued') [lifecycle, at.queued] = [{ ...lifecycle, queued: read }, sequence];
    if (effect === 'agent_joined') [lifecycle, at.agent] = [{ ...lifecycle, agent: read }, sequence];
    if (effect === 'ended') lifecycle = { ...lifecycle, ended: read };
    if (!keepsMessageType(settings, message.type)) continue;
    context.guard();
    await store.appendMessage(context.gateway.table, conversation.accountId, conversation.conversationId, sequence, message);
    events.push(
      conversationEvent(
        'message.received',
        conversation,
        {
          message: {
            sequence,
            type: message.type,
            ...(message.text !== undefined ? { text: message.text } : {}),
            ...(message.type === 'media' && message.details?.media ? { media: message.details.media as { url: string; mimeType: string } } : {}),
            ...(typeof message.details?.systemEvent === 'string' ? { systemEvent: message.details.systemEvent } : {}),
            sender: message.sender ?? 'agent',
            ...(typeof message.details?.senderName === 'string' ? { senderName: message.details.senderName } : {}),
            sentAt: message.sentAt,
          },
        },
        { occurredAt: message.sentAt, idSuffix: String(sequence) },
      ),
    );
  }
  const now = new Date(context.gateway.now()).toISOString();
  let current = conversation;
  if (lifecycle.queued) {
    const queued = await store.updateConversation(context.gateway.table, conversation.accountId, conversation.conversationId, { set: { state: 'queued', updatedAt: now }, whenStateIn: ['starting', 'queued', 'active'] });
    if (queued) {
      current = queued;
      const details = lifecycle.queued.details ?? {};
      events.push(
        conversationEvent(
          'conversation.queued',
          queued,
          { ...(typeof details.queue === 'string' ? { queue: details.queue } : {}), ...(typeof details.position === 'number' ? { position: details.position } : {}), ...(typeof details.estimatedWaitSeconds === 'number' ? { estimatedWaitSeconds: details.estimatedWaitSeconds } : {}) },
          { occurredAt: lifecycle.queued.sentAt, idSuffix: `queued-${at.queued}` },
        ),
      );
    }
  }
  if (lifecycle.agent) {
    const agentName = typeof lifecycle.agent.details?.senderName === 'string' ? lifecycle.agent.details.senderName : undefined;
    const active = await store.updateConversation(context.gateway.table, conversation.accountId, conversation.conversationId, { set: { state: 'active', updatedAt: now, ...(agentName ? { agentName } : {}) }, whenStateIn: ['starting', 'queued', 'active'] });
    if (active) {
      current = active;
      events.push(conversationEvent('agent.joined', active, agentName ? { agentName } : {}, { occurredAt: lifecycle.agent.sentAt, idSuffix: `agent-${at.agent}` }));
    }
  }
  context.guard();
  await publishConversationEvents(context.gateway, events);
  context.stats.delivered += answer.events.length;
  recordMetric.messagesDelivered(events.length);
  context.guard();
  if (!(await store.advanceAck(context.gateway.table, conversation.accountId, conversation.conversationId, context.runId, answer.position.sequence, answer.position.eventId))) return 'lost';
  if (lifecycle.ended) {
    context.guard();
    await finishConversation(context.gateway, current, lifecycle.ended.endedBy ?? 'system', context.log);
    return 'ended';
  }
  return 'ok';
}
