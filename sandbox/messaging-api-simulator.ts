import { randomBytes, randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { bearerToken, invalidSession, platformError, readJson } from './identity-simulator';
import type { SimulatorRequest, SimulatorResponse } from './simulator-server';

/**
 * Sandbox stand-in for Messaging for In-App and Web's public Messaging API (the platform's current
 * chat product), as its documentation and the official web sample app use it:
 * - `POST /iamessage/api/v2/authorization/unauthenticated/access-token` `{orgId, esDeveloperName,
 *   capabilitiesVersion, platform}` → `{accessToken, lastEventId}`: a JWT (signed here with a key
 *   made at start) for a new end user (its `sub`), expiring after `tokenLifetimeMs`;
 * - `GET /iamessage/api/v2/authorization/continuation-access-token` (Bearer): a new JWT for the same end user;
 * - `POST /iamessage/api/v2/conversation` `{conversationId, esDeveloperName, routingAttributes?}`:
 *   the id must be a lowercase UUID; a routing result follows on the stream;
 * - `POST /iamessage/api/v2/conversation/{id}/message` `{message: {id, messageType,
 *   staticContent: {formatType, text}}, esDeveloperName}`: echoed on the stream as the end user's
 *   message, then acknowledged as delivered;
 * - `DELETE /iamessage/api/v2/conversation/{id}?esDeveloperName=`: closed by the end user;
 * - `GET /iamessage/api/v2/conversation/{id}/entries` → `{conversationEntries: [...]}`;
 * - `GET /eventrouter/v1/sse` (Bearer, `X-Org-Id`, `Last-Event-Id`): the end user's events as
 *   Server-Sent Events, each with an `id`; a `Last-Event-Id` replays what came after it.
 * An expired or unknown token gets 401 everywhere. What the documentation leaves unshown is marked
 * where it is chosen here: the statuses of successful writes (the sample only checks `ok`), the
 * entries list's field name, and the session status event's payload beyond its entry type.
 */

export type ParticipantRole = 'EndUser' | 'Agent' | 'Chatbot' | 'System';

export interface MessagingApiOptions {
  now?: () => number;
  /** Default 1 h. */
  tokenLifetimeMs?: number;
  /** An agent who joins every conversation and echoes texts (for `npm start`). */
  echoAgent?: boolean;
}

interface StreamedEvent {
  id: string;
  type: string;
  data: string;
  conversationId: string;
}

interface Subject {
  events: StreamedEvent[];
  listeners: Set<() => void>;
  open: number;
  maxOpen: number;
  opened: number;
}

interface ApiConversation {
  id: string;
  subject: string;
  deployment: string;
  routingAttributes: Record<string, unknown>;
  closed: boolean;
  entries: Array<Record<string, unknown>>;
  createdAtMs: number;
}

const API = '/iamessage/api/v2';
const UUID_LOWER = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class MessagingApi {
  private readonly now: () => number;
  private readonly tokenLifetimeMs: number;
  private readonly echoAgent: boolean;
  private readonly key = randomBytes(32);
  private readonly deployments = new Map<string, string>();
  private readonly subjects = new Map<string, Subject>();
  private readonly conversations = new Map<string, ApiConversation>();
  private readonly revoked = new Set<string>();
  private readonly drops = new Set<() => void>();
  private nextEventId = 0;
  /** Requests refused for an expired or unknown token. */
  unauthorized = 0;

  constructor(options: MessagingApiOptions = {}) {
    this.now = options.now ?? Date.now;
    this.tokenLifetimeMs = options.tokenLifetimeMs ?? 60 * 60 * 1000;
    this.echoAgent = options.echoAgent ?? false;
  }

  /** An embedded service deployment of an org, so access tokens can be issued for it. */
  registerDeployment(orgId: string, deploymentName: string): void {
    this.deployments.set(deploymentName, orgId);
  }

  conversation(conversationId: string): ApiConversation {
    const conversation = this.conversations.get(conversationId);
    if (!conversation) throw new Error(`no Messaging API conversation ${conversationId}`);
    return conversation;
  }

  conversationIds(): string[] {
    return [...this.conversations.keys()];
  }

  /** Streams ever open at once for one end user (the gateway keeps at most one per conversation). */
  streamStats(): { opened: number; maxOpenPerEndUser: number; openNow: number } {
    let opened = 0;
    let maxOpen = 0;
    let openNow = 0;
    for (const subject of this.subjects.values()) {
      opened += subject.opened;
      maxOpen = Math.max(maxOpen, subject.maxOpen);
      openNow += subject.open;
    }
    return { opened, maxOpenPerEndUser: maxOpen, openNow };
  }

  /** Every open stream ends now, as a network fault or the platform's idle timeout would end it. */
  dropStreams(): void {
    for (const drop of [...this.drops]) drop();
  }

  /** Every token issued so far stops working (401), as when they expire. */
  expireTokens(): void {
    for (const conversation of this.conversations.values()) this.revoked.add(conversation.subject);
  }

  agentJoins(conversationId: string, name: string, role: ParticipantRole = 'Agent'): void {
    this.entry(conversationId, 'CONVERSATION_PARTICIPANT_CHANGED', 'ParticipantChanged', { role: 'System' }, undefined, {
      entries: [{ operation: 'add', displayName: name, participant: { role, subject: `agent-${name}` } }],
    });
  }

  agentWrites(conversationId: string, text: string, name = 'Sandbox Agent', role: ParticipantRole = 'Agent'): void {
    this.entry(conversationId, 'CONVERSATION_MESSAGE', 'Message', { role, subject: `agent-${name}` }, name, messagePayload(randomUUID(), text));
  }

  agentTypes(conversationId: string, name = 'Sandbox Agent'): void {
    this.entry(conversationId, 'CONVERSATION_TYPING_STARTED_INDICATOR', 'TypingStartedIndicator', { role: 'Agent' }, name, {}, false);
    this.entry(conversationId, 'CONVERSATION_TYPING_STOPPED_INDICATOR', 'TypingStoppedIndicator', { role: 'Agent' }, name, {}, false);
  }

  /** The agent ends the session: the session status changes (sent by the agent), and the agent leaves. */
  agentEnds(conversationId: string, name = 'Sandbox Agent'): void {
    this.entry(conversationId, 'CONVERSATION_SESSION_STATUS_CHANGED', 'SessionStatusChanged', { role: 'Agent', subject: `agent-${name}` }, name, {});
    this.entry(conversationId, 'CONVERSATION_PARTICIPANT_CHANGED', 'ParticipantChanged', { role: 'System' }, undefined, {
      entries: [{ operation: 'remove', displayName: name, participant: { role: 'Agent', subject: `agent-${name}` } }],
    });
  }

  async route(request: SimulatorRequest, signal: AbortSignal): Promise<SimulatorResponse | undefined> {
    const { method, path } = request;
    if (path === `${API}/authorization/unauthenticated/access-token` && method === 'POST') return this.accessToken(request);
    if (path === '/eventrouter/v1/sse' && method === 'GET') return this.stream(request, signal);
    if (path === `${API}/authorization/continuation-access-token` && method === 'GET') return this.continuation(request);
    if (!path.startsWith(`${API}/conversation`)) return undefined;
    const subject = await this.subjectOf(request);
    if (!subject) return this.refuse();
    if (path === `${API}/conversation` && method === 'POST') return this.create(request, subject);
    const match = /^\/iamessage\/api\/v2\/conversation\/([^/]+)(\/message|\/entries)?$/.exec(path);
    const conversation = match ? this.conversations.get(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !conversation || conversation.subject !== subject) return platformError(404, 'NOT_FOUND', 'no such conversation');
    if (match[2] === '/message' && method === 'POST') return this.send(request, conversation);
    if (match[2] === '/entries' && method === 'GET') return { status: 200, body: { conversationEntries: conversation.entries } };
    if (match[2] === undefined && method === 'DELETE') {
      if (!conversation.closed) {
        this.entry(conversation.id, 'CONVERSATION_CLOSE_CONVERSATION', 'CloseConversation', { role: 'EndUser', subject }, undefined, {}, false);
        conversation.closed = true;
      }
      return { status: 204 };
    }
    return undefined;
  }

  private refuse(): SimulatorResponse {
    this.unauthorized++;
    return invalidSession();
  }

  private async issue(subject: string): Promise<string> {
    const now = this.now();
    return new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(subject).setIssuedAt(Math.floor(now / 1000)).setExpirationTime(Math.floor((now + this.tokenLifetimeMs) / 1000)).setJti(randomUUID()).sign(this.key);
  }

  private async subjectOf(request: SimulatorRequest): Promise<string | undefined> {
    const token = bearerToken(request);
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.key, { currentDate: new Date(this.now()) });
      return payload.sub && !this.revoked.has(payload.sub) ? payload.sub : undefined;
    } catch {
      return undefined;
    }
  }

  private async accessToken(request: SimulatorRequest): Promise<SimulatorResponse> {
    const body = readJson(request) as { orgId?: unknown; esDeveloperName?: unknown } | undefined;
    const deployment = typeof body?.esDeveloperName === 'string' ? body.esDeveloperName : '';
    if (!this.deployments.has(deployment) || this.deployments.get(deployment) !== body?.orgId) return platformError(400, 'BAD_REQUEST', 'unknown org or embedded service deployment');
    const subject = `v2/iamessage/UNAUTH/NA/uid:${randomUUID()}`;
    this.subjects.set(subject, { events: [], listeners: new Set(), open: 0, maxOpen: 0, opened: 0 });
    // The stream starts after what the platform has sent so far.
    return { status: 200, body: { accessToken: await this.issue(subject), lastEventId: String(this.nextEventId) } };
  }

  private async continuation(request: SimulatorRequest): Promise<SimulatorResponse> {
    const subject = await this.subjectOf(request);
    if (!subject) return this.refuse();
    return { status: 200, body: { accessToken: await this.issue(subject) } };
  }

  private create(request: SimulatorRequest, subject: string): SimulatorResponse {
    const body = readJson(request) as { conversationId?: unknown; esDeveloperName?: unknown; routingAttributes?: unknown } | undefined;
    const id = typeof body?.conversationId === 'string' ? body.conversationId : '';
    if (!UUID_LOWER.test(id)) return platformError(400, 'BAD_REQUEST', 'conversationId must be a lowercase UUID');
    if (typeof body?.esDeveloperName !== 'string' || !this.deployments.has(body.esDeveloperName)) return platformError(400, 'BAD_REQUEST', 'unknown esDeveloperName');
    if (this.conversations.has(id)) return platformError(409, 'CONFLICT', 'conversation exists');
    const routingAttributes = typeof body.routingAttributes === 'object' && body.routingAttributes !== null ? (body.routingAttributes as Record<string, unknown>) : {};
    this.conversations.set(id, { id, subject, deployment: body.esDeveloperName, routingAttributes, closed: false, entries: [], createdAtMs: this.now() });
    this.entry(id, 'CONVERSATION_ROUTING_RESULT', 'RoutingResult', { role: 'Router' as ParticipantRole }, undefined, { routingType: 'Initial', failureType: 'None' });
    if (this.echoAgent) setTimeout(() => this.conversations.get(id)?.closed === false && this.agentJoins(id, 'Sandbox Agent'), 500).unref();
    return { status: 201, body: {} };
  }

  private send(request: SimulatorRequest, conversation: ApiConversation): SimulatorResponse {
    const body = readJson(request) as { message?: { id?: unknown; staticContent?: { text?: unknown } } } | undefined;
    const text = body?.message?.staticContent?.text;
    const id = typeof body?.message?.id === 'string' ? body.message.id : randomUUID();
    if (typeof text !== 'string') return platformError(400, 'BAD_REQUEST', 'message.staticContent.text is required');
    if (conversation.closed) return platformError(400, 'BAD_REQUEST', 'conversation closed');
    this.entry(conversation.id, 'CONVERSATION_MESSAGE', 'Message', { role: 'EndUser', subject: conversation.subject }, 'Guest', messagePayload(id, text));
    this.entry(conversation.id, 'CONVERSATION_DELIVERY_ACKNOWLEDGEMENT', 'DeliveryAcknowledgement', { role: 'System' }, undefined, { acknowledgedConversationEntryIdentifier: id }, false);
    if (this.echoAgent) setTimeout(() => !conversation.closed && this.agentWrites(conversation.id, `You said: ${text}`), 200).unref();
    return { status: 202, body: {} };
  }

  /** Appends one entry to the conversation's end user's stream (and to its entries when it is a transcript entry). */
  private entry(conversationId: string, type: string, entryType: string, sender: { role: ParticipantRole | string; subject?: string }, displayName: string | undefined, payload: Record<string, unknown>, listed = true): void {
    const conversation = this.conversation(conversationId);
    const identifier = randomUUID();
    const conversationEntry = {
      identifier,
      entryType,
      entryPayload: JSON.stringify({ entryType, id: identifier, ...payload }),
      sender: { role: sender.role, ...(sender.subject ? { subject: sender.subject } : {}) },
      ...(displayName ? { senderDisplayName: displayName } : {}),
      transcriptedTimestamp: this.now(),
    };
    if (listed) conversation.entries.push(conversationEntry);
    const subject = this.subjects.get(conversation.subject)!;
    this.nextEventId++;
    subject.events.push({ id: String(this.nextEventId), type, conversationId, data: JSON.stringify({ channelType: 'embedded_messaging', conversationId, conversationEntry }) });
    for (const wake of subject.listeners) wake();
  }

  private async stream(request: SimulatorRequest, signal: AbortSignal): Promise<SimulatorResponse> {
    if (request.headers.accept !== 'text/event-stream') return platformError(400, 'BAD_REQUEST', 'Accept must be text/event-stream');
    const subjectId = await this.subjectOf(request);
    if (!subjectId) return this.refuse();
    if (typeof request.headers['x-org-id'] !== 'string') return platformError(400, 'BAD_REQUEST', 'X-Org-Id is required');
    const subject = this.subjects.get(subjectId)!;
    const header = request.headers['last-event-id'];
    let after = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : 0;
    return {
      status: 200,
      contentType: 'text/event-stream',
      stream: async (write) => {
        subject.open++;
        subject.opened++;
        subject.maxOpen = Math.max(subject.maxOpen, subject.open);
        let wake = () => {};
        let dropped = false;
        const drop = () => {
          dropped = true;
          wake();
        };
        this.drops.add(drop);
        try {
          while (!signal.aborted && !dropped) {
            for (const event of subject.events) {
              if (Number(event.id) <= after) continue;
              write(`id: ${event.id}\nevent: ${event.type}\ndata: ${event.data}\n\n`);
              after = Number(event.id);
            }
            await new Promise<void>((resolve) => {
              wake = resolve;
              subject.listeners.add(resolve);
              signal.addEventListener('abort', () => resolve(), { once: true });
            });
            subject.listeners.delete(wake);
          }
        } finally {
          this.drops.delete(drop);
          subject.open--;
        }
      },
    };
  }
}

function messagePayload(id: string, text: string): Record<string, unknown> {
  return { abstractMessage: { messageType: 'StaticContentMessage', id, staticContent: { formatType: 'Text', text } } };
}
