import * as z from 'zod/mini';
import type { TransportMessage } from './conversation-transport';
import type { ConversationEntry } from './transcript';

/**
 * The Messaging API for In-App and Web's vocabulary, read into the gateway's messages (pure).
 * Server-Sent Events carry their type as the SSE `event` field and, in `data`, JSON with the
 * `conversationId` and a `conversationEntry`: `identifier`, `senderDisplayName`, `sender` (`role`:
 * EndUser, Agent, Chatbot, System, ...), `transcriptedTimestamp`, and `entryPayload`, itself a JSON
 * string whose `entryType` says what it is (Message with `abstractMessage.staticContent.text`,
 * ParticipantChanged with `entries[].operation` add/remove, `displayName`, `participant.role`,
 * RoutingResult with `routingType`, ...). The official web sample parses them the same way.
 */

const Sender = z.looseObject({ role: z.optional(z.string()), subject: z.optional(z.string()) });

/** A conversation entry as events and the entries list carry it. */
export const PlatformEntry = z.looseObject({
  identifier: z.optional(z.string()),
  entryType: z.optional(z.string()),
  /** A JSON string on the event stream (an object is accepted too). */
  entryPayload: z.optional(z.union([z.string(), z.record(z.string(), z.unknown())])),
  senderDisplayName: z.optional(z.string()),
  sender: z.optional(Sender),
  transcriptedTimestamp: z.optional(z.union([z.number(), z.string()])),
});
export type PlatformEntry = z.infer<typeof PlatformEntry>;

export const EventData = z.looseObject({ conversationId: z.optional(z.string()), conversationEntry: z.optional(PlatformEntry) });

const EntryPayload = z.looseObject({
  entryType: z.optional(z.string()),
  abstractMessage: z.optional(
    z.looseObject({
      messageType: z.optional(z.string()),
      staticContent: z.optional(z.looseObject({ formatType: z.optional(z.string()), text: z.optional(z.string()) })),
    }),
  ),
  entries: z.optional(z.array(z.looseObject({ operation: z.optional(z.string()), displayName: z.optional(z.string()), participant: z.optional(Sender) }))),
  routingType: z.optional(z.string()),
  failureType: z.optional(z.string()),
});
type EntryPayload = z.infer<typeof EntryPayload>;

export function payloadOf(entry: PlatformEntry): EntryPayload {
  const raw = entry.entryPayload;
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      value = {};
    }
  }
  const parsed = EntryPayload.safeParse(value ?? {});
  return parsed.success ? parsed.data : {};
}

function timeOf(entry: PlatformEntry, fallbackAt: string): string {
  const at = entry.transcriptedTimestamp;
  const ms = typeof at === 'number' ? at : typeof at === 'string' ? (/^\d+$/.test(at) ? Number(at) : Date.parse(at)) : Number.NaN;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : fallbackAt;
}

/** The gateway's words for the platform's participant roles (the transcript prints agent, Bot, Customer, System). */
export function senderOf(role: string | undefined): string {
  if (role === 'EndUser') return 'end_user';
  if (role === 'Chatbot') return 'automated';
  if (role === 'Agent' || role === 'Supervisor') return 'agent';
  return 'system';
}

function endedByOf(role: string | undefined): TransportMessage['endedBy'] {
  return role === 'EndUser' ? 'end_user' : role === 'Agent' || role === 'Chatbot' ? 'agent' : 'system';
}

function snake(type: string): string {
  return type.replace(/^CONVERSATION_/, '').toLowerCase();
}

/**
 * Pure: one Server-Sent Event as the gateway stores it, or undefined when it stores nothing: another
 * conversation's event (the stream is the end user's, not the conversation's), the echo of what the
 * gateway itself sent as the end user (kept as a sent message already), and typing indicators (a
 * state, not a message). Delivery and read acknowledgements are kept as system events (never
 * transcript lines: the transcript comes from the platform's entries). An unknown type keeps its
 * whole payload.
 */
export function eventMessage(
  event: { event?: string | undefined; data: string },
  platformConversationId: string,
  fallbackAt: string,
): TransportMessage | undefined {
  const type = event.event ?? 'message';
  let json: unknown;
  try {
    json = JSON.parse(event.data);
  } catch {
    json = {};
  }
  const data = EventData.safeParse(json);
  const body = data.success ? data.data : {};
  if (body.conversationId !== undefined && body.conversationId !== platformConversationId) return undefined;
  const entry = body.conversationEntry ?? {};
  const payload = payloadOf(entry);
  const role = entry.sender?.role;
  const senderName = entry.senderDisplayName;
  const common = { direction: 'inbound' as const, sentAt: timeOf(entry, fallbackAt), ...(entry.identifier ? { platformMessageId: entry.identifier } : {}) };
  switch (type) {
    case 'CONVERSATION_MESSAGE': {
      if (role === 'EndUser') return undefined;
      const text = payload.abstractMessage?.staticContent?.text;
      return {
        ...common,
        type: 'text',
        sender: senderOf(role),
        ...(text !== undefined ? { text } : {}),
        details: { ...(senderName ? { senderName } : {}), ...(role ? { senderRole: role } : {}), ...(text === undefined ? { entryPayload: payload } : {}) },
      };
    }
    case 'CONVERSATION_PARTICIPANT_CHANGED': {
      const change = payload.entries?.[0];
      const name = change?.displayName ?? senderName;
      const joined = change?.operation === 'add';
      return {
        ...common,
        type: 'system',
        sender: 'system',
        ...(joined ? { lifecycle: 'agent_joined' as const } : {}),
        ...(name ? { text: name } : {}),
        details: {
          systemEvent: joined ? 'agent_joined' : 'participant_left',
          ...(name ? { senderName: name } : {}),
          ...(change?.participant?.role ? { participantRole: change.participant.role } : {}),
        },
      };
    }
    case 'CONVERSATION_ROUTING_RESULT':
      // Routed to a queue (the first routing, no failure): the conversation waits for an agent.
      return {
        ...common,
        type: 'system',
        sender: 'system',
        ...(payload.routingType === 'Initial' && (payload.failureType === undefined || payload.failureType === 'None') ? { lifecycle: 'queued' as const } : {}),
        details: {
          systemEvent: 'routing_result',
          ...(payload.routingType ? { routingType: payload.routingType } : {}),
          ...(payload.failureType ? { failureType: payload.failureType } : {}),
        },
      };
    case 'CONVERSATION_SESSION_STATUS_CHANGED':
    case 'CONVERSATION_CLOSE_CONVERSATION': {
      // The session ended, whoever ended it (the sender's role says who); a close is the end user's.
      const endedBy = type === 'CONVERSATION_CLOSE_CONVERSATION' ? 'end_user' : endedByOf(role);
      return {
        ...common,
        type: 'system',
        sender: 'system',
        lifecycle: 'ended',
        endedBy,
        details: { systemEvent: 'ended', reason: endedBy, ...(role ? { senderRole: role } : {}) },
      };
    }
    case 'CONVERSATION_TYPING_STARTED_INDICATOR':
    case 'CONVERSATION_TYPING_STOPPED_INDICATOR':
      return undefined;
    default:
      return { ...common, type: 'system', sender: 'system', details: { systemEvent: snake(type), payload: json as Record<string, unknown> } };
  }
}

/** Entry types that are transcript lines (acknowledgements and typing are not). */
const TRANSCRIPT_ENTRY_TYPES = new Set(['Message', 'ParticipantChanged', 'RoutingResult', 'SessionStatusChanged']);

/** Pure: the platform's entries list as the transcript's entries, both sides, oldest first. */
export function transcriptEntries(entries: readonly PlatformEntry[], fallbackAt: string): ConversationEntry[] {
  const lines: ConversationEntry[] = [];
  for (const [index, entry] of entries.entries()) {
    const payload = payloadOf(entry);
    const entryType = entry.entryType ?? payload.entryType ?? '';
    if (!TRANSCRIPT_ENTRY_TYPES.has(entryType)) continue;
    const role = entry.sender?.role;
    const common = {
      id: `p${entry.identifier ?? index}`,
      at: timeOf(entry, fallbackAt),
      ...(entry.senderDisplayName ? { senderName: entry.senderDisplayName } : {}),
    };
    if (entryType === 'Message') {
      const text = payload.abstractMessage?.staticContent?.text;
      lines.push({
        ...common,
        direction: role === 'EndUser' ? 'outbound' : 'inbound',
        type: 'text',
        sender: senderOf(role),
        ...(text !== undefined ? { text } : {}),
      });
    } else if (entryType === 'ParticipantChanged') {
      const change = payload.entries?.[0];
      lines.push({
        ...common,
        direction: 'inbound',
        type: 'system',
        sender: 'system',
        systemEvent: change?.operation === 'add' ? 'agent_joined' : 'participant_left',
        ...(change?.displayName ? { text: change.displayName } : {}),
      });
    } else {
      lines.push({
        ...common,
        direction: 'inbound',
        type: 'system',
        sender: 'system',
        systemEvent: entryType === 'RoutingResult' ? 'routing_result' : 'ended',
      });
    }
  }
  return lines.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}
