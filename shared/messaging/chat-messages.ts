import type { ConversationEndReason, MessageWrite } from '../store/items';

/**
 * The long-poll's message vocabulary. The spec shows the poll (`GET .../messages?ack=&timeout=`)
 * but not its answer; the platform's one documented long-poll with `ack` and `sequence` is its chat
 * REST API (the Messages resource, "Chat REST API Messages Response Objects"), so its answer
 * `{messages: [{type, message}], sequence}` and its type names are what the gateway reads
 * (docs/platform-contracts.md). Pure: one polled event in, what the gateway stores and publishes out.
 *
 * Nothing the platform sends is reduced to a name: a type the gateway does not know is stored as a
 * system event with its whole payload, and its `text` (when it has one) as the message's text.
 * The documented messages carry no timestamp and no id: the gateway's receipt time stands for both
 * (`fallbackAt`), and the platform's order is the poll's sequence.
 */

/** The documented `type` names the gateway gives a meaning to. */
export const CHAT_MESSAGE_TYPES = [
  'ChatMessage',
  'ChatEstablished',
  'ChatRequestSuccess',
  'ChatRequestFail',
  'QueueUpdate',
  'ChatTransferred',
  'AgentTyping',
  'AgentNotTyping',
  'AgentDisconnect',
  'ChatEnded',
  'ChasitorIdleTimeoutWarningEvent',
  'FileTransfer',
  'RichMessage',
  'CustomEvent',
] as const;
export type ChatMessageType = (typeof CHAT_MESSAGE_TYPES)[number];

/** What a polled event does to the conversation besides being stored. */
export type ChatLifecycle = 'queued' | 'agent_joined' | 'ended';

export type ChatReading = MessageWrite & { lifecycle?: ChatLifecycle };

/** One event of a poll answer, as the chat REST API's Messages response gives it. */
export interface PolledChatEvent {
  type: string;
  message: Record<string, unknown>;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/** Drops undefined values, so stored details hold only what the platform sent. */
function defined(details: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(details).filter(([, value]) => value !== undefined));
}

/** `ChatRequestSuccess` -> `chat_request_success`: the platform's word, in the gateway's case. */
export function systemEventName(type: string): string {
  return type.replace(/[A-Z]/g, (c, i: number) => `${i ? '_' : ''}${c.toLowerCase()}`);
}

/** Pure: why a conversation ended, from an ending event's details (`endReason` wins, else the platform's `reason`). */
export function endReasonOf(details: Record<string, unknown> | undefined): Extract<ConversationEndReason, 'agent' | 'end_user' | 'system' | 'failed'> {
  if (details?.endReason === 'failed') return 'failed';
  // "client" is the documented reason of a chat the visitor (here, the end user) ended.
  const reason = text(details?.reason)?.toLowerCase();
  return reason === 'client' ? 'end_user' : reason === 'agent' ? 'agent' : 'system';
}

/**
 * Pure: the stored message for a polled event, or undefined for a typing indicator. `AgentTyping`
 * and `AgentNotTyping` are state, not words: they are neither stored, published nor transcribed
 * (no playbook acts on an agent's typing, and the next `ChatMessage` supersedes it).
 */
export function chatMessage(event: PolledChatEvent, fallbackAt: string): ChatReading | undefined {
  const m = event.message;
  const common = { direction: 'inbound' as const, sentAt: fallbackAt };
  const system = (systemEvent: string, details: Record<string, unknown>, words?: string) => ({
    ...common,
    type: 'system' as const,
    sender: 'system',
    ...(words !== undefined ? { text: words } : {}),
    details: defined({ systemEvent, ...details }),
  });
  switch (event.type) {
    case 'ChatMessage':
      return { ...common, type: 'text', text: text(m.text) ?? '', sender: 'agent', details: defined({ senderName: text(m.name), agentId: text(m.agentId) }) };
    case 'ChatEstablished':
      return { ...system('agent_joined', { senderName: text(m.name), agentId: text(m.userId) }, text(m.name)), lifecycle: 'agent_joined' };
    case 'ChatTransferred':
      // The new agent takes the conversation: recorded as its agent, as a join is.
      return { ...system('transfer', { senderName: text(m.name), agentId: text(m.userId) }, text(m.name)), lifecycle: 'agent_joined' };
    case 'ChatRequestSuccess':
      return { ...system('queue_update', { position: count(m.queuePosition), estimatedWaitSeconds: count(m.estimatedWaitTime) }), lifecycle: 'queued' };
    case 'QueueUpdate':
      return { ...system('queue_update', { position: count(m.position), estimatedWaitSeconds: count(m.estimatedWaitTime) }), lifecycle: 'queued' };
    case 'ChatRequestFail':
      return { ...system('request_failed', { reason: text(m.reason), endReason: 'failed' }, text(m.reason)), lifecycle: 'ended' };
    case 'ChatEnded':
      return { ...system('ended', { reason: text(m.reason), attachedRecords: m.attachedRecords }, text(m.reason)), lifecycle: 'ended' };
    case 'AgentTyping':
    case 'AgentNotTyping':
      return undefined;
    case 'AgentDisconnect':
      return system('agent_disconnect', {});
    case 'ChasitorIdleTimeoutWarningEvent':
      return system('idle_timeout_warning', { warning: text(m.idleTimeoutWarningEvent) }, text(m.idleTimeoutWarningEvent));
    case 'FileTransfer':
      // The agent asks for (or settles) an upload: `type` is Requested, Canceled, Success or Failure.
      return system('file_transfer', { payload: m }, text(m.type));
    case 'RichMessage':
      return system('rich_message', { payload: m }, text(m.text));
    case 'CustomEvent':
      return system('custom_event', { payload: m }, text(m.data));
    default:
      return system(systemEventName(event.type), { platformType: event.type, payload: m }, text(m.text));
  }
}
