import type { MessageWrite } from '../store/items';
import type { PolledEvent } from './conversation-api';

/** Pure: the stored message for a polled event (undefined for shapes the gateway does not know). */
export function messageOf(event: PolledEvent, fallbackAt: string): MessageWrite & { lifecycle?: 'queued' | 'agent_joined' | 'ended' } {
  const m = event.message;
  const at = typeof m.timestamp === 'string' && !Number.isNaN(Date.parse(m.timestamp)) ? new Date(m.timestamp).toISOString() : fallbackAt;
  const sender = typeof m.sender === 'object' && m.sender !== null ? (m.sender as { role?: unknown; name?: unknown }) : {};
  const senderName = typeof sender.name === 'string' ? sender.name : undefined;
  const platformMessageId = typeof m.id === 'string' ? m.id : undefined;
  const common = { direction: 'inbound' as const, sentAt: at, ...(platformMessageId ? { platformMessageId } : {}) };
  switch (event.type) {
    case 'Text':
      return { ...common, type: 'text', text: typeof m.text === 'string' ? m.text : '', sender: 'agent', ...(senderName ? { details: { senderName } } : {}) };
    case 'Media':
      return { ...common, type: 'media', sender: 'agent', details: { media: m.media, ...(senderName ? { senderName } : {}) } };
    case 'QueueUpdate':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'queued', details: { systemEvent: 'queue_update', position: m.position, estimatedWaitSeconds: m.estimatedWaitSeconds, queue: m.queue } };
    case 'AgentJoined':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'agent_joined', text: typeof m.name === 'string' ? m.name : undefined, details: { systemEvent: 'agent_joined', senderName: m.name } };
    case 'Transfer':
      return { ...common, type: 'system', sender: 'system', text: `${String(m.from ?? '')} → ${String(m.to ?? '')}`, details: { systemEvent: 'transfer', from: m.from, to: m.to } };
    case 'ChatEnded':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'ended', text: typeof m.reason === 'string' ? m.reason : undefined, details: { systemEvent: 'ended', reason: m.reason } };
    default:
      return { ...common, type: 'system', sender: 'system', details: { systemEvent: event.type.replace(/[A-Z]/g, (c, i: number) => `${i ? '_' : ''}${c.toLowerCase()}`) } };
  }
}

export function endReasonOf(platformReason: unknown): 'agent' | 'end_user' | 'system' {
  return platformReason === 'EndUser' ? 'end_user' : platformReason === 'Agent' ? 'agent' : 'system';
}
