import type { ConversationSession } from './conversation-api';
import type { ConversationTransport, EventBatch, OutgoingMessage, ResumePosition, TransportMessage } from './conversation-transport';
import { endReasonOf, messageOf } from './long-poll-messages';

/**
 * The spec's long-poll behind the transport interface: each read is one
 * `GET .../messages?ack=<sequence>&timeout=<s>`; a 204 reads as undefined (the same ack again).
 * The mapping of the chat vocabulary is `messageOf`'s (long-poll-messages.ts).
 */
export class LongPollTransport implements ConversationTransport {
  readonly name = 'long_poll' as const;
  opened = 0;

  constructor(
    private readonly session: ConversationSession,
    private readonly pollTimeoutSeconds: number,
    private readonly now: () => number,
  ) {}

  async read(from: ResumePosition, options: { signal: AbortSignal; waitMs: number }): Promise<EventBatch | undefined> {
    this.opened++;
    const answer = await this.session.poll(from.sequence, this.pollTimeoutSeconds, options);
    if (!answer) return undefined;
    const fallbackAt = new Date(this.now()).toISOString();
    return { events: answer.messages.map((event) => withEnd(messageOf(event, fallbackAt))), position: { sequence: answer.sequence } };
  }

  send(message: OutgoingMessage): Promise<{ platformMessageId?: string }> {
    return this.session.send(message);
  }

  route(queue: string): Promise<void> {
    return this.session.route(queue);
  }

  end(): Promise<void> {
    return this.session.end();
  }

  /** The long-poll API keeps no record to list: the transcript comes from what the gateway stored. */
  entries(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  close(): void {}
}

function withEnd(message: ReturnType<typeof messageOf>): TransportMessage | undefined {
  if (!message) return undefined; // a typing indicator
  return message.lifecycle === 'ended' ? { ...message, endedBy: endReasonOf(message.details) } : message;
}
