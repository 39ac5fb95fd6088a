import * as z from 'zod';
import { GatewayEvent } from '../events/gateway-event';
import type { Gateway } from '../gateway';
import { countConversationEvents } from '../history/record-history';
import type { Conversation } from '../store/items';

/**
 * The events a conversation publishes for playbooks, in the gateway's versioned envelope
 * (docs/events.md, schema version 1). Ids are derived from the conversation and what happened
 * (and the message's sequence), so a re-published event carries the same id and consumers dedupe.
 */

export const CONVERSATION_EVENT_TYPES = [
  'conversation.started',
  'conversation.queued',
  'agent.joined',
  'message.received',
  'message.sent',
  'conversation.handed_off',
  'conversation.ended',
  'conversation.expired',
  'transcript.stored',
] as const;
export type ConversationEventType = (typeof CONVERSATION_EVENT_TYPES)[number];

const Time = z.iso.datetime();

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const EventConversation = z.lazy(() =>
  z
    .object({
      id: z.string(),
      platformConversationId: z.string().optional(),
      direction: z.enum(['inbound', 'outbound']).optional(),
      contactId: z.string().optional(),
    })
    .meta({ id: 'EventConversation' }),
);

const Media = z.lazy(() =>
  z.object({ url: z.string(), mimeType: z.string(), name: z.string().optional() }),
);

export const EventReceivedMessage = z.lazy(() =>
  z
    .object({
      sequence: z.number().int(),
      type: z.enum(['text', 'media', 'system']),
      text: z.string().optional(),
      media: Media.optional(),
      /** `queue_update`, `agent_joined`, `transfer`, `ended`, or the platform's word for system events. */
      systemEvent: z.string().optional(),
      sender: z.string(),
      senderName: z.string().optional(),
      sentAt: Time,
    })
    .meta({ id: 'EventReceivedMessage' }),
);

export const EventSentMessage = z.lazy(() =>
  z
    .object({
      id: z.string(),
      type: z.enum(['text', 'media']),
      text: z.string().optional(),
      media: Media.optional(),
      author: z.enum(['automated', 'end_user']),
      sentAt: Time,
    })
    .meta({ id: 'EventSentMessage' }),
);

const base = { conversation: EventConversation };
export const CONVERSATION_EVENT_DATA = {
  'conversation.started': z.object({ ...base, startedAt: Time }),
  'conversation.queued': z.object({ ...base, queue: z.string().optional(), position: z.number().int().optional(), estimatedWaitSeconds: z.number().optional() }),
  'agent.joined': z.object({ ...base, agentName: z.string().optional() }),
  'message.received': z.object({ ...base, message: EventReceivedMessage }),
  'message.sent': z.object({ ...base, message: EventSentMessage }),
  'conversation.handed_off': z.object({ ...base, queue: z.string() }),
  'conversation.ended': z.object({
    ...base,
    /** The same as conversation.id, at the top for consumers that read flat fields (the data connector). */
    conversationId: z.string(),
    endUserEmail: z.string().optional(),
    channel: z.literal('messaging'),
    reason: z.string(),
    startedAt: Time,
    endedAt: Time,
    durationSeconds: z.number().int().nonnegative(),
    handedOff: z.boolean(),
  }),
  'conversation.expired': z.object({ ...base, remedy: z.string() }),
  'transcript.stored': z.object({
    ...base,
    entries: z.number().int().nonnegative(),
    field: z.string(),
    writtenToSession: z.boolean(),
    reason: z.string().optional(),
    remedy: z.string().optional(),
  }),
} as const satisfies Record<ConversationEventType, z.ZodType>;

export function eventConversation(conversation: Conversation): z.infer<typeof EventConversation> {
  return {
    id: conversation.conversationId,
    ...(conversation.platformConversationId ? { platformConversationId: conversation.platformConversationId } : {}),
    ...(conversation.direction ? { direction: conversation.direction } : {}),
    ...(conversation.contactId ? { contactId: conversation.contactId } : {}),
  };
}

/** An event checked against its documented data schema (undocumented fields are dropped). */
export function conversationEvent<T extends ConversationEventType>(
  type: T,
  conversation: Conversation,
  data: Omit<z.input<(typeof CONVERSATION_EVENT_DATA)[T]>, 'conversation'>,
  options: { occurredAt: string; idSuffix?: string },
): GatewayEvent {
  const parsed = CONVERSATION_EVENT_DATA[type].parse({ ...data, conversation: eventConversation(conversation) }) as Record<string, unknown>;
  return GatewayEvent.parse({
    schemaVersion: '1',
    id: `messaging:${conversation.conversationId}:${type}${options.idSuffix ? `:${options.idSuffix}` : ''}`,
    type,
    accountId: conversation.accountId,
    source: 'messaging',
    occurredAt: options.occurredAt,
    data: parsed,
  });
}

/** Publishes through the gateway's bus (EventBridge in AWS). */
export async function publishConversationEvents(gateway: Gateway, events: GatewayEvent[]): Promise<void> {
  if (events.length) await gateway.events.publish(events);
  await countConversationEvents(gateway, events);
}
