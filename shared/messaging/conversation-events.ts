import * as z from 'zod/mini';
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
      platformConversationId: z.optional(z.string()),
      direction: z.optional(z.enum(['inbound', 'outbound'])),
      contactId: z.optional(z.string()),
    })
    .register(z.globalRegistry, { id: 'EventConversation' }),
);

const Media = z.lazy(() => z.object({ url: z.string(), mimeType: z.string(), name: z.optional(z.string()) }));

export const EventReceivedMessage = z.lazy(() =>
  z
    .object({
      sequence: z.number().check(z.int()),
      type: z.enum(['text', 'media', 'system']),
      text: z.optional(z.string()),
      media: z.optional(Media),
      /** `queue_update`, `agent_joined`, `transfer`, `ended`, or the platform's word for system events. */
      systemEvent: z.optional(z.string()),
      sender: z.string(),
      senderName: z.optional(z.string()),
      sentAt: Time,
    })
    .register(z.globalRegistry, { id: 'EventReceivedMessage' }),
);

export const EventSentMessage = z.lazy(() =>
  z
    .object({
      id: z.string(),
      type: z.enum(['text', 'media']),
      text: z.optional(z.string()),
      media: z.optional(Media),
      author: z.enum(['automated', 'end_user']),
      sentAt: Time,
    })
    .register(z.globalRegistry, { id: 'EventSentMessage' }),
);

const base = { conversation: EventConversation };
export const CONVERSATION_EVENT_DATA = {
  'conversation.started': z.object({ ...base, startedAt: Time }),
  'conversation.queued': z.object({
    ...base,
    queue: z.optional(z.string()),
    position: z.optional(z.number().check(z.int())),
    estimatedWaitSeconds: z.optional(z.number()),
  }),
  'agent.joined': z.object({ ...base, agentName: z.optional(z.string()) }),
  'message.received': z.object({ ...base, message: EventReceivedMessage }),
  'message.sent': z.object({ ...base, message: EventSentMessage }),
  'conversation.handed_off': z.object({ ...base, queue: z.string() }),
  'conversation.ended': z.object({
    ...base,
    /** The same as conversation.id, at the top for consumers that read flat fields (the data connector). */
    conversationId: z.string(),
    endUserEmail: z.optional(z.string()),
    channel: z.literal('messaging'),
    reason: z.string(),
    startedAt: Time,
    endedAt: Time,
    durationSeconds: z.number().check(z.int(), z.nonnegative()),
    handedOff: z.boolean(),
  }),
  'conversation.expired': z.object({ ...base, remedy: z.string() }),
  'transcript.stored': z.object({
    ...base,
    entries: z.number().check(z.int(), z.nonnegative()),
    field: z.string(),
    writtenToSession: z.boolean(),
    reason: z.optional(z.string()),
    remedy: z.optional(z.string()),
  }),
} as const satisfies Record<ConversationEventType, z.core.$ZodType>;

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
