import { randomUUID } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ProblemError } from '../api/problem';
import { PlatformError } from '../http/platform-error';
import type { ConversationTransport, EventBatch, OutgoingMessage, ResumePosition } from './conversation-transport';
import { closeConversation, continuationAccessToken, createConversation, listEntries, openEventStream, sendText, tokenExpiresAt, unauthenticatedAccessToken, type MessagingApiEndpoint } from './messaging-api-client';
import { eventMessage, transcriptEntries } from './messaging-api-events';
import type { ConversationEntry } from './transcript';

/**
 * Messaging for In-App and Web behind the transport interface. One Server-Sent Events stream per
 * live conversation, opened by its holder and kept open across reads; a read hands out the events
 * that arrived, with the last one's id as the resume position. The holder stores that id with the
 * sequence (one conditional write), so the next stream (after a drop, a handover or a killed
 * poller) resumes with `Last-Event-Id` where the stored events end: nothing lost, nothing twice.
 *
 * The token: renewed (continuation token) before its `exp`; a 401 renews it once, and a second
 * 401 is the caller's (the conversation ends as expired, with the restart remedy).
 */

/** Events handed out by one read at most. */
const MAX_BATCH = 50;

interface OpenStream {
  controller: AbortController;
  queue: EventSourceMessage[];
  /** Set once the stream ended or failed: the next read past the queue reconnects. */
  ended?: Error;
  wake?: () => void;
}

export interface MessagingApiTransportOptions {
  endpoint: MessagingApiEndpoint;
  platformConversationId: string;
  token: string;
  /** Seals and stores a renewed token with the conversation. */
  onRenewed: (token: string) => Promise<void>;
  now: () => number;
  /** Renew this long before the token's `exp`. */
  renewBeforeMs?: number;
}

export class MessagingApiTransport implements ConversationTransport {
  readonly name = 'messaging_api' as const;
  opened = 0;
  private token: string;
  private stream?: OpenStream;
  /** The id of the last event this stream handed out (where it stands). */
  private streamAt?: string;
  private renewedAfter401 = false;

  constructor(private readonly options: MessagingApiTransportOptions) {
    this.token = options.token;
  }

  async read(from: ResumePosition, options: { signal: AbortSignal; waitMs: number }): Promise<EventBatch | undefined> {
    await this.renewIfExpiring();
    // A batch handed out but not stored (a fault before the write): start again from what is stored.
    if (this.stream && this.streamAt !== from.eventId) this.close();
    if (!this.stream) await this.open(from.eventId, options.signal);
    const first = await this.next(options.waitMs, options.signal);
    if (!first) return undefined;
    const stream = this.stream!;
    const batch = [first, ...stream.queue.splice(0, MAX_BATCH - 1)];
    // An event without an id keeps the last one (the SSE rule), so a resume never skips past it.
    for (const event of batch) if (event.id) this.streamAt = event.id;
    const fallbackAt = new Date(this.options.now()).toISOString();
    return {
      events: batch.map((event) => eventMessage(event, this.options.platformConversationId, fallbackAt)),
      position: { sequence: from.sequence + batch.length, ...(this.streamAt ? { eventId: this.streamAt } : {}) },
    };
  }

  async send(message: OutgoingMessage): Promise<{ platformMessageId?: string }> {
    if (!('text' in message)) {
      throw new ProblemError({
        type: 'urn:integration-gateway:problem:media-not-supported',
        title: 'Media is not sent on Messaging for In-App and Web',
        status: 409,
        detail: 'The gateway sends text on the Messaging API; file attachments go through a separate upload it does not make. Nothing was sent.',
        remedy: 'Send the media as a link in a text message.',
      });
    }
    // The entry's id is the client's (a lowercase UUID), so the platform's echo and entries name it.
    const messageId = randomUUID();
    await this.withRenewal(() => sendText(this.options.endpoint, this.token, this.options.platformConversationId, messageId, message.text));
    return { platformMessageId: messageId };
  }

  route(): Promise<void> {
    return Promise.reject(
      new ProblemError({
        type: 'urn:integration-gateway:problem:handoff-not-supported',
        title: 'Handoff is the deployment\'s routing on Messaging for In-App and Web',
        status: 409,
        detail: 'The Messaging API is the end user\'s side: it has no call to route a conversation to a queue. Nothing changed.',
        remedy: 'Route with the deployment\'s Omni-Channel flow (the pre-chat routing attributes reach it), or use the long-poll transport for handoffs.',
      }),
    );
  }

  async end(): Promise<void> {
    await this.withRenewal(() => closeConversation(this.options.endpoint, this.token, this.options.platformConversationId));
  }

  async entries(): Promise<ConversationEntry[]> {
    const entries = await this.withRenewal(() => listEntries(this.options.endpoint, this.token, this.options.platformConversationId));
    return transcriptEntries(entries, new Date(this.options.now()).toISOString());
  }

  close(): void {
    this.stream?.controller.abort();
    this.stream = undefined;
    this.streamAt = undefined;
  }

  private async open(lastEventId: string | undefined, signal: AbortSignal): Promise<void> {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let body: ReadableStream<Uint8Array>;
    try {
      body = await this.withRenewal(() => openEventStream(this.options.endpoint, this.token, lastEventId, controller.signal));
    } catch (error) {
      signal.removeEventListener('abort', onAbort);
      throw error;
    }
    this.opened++;
    const stream: OpenStream = { controller, queue: [] };
    this.stream = stream;
    this.streamAt = lastEventId;
    const parser = createParser({
      onEvent: (event) => {
        stream.queue.push(event);
        stream.wake?.();
      },
    });
    void (async () => {
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) parser.feed(chunk.value);
        stream.ended = dropped('the event stream ended');
      } catch {
        stream.ended = dropped('the event stream broke');
      } finally {
        signal.removeEventListener('abort', onAbort);
        stream.wake?.();
      }
    })();
  }

  /** The next event, or undefined after `waitMs` with none; throws once the stream dropped (the holder reconnects). */
  private async next(waitMs: number, signal: AbortSignal): Promise<EventSourceMessage | undefined> {
    const stream = this.stream!;
    if (stream.queue.length === 0 && !stream.ended) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, waitMs);
        signal.addEventListener('abort', done, { once: true });
        stream.wake = done;
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          stream.wake = undefined;
          resolve();
        }
      });
    }
    const event = stream.queue.shift();
    if (event) return event;
    if (stream.ended && !signal.aborted) {
      const error = stream.ended;
      this.close();
      throw error;
    }
    return undefined;
  }

  private async renewIfExpiring(): Promise<void> {
    const expiresAt = tokenExpiresAt(this.token);
    if (expiresAt !== undefined && expiresAt - this.options.now() < (this.options.renewBeforeMs ?? 5 * 60_000)) await this.renew();
  }

  private async renew(): Promise<void> {
    this.token = await continuationAccessToken(this.options.endpoint, this.token);
    await this.options.onRenewed(this.token);
  }

  /** A 401 renews the token once and tries again; a second 401 is the caller's. */
  private async withRenewal<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      this.renewedAfter401 = false;
      return result;
    } catch (error) {
      if (!(error instanceof PlatformError && error.status === 401) || this.renewedAfter401) throw error;
      this.renewedAfter401 = true;
      await this.renew();
      return call();
    }
  }
}

function dropped(reason: string): PlatformError {
  return new PlatformError({ platform: 'messaging', kind: 'network', attempts: 1, method: 'GET', path: '/eventrouter/v1/sse', reason, retryable: true });
}

/** Starts a conversation on the Messaging API: a token for a new end user, then the conversation under a client-made lowercase UUID. */
export async function startOnMessagingApi(endpoint: MessagingApiEndpoint, routingAttributes: Record<string, string>): Promise<{ platformConversationId: string; sessionToken: string; lastEventId?: string }> {
  const { accessToken, lastEventId } = await unauthenticatedAccessToken(endpoint);
  const platformConversationId = randomUUID().toLowerCase();
  await createConversation(endpoint, accessToken, platformConversationId, routingAttributes);
  return { platformConversationId, sessionToken: accessToken, ...(lastEventId ? { lastEventId } : {}) };
}
