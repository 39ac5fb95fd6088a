import type { ConversationEndReason, MessageWrite } from '../store/items';
import type { ConversationEntry } from './transcript';

/**
 * The one interface the poller and the conversation routes use to talk to the platform inside a
 * conversation. Two implementations: the spec's long-poll (`ack` and `sequence`,
 * long-poll-transport.ts) and the platform's current Messaging API for In-App and Web (Server-Sent
 * Events resumed by event id, messaging-api-transport.ts). Leases, handover, sealed tokens,
 * lifecycle and transcripts sit above it unchanged.
 */

export const CONVERSATION_TRANSPORTS = ['long_poll', 'messaging_api'] as const;
export type ConversationTransportName = (typeof CONVERSATION_TRANSPORTS)[number];

/** One platform event as the gateway stores and publishes it, with the lifecycle step it causes. */
export type TransportMessage = MessageWrite & {
  lifecycle?: 'queued' | 'agent_joined' | 'ended';
  /** With `lifecycle: 'ended'`: who ended it. */
  endedBy?: Extract<ConversationEndReason, 'agent' | 'end_user' | 'system' | 'failed'>;
};

/**
 * Where a conversation's events resume: the last sequence stored (the long-poll's `ack`) and, on
 * the Messaging API, the id of that event (sent as `Last-Event-Id`). Both move in one conditional
 * write, so a redelivery after a drop, handover or kill lands on the same sequences.
 */
export interface ResumePosition {
  sequence: number;
  eventId?: string;
}

/** Events read in order. `events[i]` sits at sequence `position.sequence - events.length + 1 + i`. */
export interface EventBatch {
  /** Undefined for an event the gateway neither stores nor publishes (a typing indicator: a state only). */
  events: Array<TransportMessage | undefined>;
  position: ResumePosition;
}

export type OutgoingMessage = { text: string } | { media: { url: string; mimeType: string; name?: string } };

export interface ConversationTransport {
  readonly name: ConversationTransportName;
  /**
   * The next events after `from`; undefined when none came within the wait (read again from the same
   * position). Throws `PlatformError` 401 when the conversation's token is refused for good.
   */
  read(from: ResumePosition, options: { signal: AbortSignal; waitMs: number }): Promise<EventBatch | undefined>;
  send(message: OutgoingMessage): Promise<{ platformMessageId?: string }>;
  /** Hands the conversation to an agent queue. */
  route(queue: string): Promise<void>;
  end(): Promise<void>;
  /** The platform's own record of the conversation, oldest first; undefined where the API has none (the long-poll). */
  entries(): Promise<ConversationEntry[] | undefined>;
  /** Closes anything held open (a stream) when the holder lets the conversation go. */
  close(): void;
  /** Connections opened to read (polls, or streams). */
  readonly opened: number;
}
