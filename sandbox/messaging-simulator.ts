import { randomBytes, randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import * as z from 'zod';
import type { IdentityService } from './identity-simulator';
import { bearerToken, invalidSession, platformError, randomId, readJson } from './identity-simulator';
import type { SimulatorRequest, SimulatorResponse } from './simulator-server';

/**
 * Sandbox stand-in for the CRM messaging platform's conversation API, as the spec gives it:
 * - `POST /v58.0/conversations/` (identity access token) -> `{conversationId, token}`, the token
 *   being a short-lived session JWT signed by the simulator;
 * - `GET /v58.0/conversations/{id}/messages?ack=<seq>&timeout=<s>` (session token): the long-poll;
 * - `POST /v58.0/conversations/{id}/messages` (session token): send. The spec shows only
 *   "POST /messages/" and says its payload and path prefix are not shown: this path and the body
 *   `{message: {text}}` or `{message: {media: {url, mimeType, name?}}}` are the sandbox's choice;
 * - `DELETE /v58.0/conversations/{id}` (session token): the end user ends the chat (not in the
 *   spec either);
 * - `POST /v58.0/conversations/{id}/route` (session token) `{queue?}`: hand the conversation to a
 *   human agent queue (the spec's handoff between automated and human agents; it shows no call, so
 *   the path is the sandbox's choice): the session goes back to 'Waiting' with a queue update;
 * - `GET|PATCH /services/data/v58.0/sobjects/MessagingSession/{recordId}` (identity token): the
 *   session record, for transcript capture into a custom field; a PATCH of a custom field the
 *   object does not have fails with 400 `INVALID_FIELD`, as the CRM answers;
 * - `GET /services/data/v58.0/sobjects/MessagingSession/describe` (identity token): the session
 *   object's fields (standard ones plus the custom fields defined with `defineSessionField`);
 * - `GET /services/data/v58.0/query?q=` (identity token): two queries only, in the CRM's query
 *   language: `SELECT Id FROM MessagingSession WHERE ConversationId = '<id>'` and
 *   `SELECT Id FROM PermissionSetLicenseAssign WHERE AssigneeId = '<user id>' AND
 *   PermissionSetLicense.DeveloperName = 'MessagingUser'` (whether the user has the license).
 *
 * Long-poll semantics follow the platform's older chat API (the Chat REST API Developer Guide; docs/platform-contracts.md):
 * - `ack` absent: no long-poll is established; the answer is an immediate 204 ("no messages
 *   received", the spec's "include ack=-1" remedy). `ack=-1` (or 0) means from the start;
 *   `ack=n` means events with sequence > n;
 * - 200 `{messages: [{type, message}], sequence}` as soon as such events exist, where `sequence`
 *   is the last one delivered: pass it back as `ack`;
 * - 204 when nothing arrived within `timeout` seconds (fractional allowed; `pollSecondsToMs`
 *   scales seconds for tests);
 * - 409 while another poll on the same conversation is open; a poll whose client disconnects
 *   frees the slot at once, or `closeNoticeLagMs` later (`setCloseNoticeLag`: a platform behind a
 *   load balancer that learns of a closed connection late);
 * - 401 `INVALID_SESSION_ID` for an expired or invalid session token;
 * - once the conversation has ended, polls still deliver the events not yet acknowledged
 *   (ending with `ChatEnded`); after that every poll and send gets 403
 *   `[{"message":"session ended","errorCode":"SESSION_ENDED"}]` (the CRM's usual error array,
 *   like the 401).
 * Events delivered to the gateway are the other side's: agent and system events. The end user's
 * own sends are not echoed; they appear in the transcript.
 *
 * What a poll delivers speaks only the vocabulary of the platform's chat REST API (the Messages
 * resource, "Chat REST API Messages Response Objects"), with the fields its response bodies list:
 * `ChatRequestSuccess {queuePosition, estimatedWaitTime}`, `QueueUpdate {position, estimatedWaitTime}`,
 * `ChatEstablished` and `ChatTransferred {name, userId, sneakPeekEnabled}`, `ChatMessage {name, text,
 * agentId}`, `AgentTyping` / `AgentNotTyping` / `AgentDisconnect {}`, `ChatRequestFail {reason}`,
 * `ChatEnded {reason}` ("client" when the visitor, here the end user, ended it: the documented
 * ChatEnd reason), `ChasitorIdleTimeoutWarningEvent {idleTimeoutWarningEvent}`, `FileTransfer {type}`
 * and `CustomEvent {type, data}`. Those messages carry no timestamp and no id; neither does this.
 */

const DEFAULT_SESSION_TOKEN_LIFETIME_MS = 60 * 60 * 1000;
const DEFAULT_POLL_TIMEOUT_SECONDS = 30;
const MAX_POLL_TIMEOUT_SECONDS = 120;

/** The documented `type` names this stand-in speaks (docs/platform-contracts.md). */
export type ConversationEventType =
  | 'ChatRequestSuccess'
  | 'ChatRequestFail'
  | 'QueueUpdate'
  | 'ChatEstablished'
  | 'ChatTransferred'
  | 'ChatMessage'
  | 'AgentTyping'
  | 'AgentNotTyping'
  | 'AgentDisconnect'
  | 'ChatEnded'
  | 'ChasitorIdleTimeoutWarningEvent'
  | 'FileTransfer'
  | 'CustomEvent';
export type SenderRole = 'EndUser' | 'Agent' | 'System';
export type SessionStatus = 'Waiting' | 'Active' | 'Ended';

/** One event as a poll delivers it. */
export interface ConversationEvent {
  type: ConversationEventType;
  message: Record<string, unknown>;
}

export interface PollAnswer {
  messages: ConversationEvent[];
  sequence: number;
}

export interface TranscriptEntry {
  at: string;
  role: SenderRole;
  /** The event's type; the end user's own sends are `ChatMessage`, the chat API's name for a visitor's message. */
  type: ConversationEventType;
  message: Record<string, unknown>;
}

export interface MediaAttachment {
  url: string;
  mimeType: string;
  name?: string;
}

/**
 * The MessagingSession record: standard fields the object reference documents (the agent who
 * accepted is its `OwnerId`, a user id; the record has no agent name) plus custom ones (pre-chat
 * mappings, transcript).
 */
export type MessagingSessionRecord = {
  Id: string;
  Status: SessionStatus;
  ConversationId: string;
  EndUserContactId: string | null;
  AgentType: 'Agent';
  OwnerId: string | null;
  StartTime: string;
  AcceptTime: string | null;
  EndTime: string | null;
} & Record<string, string | null>;

/** Raised when a session record changes, like the platform's record-triggered automation sees. */
export interface RecordUpdateEvent {
  object: 'MessagingSession';
  recordId: string;
  conversationId: string;
  changedFields: Record<string, string | null>;
  at: string;
}

const STANDARD_FIELDS = new Set(['Id', 'Status', 'ConversationId', 'EndUserContactId', 'AgentType', 'OwnerId', 'StartTime', 'AcceptTime', 'EndTime']);

const PrechatItem = z.object({
  label: z.string(),
  value: z.string(),
  transcriptFields: z.array(z.string()).optional(),
  displayToAgent: z.boolean().optional(),
});
export type PrechatItem = z.infer<typeof PrechatItem>;

const StartConversationBody = z.object({
  messagingPlatformKey: z.string().min(1),
  contactId: z.string().min(1).optional(),
  prechatDetails: z.array(PrechatItem).optional(),
});

const SendMessageBody = z.object({
  message: z.union([
    z.object({ text: z.string().min(1) }),
    z.object({ media: z.object({ url: z.string().min(1), mimeType: z.string().min(1), name: z.string().optional() }) }),
  ]),
});

const SessionRecordPatch = z.record(z.string(), z.string().nullable());

const RouteBody = z.object({ queue: z.string().min(1).max(80).optional() });

function queryResult(type: string, ids: string[]): SimulatorResponse {
  return { status: 200, body: { totalSize: ids.length, done: true, records: ids.map((Id) => ({ attributes: { type }, Id })) } };
}

interface Conversation {
  id: string;
  record: MessagingSessionRecord;
  prechatDetails: PrechatItem[];
  /** What the gateway's polls deliver; an event's sequence is its index + 1. */
  inbox: ConversationEvent[];
  /** Everything, both sides, in order. */
  timeline: TranscriptEntry[];
  tokenExpiresAt: number;
  /** The session token the start answered with, so a test can look for it where it must not be. */
  sessionToken?: string;
  polling: boolean;
  wake: (() => void) | undefined;
  /** The agent queue a handoff routed it to. */
  routedTo: string | undefined;
  /** The user id of the agent engaged in the chat (ChatEstablished / ChatTransferred `userId`). */
  agentUserId: string | undefined;
  /** The agent's display name (ChatEstablished / ChatTransferred `name`): the chat's, not the record's. */
  agentName: string | undefined;
  /** The messaging channel it started on. */
  messagingPlatformKey: string;
  createdAtMs: number;
  firstPollAtMs: number | undefined;
  lastPollEndMs: number | undefined;
  maxGapMs: number;
  polls: number;
  /** Poll requests in progress right now (more than one is a client breaking rule 4). */
  attempts: number;
}

export interface MessagingPlatformOptions {
  identity: IdentityService;
  sessionTokenLifetimeMs?: number;
  /** Milliseconds per `timeout` second; tests may shrink it. Default 1000. */
  pollSecondsToMs?: number;
  /** For `npm start`: an agent joins every conversation at once and echoes each text. */
  echoAgent?: boolean;
  /** Custom long-text fields of MessagingSession. Default: `Transcript__c`. */
  sessionFields?: string[];
}

/** What the long-polls did: a second poll on one conversation (409) is a client bug, so it is counted. */
export interface PollStats {
  /** Long-polls opened (waiting, or answered at once). */
  opened: number;
  /** Polls refused with 409 because another was open on the same conversation. */
  conflicts: number;
  /** Polls open right now. */
  open: number;
  /** The most polls open at once across all conversations. */
  maxOpen: number;
  /** The most poll requests that reached one conversation at the same time (1 when the client keeps rule 4). */
  maxPerConversation: number;
}

/** When a conversation was polled, for benchmarks: first poll after start, longest time with no poll open. */
export interface PollTimings {
  startedAt: number;
  firstPollAt: number | undefined;
  /** Longest stretch (ms) between a poll's end and the next poll's start. */
  maxGapMs: number;
  polls: number;
}

type SessionCheck = { ok: true; conversation: Conversation } | { ok: false; response: SimulatorResponse };

export class MessagingPlatform {
  private readonly identity: IdentityService;
  private readonly sessionTokenLifetimeMs: number;
  private readonly pollSecondsToMs: number;
  private closeNoticeLagMs = 0;
  private readonly echoAgent: boolean;
  /** Signs session tokens; generated per run, never stored. */
  private readonly sessionKey = randomBytes(32);
  private readonly channels = new Set<string>();
  private readonly conversations = new Map<string, Conversation>();
  private readonly updates: RecordUpdateEvent[] = [];
  private readonly updateListeners: Array<(event: RecordUpdateEvent) => void> = [];
  private readonly sessionFields: Set<string>;
  private readonly stats: PollStats = { opened: 0, conflicts: 0, open: 0, maxOpen: 0, maxPerConversation: 0 };
  /** When each inbox event was emitted (ms), by conversation: benchmarks measure delivery from it. */
  private readonly emittedAt = new Map<string, number[]>();

  constructor(options: MessagingPlatformOptions) {
    this.identity = options.identity;
    this.sessionTokenLifetimeMs = options.sessionTokenLifetimeMs ?? DEFAULT_SESSION_TOKEN_LIFETIME_MS;
    this.pollSecondsToMs = options.pollSecondsToMs ?? 1000;
    this.echoAgent = options.echoAgent ?? false;
    this.sessionFields = new Set(options.sessionFields ?? ['Transcript__c']);
  }

  /** From now on the platform notices a client's closed poll this much later (its slot stays taken meanwhile). */
  setCloseNoticeLag(ms: number): void {
    this.closeNoticeLagMs = Math.max(0, ms);
  }

  /** Adds a custom field to MessagingSession (an admin adding the transcript's long-text field). */
  defineSessionField(name: string): void {
    this.sessionFields.add(name);
  }

  removeSessionField(name: string): void {
    this.sessionFields.delete(name);
  }

  pollStats(): PollStats {
    return { ...this.stats };
  }

  pollTimings(conversationId: string): PollTimings {
    const c = this.conversation(conversationId);
    return { startedAt: c.createdAtMs, firstPollAt: c.firstPollAtMs, maxGapMs: c.maxGapMs, polls: c.polls };
  }

  /** When the event at `sequence` (1-based) of a conversation's inbox was emitted, in ms. */
  emittedAtOf(conversationId: string, sequence: number): number | undefined {
    return this.emittedAt.get(conversationId)?.[sequence - 1];
  }

  /** Which agent queue the conversation was routed to by a handoff, if any. */
  routedQueue(conversationId: string): string | undefined {
    return this.conversation(conversationId).routedTo;
  }

  /** A messaging channel whose key conversations may start on. */
  registerMessagingChannel(messagingPlatformKey: string): void {
    this.channels.add(messagingPlatformKey);
  }

  // ---- Test control: the agent's side and the platform's own actions ----

  agentJoins(conversationId: string, agentName = 'Agent'): void {
    const conversation = this.openConversation(conversationId);
    conversation.agentUserId = `005${randomId(15)}`;
    conversation.agentName = agentName;
    this.deliver(conversation, 'System', 'ChatEstablished', { name: agentName, userId: conversation.agentUserId, sneakPeekEnabled: false });
    this.updateRecord(conversation, { Status: 'Active', OwnerId: conversation.agentUserId, AcceptTime: this.timestamp() });
  }

  agentSays(conversationId: string, text: string): void {
    const conversation = this.openConversation(conversationId);
    this.deliver(conversation, 'Agent', 'ChatMessage', { name: conversation.agentName ?? 'Agent', text, ...(conversation.agentUserId ? { agentId: conversation.agentUserId } : {}) });
  }

  /** The agent starts (or stops) typing: a state, with no fields. */
  agentTyping(conversationId: string, typing = true): void {
    this.deliver(this.openConversation(conversationId), 'Agent', typing ? 'AgentTyping' : 'AgentNotTyping', {});
  }

  /** The agent's connection dropped. */
  agentDisconnects(conversationId: string): void {
    this.deliver(this.openConversation(conversationId), 'System', 'AgentDisconnect', {});
  }

  /** The agent asks the end user for a file (or settles the request): Requested, Canceled, Success or Failure. */
  fileTransfer(conversationId: string, type: 'Requested' | 'Canceled' | 'Success' | 'Failure'): void {
    this.deliver(this.openConversation(conversationId), 'Agent', 'FileTransfer', { type });
  }

  /** A custom event the agent's console sent, `type` and `data` as the agent side chose them. */
  customEvent(conversationId: string, type: string, data: string): void {
    this.deliver(this.openConversation(conversationId), 'Agent', 'CustomEvent', { type, data });
  }

  /** The end user's idle timeout warning was triggered or cleared. */
  idleTimeoutWarning(conversationId: string, state: 'triggered' | 'cleared'): void {
    this.deliver(this.openConversation(conversationId), 'System', 'ChasitorIdleTimeoutWarningEvent', { idleTimeoutWarningEvent: state });
  }

  queueUpdate(conversationId: string, position: number, estimatedWaitTime = 60): void {
    this.deliver(this.openConversation(conversationId), 'System', 'QueueUpdate', { position, estimatedWaitTime });
  }

  transfer(conversationId: string, toAgentName: string): void {
    const conversation = this.openConversation(conversationId);
    conversation.agentUserId = `005${randomId(15)}`;
    conversation.agentName = toAgentName;
    this.deliver(conversation, 'System', 'ChatTransferred', { name: toAgentName, userId: conversation.agentUserId, sneakPeekEnabled: false });
    this.updateRecord(conversation, { OwnerId: conversation.agentUserId });
  }

  /** The chat request could not be served (no agent, an internal failure): the session ends at once. */
  requestFails(conversationId: string, reason = 'Unavailable'): void {
    const conversation = this.openConversation(conversationId);
    this.deliver(conversation, 'System', 'ChatRequestFail', { reason });
    this.updateRecord(conversation, { Status: 'Ended', EndTime: this.timestamp() });
  }

  /**
   * Ends the session: status 'Ended', a `ChatEnded` event for the gateway, a record update event.
   * `reason`: "agent" when the agent ended it, "client" when the end user did (the ChatEnd reason
   * the chat API documents); other words pass through as the platform's own.
   */
  endConversation(conversationId: string, reason = 'agent'): void {
    const conversation = this.conversation(conversationId);
    if (conversation.record.Status === 'Ended') return;
    this.deliver(conversation, 'System', 'ChatEnded', { reason });
    this.updateRecord(conversation, { Status: 'Ended', EndTime: this.timestamp() });
  }

  /** The session token stops working; polls and sends get 401, as when it expires. */
  expireSessionToken(conversationId: string): void {
    this.conversation(conversationId).tokenExpiresAt = this.identity.now();
  }

  /** The session token issued at the start (tests check it is kept sealed). */
  sessionTokenOf(conversationId: string): string | undefined {
    return this.conversation(conversationId).sessionToken;
  }

  /** Both sides' messages and the system events, oldest first. */
  transcript(conversationId: string): TranscriptEntry[] {
    return this.conversation(conversationId).timeline.map((entry) => ({ ...entry }));
  }

  messagingSession(conversationId: string): MessagingSessionRecord {
    return { ...this.conversation(conversationId).record };
  }

  prechatDetails(conversationId: string): PrechatItem[] {
    return [...this.conversation(conversationId).prechatDetails];
  }

  recordUpdates(): RecordUpdateEvent[] {
    return [...this.updates];
  }

  onRecordUpdate(listener: (event: RecordUpdateEvent) => void): void {
    this.updateListeners.push(listener);
  }

  conversationIds(): string[] {
    return [...this.conversations.keys()];
  }

  /** Whether a long-poll is open on the conversation right now. */
  isPolling(conversationId: string): boolean {
    return this.conversation(conversationId).polling;
  }

  // ---- HTTP ----

  route(request: SimulatorRequest, signal: AbortSignal): Promise<SimulatorResponse | undefined> | SimulatorResponse | undefined {
    const { method, path } = request;
    if (/^\/v\d+\.\d+\/conversations\/?$/.test(path)) return method === 'POST' ? this.start(request) : undefined;
    const messages = /^\/v\d+\.\d+\/conversations\/([^/]+)\/messages\/?$/.exec(path);
    if (messages?.[1] && method === 'GET') return this.poll(request, messages[1], signal);
    if (messages?.[1] && method === 'POST') return this.send(request, messages[1]);
    const routeTo = /^\/v\d+\.\d+\/conversations\/([^/]+)\/route\/?$/.exec(path);
    if (routeTo?.[1] && method === 'POST') return this.routeToQueue(request, routeTo[1]);
    const conversation = /^\/v\d+\.\d+\/conversations\/([^/]+)\/?$/.exec(path);
    if (conversation?.[1] && method === 'DELETE') return this.endByEndUser(request, conversation[1]);
    if (method === 'GET' && /^\/services\/data\/v\d+\.\d+\/sobjects\/MessagingSession\/describe\/?$/.test(path)) return this.describe(request);
    if (method === 'GET' && /^\/services\/data\/v\d+\.\d+\/query\/?$/.test(path)) return this.query(request);
    const record = /^\/services\/data\/v\d+\.\d+\/sobjects\/MessagingSession\/([^/]+)$/.exec(path);
    if (record?.[1] && method === 'GET') return this.readRecord(request, record[1]);
    if (record?.[1] && method === 'PATCH') return this.patchRecord(request, record[1]);
    return undefined;
  }

  private async start(request: SimulatorRequest): Promise<SimulatorResponse> {
    const auth = this.identity.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    if (!this.identity.user(auth.grant.username)?.hasMessagingUserLicense) {
      return platformError(403, 'INSUFFICIENT_ACCESS', 'the integration user has no Messaging User permission set license: assign it to start conversations');
    }
    const body = StartConversationBody.safeParse(readJson(request));
    if (!body.success) return platformError(400, 'INVALID_INPUT', `invalid conversation start request: ${z.prettifyError(body.error)}`);
    const { messagingPlatformKey, contactId, prechatDetails = [] } = body.data;
    if (!this.channels.has(messagingPlatformKey)) {
      return platformError(400, 'INVALID_INPUT', `messagingPlatformKey '${messagingPlatformKey}' does not match any messaging channel`);
    }

    const now = this.identity.now();
    const id = randomUUID();
    const record: MessagingSessionRecord = {
      Id: `0Mw${randomId(15)}`,
      Status: 'Waiting',
      ConversationId: id,
      EndUserContactId: contactId ?? null,
      AgentType: 'Agent',
      OwnerId: null,
      StartTime: new Date(now).toISOString(),
      AcceptTime: null,
      EndTime: null,
    };
    // Pre-chat values land in the session fields their mapping names (the spec's transcriptFields).
    for (const item of prechatDetails) {
      for (const field of item.transcriptFields ?? []) if (!STANDARD_FIELDS.has(field)) record[field] = item.value;
    }
    const conversation: Conversation = {
      id,
      record,
      prechatDetails,
      inbox: [],
      timeline: [],
      tokenExpiresAt: now + this.sessionTokenLifetimeMs,
      polling: false,
      wake: undefined,
      routedTo: undefined,
      agentUserId: undefined,
      agentName: undefined,
      messagingPlatformKey,
      createdAtMs: Date.now(),
      firstPollAtMs: undefined,
      lastPollEndMs: undefined,
      maxGapMs: 0,
      polls: 0,
      attempts: 0,
    };
    this.conversations.set(id, conversation);
    const waiting = [...this.conversations.values()].filter(
      (c) => c.record.Status === 'Waiting' && c.messagingPlatformKey === messagingPlatformKey,
    ).length;
    this.deliver(conversation, 'System', 'ChatRequestSuccess', { queuePosition: waiting, estimatedWaitTime: 60 * waiting });
    if (this.echoAgent) this.agentJoins(id, 'Sandbox Agent');

    const token = await new SignJWT({ scope: 'conversation' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(id)
      .setJti(randomUUID())
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(conversation.tokenExpiresAt / 1000))
      .sign(this.sessionKey);
    conversation.sessionToken = token;
    return { status: 201, body: { conversationId: id, token } };
  }

  private async poll(request: SimulatorRequest, conversationId: string, signal: AbortSignal): Promise<SimulatorResponse> {
    const session = await this.checkSession(request, conversationId);
    if (!session.ok) return session.response;
    const conversation = session.conversation;
    if (signal.aborted) return { status: 204 };
    const now = Date.now();
    conversation.attempts++;
    this.stats.maxPerConversation = Math.max(this.stats.maxPerConversation, conversation.attempts);
    conversation.polls++;
    conversation.firstPollAtMs ??= now;
    if (conversation.lastPollEndMs !== undefined && conversation.attempts === 1) conversation.maxGapMs = Math.max(conversation.maxGapMs, now - conversation.lastPollEndMs);
    try {
      return await this.pollOnce(request, conversation, signal);
    } finally {
      conversation.attempts--;
      conversation.lastPollEndMs = Date.now();
    }
  }

  private async pollOnce(request: SimulatorRequest, conversation: Conversation, signal: AbortSignal): Promise<SimulatorResponse> {

    const ackParam = request.query.get('ack');
    if (ackParam === null) {
      if (conversation.record.Status === 'Ended') return sessionEnded();
      return { status: 204, headers: { 'x-sandbox-note': 'no long-poll without ack; pass ack=-1' } };
    }
    if (!/^-?\d+$/.test(ackParam) || Number(ackParam) < -1) return platformError(400, 'INVALID_INPUT', 'ack must be -1 or a delivered sequence number');
    const ack = Number(ackParam);
    if (conversation.polling) {
      this.stats.conflicts++;
      return platformError(409, 'CONFLICT', 'a long-poll is already open on this conversation');
    }
    this.stats.opened++;

    const immediate = pollAnswer(conversation, ack);
    if (immediate) return immediate;
    if (conversation.record.Status === 'Ended') return sessionEnded();

    const requested = Number(request.query.get('timeout') ?? DEFAULT_POLL_TIMEOUT_SECONDS);
    const seconds = Number.isFinite(requested) && requested >= 0 ? Math.min(requested, MAX_POLL_TIMEOUT_SECONDS) : DEFAULT_POLL_TIMEOUT_SECONDS;
    conversation.polling = true;
    this.stats.open++;
    this.stats.maxOpen = Math.max(this.stats.maxOpen, this.stats.open);
    try {
      await waitForEvent(conversation, seconds * this.pollSecondsToMs, signal, this.closeNoticeLagMs);
    } finally {
      conversation.polling = false;
      this.stats.open--;
    }
    return pollAnswer(conversation, ack) ?? { status: 204 };
  }

  private async send(request: SimulatorRequest, conversationId: string): Promise<SimulatorResponse> {
    const session = await this.checkSession(request, conversationId);
    if (!session.ok) return session.response;
    const conversation = session.conversation;
    if (conversation.record.Status === 'Ended') return sessionEnded();
    const body = SendMessageBody.safeParse(readJson(request));
    if (!body.success) return platformError(400, 'INVALID_INPUT', 'the body must be {"message": {"text": "..."}} or {"message": {"media": {"url", "mimeType"}}}');

    const messageId = randomUUID();
    const sender = { role: 'EndUser', name: conversation.record.EndUserContactId ?? 'End user' };
    const message = body.data.message;
    if ('text' in message) {
      conversation.timeline.push({ at: this.timestamp(), role: 'EndUser', type: 'ChatMessage', message: { id: messageId, text: message.text, sender } });
      if (this.echoAgent && conversation.record.Status === 'Active') this.agentSays(conversation.id, `You said: ${message.text}`);
    } else {
      conversation.timeline.push({ at: this.timestamp(), role: 'EndUser', type: 'ChatMessage', message: { id: messageId, media: message.media, sender } });
    }
    return { status: 202, body: { messageId } };
  }

  private async routeToQueue(request: SimulatorRequest, conversationId: string): Promise<SimulatorResponse> {
    const session = await this.checkSession(request, conversationId);
    if (!session.ok) return session.response;
    const conversation = session.conversation;
    if (conversation.record.Status === 'Ended') return sessionEnded();
    const body = RouteBody.safeParse(readJson(request) ?? {});
    if (!body.success) return platformError(400, 'INVALID_INPUT', 'the body must be {"queue": "<agent queue>"} or empty');
    conversation.routedTo = body.data.queue ?? 'Default';
    const waiting = [...this.conversations.values()].filter((c) => c.record.Status === 'Waiting' && c.routedTo !== undefined).length;
    conversation.agentName = undefined;
    this.updateRecord(conversation, { Status: 'Waiting', OwnerId: null });
    this.deliver(conversation, 'System', 'QueueUpdate', { position: waiting + 1, estimatedWaitTime: 60 * (waiting + 1) });
    // For `npm start`: a human agent of the queue picks the conversation up a second later.
    if (this.echoAgent) setTimeout(() => conversation.record.Status === 'Waiting' && this.agentJoins(conversation.id, `${conversation.routedTo} Agent`), 1000).unref();
    return { status: 202, body: { queue: conversation.routedTo } };
  }

  private describe(request: SimulatorRequest): SimulatorResponse {
    const auth = this.identity.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    const standard = [...STANDARD_FIELDS].map((name) => ({ name, type: name === 'Id' ? 'id' : 'string', custom: false, updateable: false }));
    const custom = [...this.sessionFields].map((name) => ({ name, type: 'textarea', length: 131_072, custom: true, updateable: true }));
    return { status: 200, body: { name: 'MessagingSession', fields: [...standard, ...custom] } };
  }

  private query(request: SimulatorRequest): SimulatorResponse {
    const auth = this.identity.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    const soql = (request.query.get('q') ?? '').replace(/\s+/g, ' ').trim();
    const session = /^SELECT Id FROM MessagingSession WHERE ConversationId = '([^'\\]+)'$/i.exec(soql);
    if (session?.[1]) {
      const found = this.conversations.get(session[1]);
      return queryResult('MessagingSession', found ? [found.record.Id] : []);
    }
    const license = /^SELECT Id FROM PermissionSetLicenseAssign WHERE AssigneeId = '([^'\\]+)' AND PermissionSetLicense\.DeveloperName = 'MessagingUser'$/i.exec(soql);
    if (license?.[1]) {
      const user = this.identity.userById(license[1]);
      return queryResult('PermissionSetLicenseAssign', user?.hasMessagingUserLicense ? [`2LA${randomId(15)}`] : []);
    }
    return platformError(400, 'MALFORMED_QUERY', 'the sandbox answers only the MessagingSession and PermissionSetLicenseAssign queries it documents');
  }

  private async endByEndUser(request: SimulatorRequest, conversationId: string): Promise<SimulatorResponse> {
    const session = await this.checkSession(request, conversationId);
    if (!session.ok) return session.response;
    this.endConversation(conversationId, 'client');
    return { status: 204 };
  }

  private readRecord(request: SimulatorRequest, recordId: string): SimulatorResponse {
    const auth = this.identity.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    const conversation = this.byRecordId(recordId);
    if (!conversation) return platformError(404, 'NOT_FOUND', 'The requested resource does not exist');
    return {
      status: 200,
      body: { attributes: { type: 'MessagingSession', url: request.path }, ...conversation.record },
    };
  }

  private patchRecord(request: SimulatorRequest, recordId: string): SimulatorResponse {
    const auth = this.identity.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    const conversation = this.byRecordId(recordId);
    if (!conversation) return platformError(404, 'NOT_FOUND', 'The requested resource does not exist');
    const patch = SessionRecordPatch.safeParse(readJson(request));
    if (!patch.success) return platformError(400, 'JSON_PARSER_ERROR', 'the body must be a JSON object of field values');
    // Only custom fields (the transcript field, pre-chat mappings) are writable from outside.
    const readOnly = Object.keys(patch.data).find((field) => !field.endsWith('__c') && STANDARD_FIELDS.has(field));
    if (readOnly) return platformError(400, 'INVALID_FIELD_FOR_INSERT_UPDATE', `Unable to create/update fields: ${readOnly}`);
    const unknown = Object.keys(patch.data).find((field) => !this.sessionFields.has(field));
    if (unknown) return platformError(400, 'INVALID_FIELD', `No such column '${unknown}' on sobject of type MessagingSession`);
    this.updateRecord(conversation, patch.data);
    return { status: 204 };
  }

  // ---- Internals ----

  private async checkSession(request: SimulatorRequest, conversationId: string): Promise<SessionCheck> {
    const token = bearerToken(request);
    if (!token) return { ok: false, response: invalidSession() };
    let subject: string | undefined;
    try {
      const { payload } = await jwtVerify(token, this.sessionKey, { algorithms: ['HS256'], currentDate: new Date(this.identity.now()) });
      subject = payload.sub;
    } catch {
      return { ok: false, response: invalidSession() };
    }
    const conversation = this.conversations.get(subject ?? '');
    if (!conversation || conversation.tokenExpiresAt <= this.identity.now()) return { ok: false, response: invalidSession() };
    if (conversation.id !== conversationId) {
      return { ok: false, response: platformError(403, 'FORBIDDEN', 'the session token belongs to another conversation') };
    }
    return { ok: true, conversation };
  }

  private conversation(conversationId: string): Conversation {
    const conversation = this.conversations.get(conversationId);
    if (!conversation) throw new Error(`no conversation ${conversationId} in the messaging simulator`);
    return conversation;
  }

  private openConversation(conversationId: string): Conversation {
    const conversation = this.conversation(conversationId);
    if (conversation.record.Status === 'Ended') throw new Error(`conversation ${conversationId} has ended`);
    return conversation;
  }

  private byRecordId(recordId: string): Conversation | undefined {
    return [...this.conversations.values()].find((c) => c.record.Id === recordId);
  }

  /** An event from the agent's or the platform's side: into the transcript and the gateway's inbox. */
  private deliver(conversation: Conversation, role: SenderRole, type: ConversationEventType, message: Record<string, unknown>): void {
    const at = this.timestamp();
    // The documented messages carry no timestamp: the time is the simulator's record only.
    const event: ConversationEvent = { type, message };
    conversation.timeline.push({ at, role, type, message: event.message });
    conversation.inbox.push(event);
    const emitted = this.emittedAt.get(conversation.id) ?? [];
    emitted.push(Date.now());
    this.emittedAt.set(conversation.id, emitted);
    conversation.wake?.();
  }

  private updateRecord(conversation: Conversation, changedFields: Record<string, string | null>): void {
    Object.assign(conversation.record, changedFields);
    const event: RecordUpdateEvent = {
      object: 'MessagingSession',
      recordId: conversation.record.Id,
      conversationId: conversation.id,
      changedFields,
      at: this.timestamp(),
    };
    this.updates.push(event);
    for (const listener of this.updateListeners) listener(event);
  }

  private timestamp(): string {
    return new Date(this.identity.now()).toISOString();
  }
}

/** 200 with the events after `ack`, or undefined when there are none. */
function pollAnswer(conversation: Conversation, ack: number): SimulatorResponse | undefined {
  const pending = conversation.inbox.slice(Math.max(ack, 0));
  if (pending.length === 0) return undefined;
  const answer: PollAnswer = { messages: pending, sequence: conversation.inbox.length };
  return { status: 200, body: answer };
}

function sessionEnded(): SimulatorResponse {
  return platformError(403, 'SESSION_ENDED', 'session ended');
}

/** Resolves on the first of: a new event, the timeout, the client going away. */
function waitForEvent(conversation: Conversation, timeoutMs: number, signal: AbortSignal, closeNoticeLagMs = 0): Promise<void> {
  return new Promise((resolve) => {
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', closed);
      conversation.wake = undefined;
      resolve();
    };
    const closed = (): void => {
      if (closeNoticeLagMs === 0) return finish();
      conversation.wake = undefined;
      clearTimeout(timer);
      setTimeout(finish, closeNoticeLagMs).unref();
    };
    const timer = setTimeout(finish, timeoutMs);
    conversation.wake = finish;
    if (signal.aborted) closed();
    else signal.addEventListener('abort', closed, { once: true });
  });
}
