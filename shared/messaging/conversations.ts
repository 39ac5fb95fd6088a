import { randomBytes } from 'node:crypto';
import * as z from 'zod/mini';
import { ProblemError, problems } from '../api/problem';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import type { Logger } from '../log/logger';
import { LIVE_STATES } from '../store/conversations';
import type { Connection, Conversation, ConversationEndReason } from '../store/items';
import { messagingClient, type MessagingPlatformSession } from './client';
import { startPlatformConversation, type PrechatItem } from './conversation-api';
import { conversationEvent, publishConversationEvents } from './conversation-events';
import { messagingProblem } from './errors';
import { startOnMessagingApi } from './messaging-api-transport';
import { sealSessionToken } from './session-tokens';
import { conversationTransport, messagingApiEndpoint } from './transports';
import { keepsMessageType, MessagingSettings } from './settings';
import { MAX_POLLER_SHARDS, plannedPerPoller } from './fleet';
import { liveConversationCeiling } from '../tenants/quotas';
import * as store from '../store/store';

export { openSessionToken, sealSessionToken } from './session-tokens';
export { conversationSession } from './transports';

/**
 * A conversation's life on the gateway's side: started by a playbook (or for an end user), its
 * messages sent, handed off to a human agent, ended, and its transcript kept. The poller
 * (poller.ts) holds its long-poll and applies what the platform says; both end a conversation
 * through `finishConversation`, whose conditional write lets exactly one of them do it.
 */

export const SESSION_EXPIRED_REMEDY = 'Sessions are short-lived: restart the conversation.';
const PREFIX = 'urn:integration-gateway:problem:';

/** A time-ordered id: an account's conversations list newest first. */
export function newConversationId(now: number): string {
  return `cv_${now.toString(36).padStart(9, '0')}${randomBytes(6).toString('hex')}`;
}

export function newMessageId(now: number): string {
  return `${now.toString(36).padStart(9, '0')}${randomBytes(5).toString('hex')}`;
}

export interface MessagingConnection {
  connection: Connection;
  settings: MessagingSettings;
  session: MessagingPlatformSession;
}

/** The account's messaging connection, its settings and an identity session; 404 without one. */
export async function messagingConnection(gateway: Gateway, accountId: string): Promise<MessagingConnection> {
  const connection = await store.getConnection(gateway.table, accountId, 'messaging');
  if (!connection) throw problems.notFound('The account has no messaging connection: connect the messaging platform under Integrations.');
  const settings = MessagingSettings.parse(connection.syncSettings ?? {});
  const credentials = await gateway.vault.open({ accountId, connector: 'messaging' }, connection.credentials);
  const session = messagingClient({ env: gateway.env, accountId, config: connection.config, credentials });
  return { connection, settings, session };
}

/** The settings alone (the poller reads them per conversation; no credentials opened). */
export async function messagingSettings(gateway: Gateway, accountId: string): Promise<MessagingSettings> {
  const connection = await store.getConnection(gateway.table, accountId, 'messaging');
  return MessagingSettings.parse(connection?.syncSettings ?? {});
}

// ---- start ----

export const ProfileValue = z.string().check(z.minLength(1), z.maxLength(255));

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const StartConversationInput = z.lazy(() =>
  z
    .strictObject({
      direction: z.enum(['inbound', 'outbound']).check(z.describe('inbound: the end user opened the chat; outbound: a proactive invitation (Activation)')),
      contactId: z
        .optional(z.string().check(z.regex(/^[A-Za-z0-9]{15,18}$/, 'a CRM record id (15 or 18 letters and digits)')))
        .check(z.describe("The contact's record id on the CRM")),
      /** Profile attributes by name; the pre-chat mapping turns them into prechatDetails. */
      prechat: z
        .optional(z.record(z.string().check(z.minLength(1), z.maxLength(80)), ProfileValue))
        .check(z.describe('Profile attribute values; the pre-chat mapping turns them into prechatDetails')),
      messagingPlatformKey: z
        .optional(z.string().check(z.minLength(8), z.maxLength(255)))
        .check(z.describe("Overrides the connection's Messaging Platform Key")),
      endUserEmail: z
        .optional(z.email().check(z.maxLength(254)))
        .check(z.describe("The end user's email (default: the pre-chat value of the attribute `email`); carried by conversation.ended")),
    })
    .register(z.globalRegistry, { id: 'StartConversation' }),
);
export type StartConversationInput = z.infer<typeof StartConversationInput>;

const notAllowed = (detail: string, remedy: string) => problems.notAllowedBySettings('messaging settings', detail, remedy);

/** Pure: the spec's prechatDetails from the profile values and the mapping; unmapped attributes are refused. */
export function prechatDetails(settings: MessagingSettings, prechat: Record<string, string> = {}): PrechatItem[] {
  const mapped = new Set(Object.values(settings.prechatMapping).map((field) => field.attribute));
  const unmapped = Object.keys(prechat).filter((attribute) => !mapped.has(attribute));
  if (unmapped.length) {
    throw new ProblemError({
      type: `${PREFIX}prechat-not-mapped`,
      title: 'Pre-chat values without a mapping',
      status: 400,
      detail: `No pre-chat field is mapped to ${unmapped.map((a) => `'${a}'`).join(', ')}.`,
      remedy: "Check prechatDetails in the start request: send only attributes named in the messaging settings' pre-chat mapping, or add them to it.",
      errors: unmapped.map((attribute) => ({ path: `prechat.${attribute}`, message: 'not in the pre-chat mapping' })),
    });
  }
  return Object.entries(settings.prechatMapping).flatMap(([label, field]) => {
    const value = prechat[field.attribute];
    return value === undefined ? [] : [{ label, value, transcriptFields: field.transcriptFields, displayToAgent: field.displayToAgent }];
  });
}

function endUserEmailOf(input: StartConversationInput): string | undefined {
  if (input.endUserEmail) return input.endUserEmail;
  const email = input.prechat?.email;
  return email && z.email().safeParse(email).success ? email : undefined;
}

function allowsDirection(settings: MessagingSettings, direction: 'inbound' | 'outbound'): boolean {
  return settings.direction === 'both' || settings.direction === direction;
}

/** A platform failure as the API answers it: the spec's remedy when there is one. */
export function platformProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  const problem = messagingProblem(error);
  const status = error instanceof PlatformError && (error.kind === 'auth' || error.kind === 'permission') ? 409 : 502;
  return new ProblemError({
    type: `${PREFIX}messaging-platform`,
    title: 'The messaging platform refused the request',
    status,
    detail: problem.reason,
    remedy: problem.remedy,
  });
}

export async function startConversation(gateway: Gateway, accountId: string, input: StartConversationInput, log: Logger): Promise<Conversation> {
  const { connection, settings, session } = await messagingConnection(gateway, accountId);
  if (!allowsDirection(settings, input.direction)) {
    throw notAllowed(
      `The messaging connection takes ${settings.direction} conversations only; this one is ${input.direction}.`,
      'Change Conversation direction in the messaging settings to Both (or to this direction).',
    );
  }
  const messagingPlatformKey =
    input.messagingPlatformKey ?? (typeof connection.config.messagingPlatformKey === 'string' ? connection.config.messagingPlatformKey : undefined);
  if (!messagingPlatformKey) {
    throw notAllowed(
      'The messaging connection has no Messaging Platform Key.',
      'Reconnect the messaging platform with the Messaging Platform Key copied from the messaging channel.',
    );
  }
  const details = prechatDetails(settings, input.prechat);

  const fleetCapacity = MAX_POLLER_SHARDS * plannedPerPoller(gateway.env.POLLER_CAPACITY);
  const cap = liveConversationCeiling(settings.maxConcurrentConversations, (await store.getAccount(gateway.table, accountId))?.quotas, fleetCapacity);
  if (
    !(await store.reserveLiveSlot(gateway.table, accountId, cap)) &&
    !((await store.recountLiveSlots(gateway.table, accountId)) < cap && (await store.reserveLiveSlot(gateway.table, accountId, cap)))
  ) {
    throw new ProblemError(
      {
        type: `${PREFIX}concurrent-conversations`,
        title: 'Too many live conversations',
        status: 429,
        detail: `The account has ${cap} live conversations, the most it may hold at once (its license cap, its quota and its share of the poller fleet, whichever is least).`,
        remedy:
          'End a conversation first, or raise the concurrent-conversation cap if the digital engagement license allows more; past the account quota, ask your support contact.',
      },
      { 'retry-after': '5' },
    );
  }

  let started: { platformConversationId: string; sessionToken: string; lastEventId?: string; messagingUrl?: string };
  try {
    started = await startOnPlatform(gateway, settings, session, {
      messagingPlatformKey,
      ...(input.contactId ? { contactId: input.contactId } : {}),
      prechatDetails: details,
    });
  } catch (error) {
    await store.releaseLiveSlot(gateway.table, accountId);
    throw platformProblem(error);
  }

  // Already known to the session that started it (no call): kept so nobody opens the credentials for it again.
  // A Messaging API conversation lives on the deployment's messaging URL instead.
  const instanceUrl = started.messagingUrl ?? (await session.instanceUrl());
  const now = gateway.now();
  const conversationId = newConversationId(now);
  const at = new Date(now).toISOString();
  const conversation: Conversation = {
    accountId,
    conversationId,
    platformConversationId: started.platformConversationId,
    instanceUrl,
    state: 'starting',
    direction: input.direction,
    sessionToken: await sealSessionToken(gateway, accountId, conversationId, started.sessionToken),
    ...(started.messagingUrl ? { transport: 'messaging_api' as const } : {}),
    ...(input.contactId ? { contactId: input.contactId } : {}),
    ...(endUserEmailOf(input) ? { endUserEmail: endUserEmailOf(input) } : {}),
    startedAt: at,
    updatedAt: at,
    version: 0,
  };
  await store.putConversation(gateway.table, conversation);
  await store.putLiveConversation(gateway.table, {
    accountId,
    conversationId,
    ack: -1,
    ...(started.lastEventId ? { lastEventId: started.lastEventId } : {}),
    startedAt: now,
  });
  // The running fleet takes it within a second; a stopped fleet is started.
  await gateway.pollerNotices.tell({ accountId, conversationId, at: now });
  await ensureFleetRunning(gateway);
  await gateway.stateMachines.startLifecycle(lifecycleName(accountId, conversationId), { accountId, conversationId });
  const stored = { ...conversation, version: 1 };
  await publishConversationEvents(gateway, [conversationEvent('conversation.started', stored, { startedAt: at }, { occurredAt: at })]);
  log.info('conversation started', { conversationId, direction: input.direction, prechatItems: details.length });
  return stored;
}

/**
 * Starts the conversation on the platform with the transport the settings choose: the spec's start
 * call, or on Messaging for In-App and Web a token for a new end user and the conversation, the
 * pre-chat values as routing attributes (label: value).
 */
async function startOnPlatform(
  gateway: Gateway,
  settings: MessagingSettings,
  session: MessagingPlatformSession,
  request: Parameters<typeof startPlatformConversation>[1],
) {
  if (settings.conversationTransport !== 'messaging_api') return startPlatformConversation(session, request);
  const endpoint = messagingApiEndpoint(gateway, settings);
  if (!endpoint)
    throw notAllowed(
      "Messaging for In-App and Web needs the org ID, the deployment's API name and its messaging URL.",
      'Fill them in the messaging settings, or choose the long-poll transport.',
    );
  const routingAttributes = Object.fromEntries(request.prechatDetails.map((item) => [item.label, item.value]));
  return { ...(await startOnMessagingApi(endpoint, routingAttributes)), messagingUrl: endpoint.messagingUrl };
}

/** Step Functions execution names: 80 characters of letters, digits, - and _. */
export function lifecycleName(accountId: string, conversationId: string): string {
  return `${accountId}-${conversationId}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80);
}

/** Starts a fleet execution unless one holds the fleet's lease (one start per few seconds, fleet-wide). */
export async function ensureFleetRunning(gateway: Gateway): Promise<void> {
  const now = gateway.now();
  const fleet = await store.getFleetLease(gateway.table);
  if (fleet && fleet.until > now) return;
  if (await store.takeFleetTurn(gateway.table, 'start', now, 5_000)) await gateway.stateMachines.startFleet({ startedBy: 'conversation' });
}

// ---- reads ----

export async function conversationOf(gateway: Gateway, accountId: string, conversationId: string): Promise<Conversation> {
  const conversation = /^[A-Za-z0-9_-]{1,64}$/.test(conversationId) ? await store.getConversation(gateway.table, accountId, conversationId) : undefined;
  // Another account's id is simply not found: the key includes the account.
  if (!conversation) throw problems.notFound('No conversation with that id.');
  return conversation;
}

export function isLive(conversation: Conversation): boolean {
  return LIVE_STATES.includes(conversation.state);
}

function ended(conversation: Conversation): ProblemError {
  return new ProblemError({
    type: `${PREFIX}conversation-ended`,
    title: 'The conversation has ended',
    status: 409,
    detail: `The conversation is ${conversation.state}${conversation.endReason ? ` (${conversation.endReason})` : ''}; nothing was sent.`,
    remedy: conversation.endReason === 'session_expired' ? SESSION_EXPIRED_REMEDY : 'Start a new conversation.',
  });
}

// ---- send ----

const Media = z.lazy(() =>
  z.strictObject({
    url: z.url({ protocol: /^https$/ }).check(z.maxLength(2048), z.describe('An https address of the file')),
    mimeType: z.string().check(z.regex(/^[\w.+-]+\/[\w.+-]+$/, 'a MIME type such as image/png')),
    name: z.optional(z.string().check(z.minLength(1), z.maxLength(255))),
  }),
);

/** The longest text a message may carry (the platform's messaging limit). */
export const MAX_TEXT_LENGTH = 4_000;

export const SendMessageInput = z.lazy(() =>
  z
    .strictObject({
      text: z.optional(z.string().check(z.minLength(1), z.maxLength(MAX_TEXT_LENGTH))).check(z.describe(`Up to ${MAX_TEXT_LENGTH} characters`)),
      media: z.optional(Media),
      author: z
        ._default(z.enum(['automated', 'end_user']), 'automated')
        .check(z.describe("automated: the playbook's reply (refused once handed off); end_user: the end user's words relayed")),
      clientMessageId: z
        .optional(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/)))
        .check(z.describe('Makes a retried send a no-op: the same id is sent once')),
    })
    .check(z.refine((input) => (input.text === undefined) !== (input.media === undefined), { message: 'Send either text or media.' }))
    .register(z.globalRegistry, { id: 'SendMessage' }),
);
export type SendMessageInput = z.infer<typeof SendMessageInput>;

export interface SentView {
  id: string;
  status: 'sending' | 'sent';
  type: 'text' | 'media';
  sentAt: string;
}

export async function sendMessage(gateway: Gateway, accountId: string, conversationId: string, input: SendMessageInput, log: Logger): Promise<SentView> {
  const conversation = await conversationOf(gateway, accountId, conversationId);
  if (!isLive(conversation)) throw ended(conversation);
  if (input.author === 'automated' && conversation.handedOff) {
    throw new ProblemError({
      type: `${PREFIX}handed-off`,
      title: 'Handed off to a human agent',
      status: 409,
      detail: `The conversation was handed off to the ${conversation.handedOff.queue} queue at ${conversation.handedOff.at}: automated replies are refused until it ends. Nothing was sent.`,
      remedy: 'Let the human agent answer; relay the end user\'s own words with author "end_user".',
    });
  }
  const settings = await messagingSettings(gateway, accountId);
  const now = gateway.now();
  const messageId = input.clientMessageId ? `c-${input.clientMessageId}` : newMessageId(now);
  const type = input.text !== undefined ? 'text' : 'media';
  const claim = {
    accountId,
    conversationId,
    messageId,
    status: 'sending' as const,
    author: input.author,
    type,
    ...(input.text !== undefined ? { text: input.text } : {}),
    ...(input.media ? { details: { media: input.media } } : {}),
    sentAt: new Date(now).toISOString(),
  } as const;
  if (!(await store.claimSentMessage(gateway.table, claim))) {
    const existing = await store.getSentMessage(gateway.table, accountId, conversationId, messageId);
    if (existing?.status === 'sent') return { id: messageId, status: 'sent', type: existing.type, sentAt: existing.sentAt };
    throw problems.conflict('A send with this clientMessageId is in progress.', 'Wait for its answer before retrying.');
  }

  const instanceUrl = await instanceUrlOf(gateway, conversation);
  let platformMessageId: string | undefined;
  try {
    const session = await conversationTransport(gateway, conversation, instanceUrl, { settings });
    ({ platformMessageId } = await session.send(input.text !== undefined ? { text: input.text } : { media: input.media! }));
  } catch (error) {
    await store.deleteSentMessage(gateway.table, accountId, conversationId, messageId);
    throw await conversationCallProblem(gateway, conversation, error, log);
  }
  const sent = { ...claim, status: 'sent' as const, ...(platformMessageId ? { platformMessageId } : {}) };
  if (keepsMessageType(settings, type)) {
    await store.putSentMessage(gateway.table, sent);
    await publishConversationEvents(gateway, [
      conversationEvent(
        'message.sent',
        conversation,
        {
          message: {
            id: messageId,
            type,
            ...(input.text !== undefined ? { text: input.text } : {}),
            ...(input.media ? { media: input.media } : {}),
            author: input.author,
            sentAt: sent.sentAt,
          },
        },
        { occurredAt: sent.sentAt, idSuffix: messageId },
      ),
    ]);
  } else {
    // Sent, but the message types setting keeps no message of this type.
    await store.deleteSentMessage(gateway.table, accountId, conversationId, messageId);
  }
  return { id: messageId, status: 'sent', type, sentAt: sent.sentAt };
}

/** The org's instance URL (signs in with the identity token if needed). */
export async function messagingInstanceUrl(gateway: Gateway, accountId: string): Promise<string> {
  const { session } = await messagingConnection(gateway, accountId);
  return session.instanceUrl();
}

/** Where a conversation's calls go: kept with it since its start; asked of the identity platform for older items. */
export function instanceUrlOf(gateway: Gateway, conversation: Conversation): Promise<string> {
  return conversation.instanceUrl !== undefined ? Promise.resolve(conversation.instanceUrl) : messagingInstanceUrl(gateway, conversation.accountId);
}

/**
 * A failed call inside a conversation: 401 means its session token expired (spec: the
 * conversation must be restarted), so it ends as expired; 403 `SESSION_ENDED` means it already
 * ended on the platform.
 */
async function conversationCallProblem(gateway: Gateway, conversation: Conversation, error: unknown, log: Logger): Promise<ProblemError> {
  if (error instanceof PlatformError && error.status === 401) {
    await finishConversation(gateway, conversation, 'session_expired', log);
    return new ProblemError({
      type: `${PREFIX}session-expired`,
      title: 'The conversation session expired',
      status: 409,
      detail: "The messaging platform refused the conversation's session token (HTTP 401). Nothing was sent.",
      remedy: SESSION_EXPIRED_REMEDY,
    });
  }
  if (error instanceof PlatformError && error.status === 403 && /SESSION_ENDED/i.test(error.platformCode ?? '')) {
    await finishConversation(gateway, conversation, 'system', log);
    return ended({ ...conversation, state: 'ended', endReason: 'system' });
  }
  return platformProblem(error);
}

// ---- handoff and end ----

export const HandOffInput = z.lazy(() =>
  z
    .strictObject({
      queue: z.optional(z.string().check(z.minLength(1), z.maxLength(80))).check(z.describe("The agent queue (default: the settings' handoff queue)")),
    })
    .register(z.globalRegistry, { id: 'HandOff' }),
);

export async function handOff(
  gateway: Gateway,
  accountId: string,
  conversationId: string,
  input: z.infer<typeof HandOffInput>,
  log: Logger,
): Promise<Conversation> {
  const conversation = await conversationOf(gateway, accountId, conversationId);
  if (!isLive(conversation)) throw ended(conversation);
  if (conversation.handedOff) throw problems.conflict(`The conversation was already handed off to the ${conversation.handedOff.queue} queue.`);
  const settings = await messagingSettings(gateway, accountId);
  const queue = input.queue ?? settings.handoffQueue;
  const at = new Date(gateway.now()).toISOString();
  const marked = await store.updateConversation(gateway.table, accountId, conversationId, {
    set: { handedOff: { at, queue }, updatedAt: at },
    whenStateIn: LIVE_STATES,
    whenAbsent: 'handedOff',
  });
  if (!marked) throw problems.conflict('The conversation changed meanwhile (ended or handed off); read it again.');
  try {
    const session = await conversationTransport(gateway, conversation, await instanceUrlOf(gateway, conversation), { settings });
    await session.route(queue);
  } catch (error) {
    // Not routed: the playbook keeps the conversation.
    await store.updateConversation(gateway.table, accountId, conversationId, { remove: ['handedOff'] });
    throw await conversationCallProblem(gateway, conversation, error, log);
  }
  await publishConversationEvents(gateway, [conversationEvent('conversation.handed_off', marked, { queue }, { occurredAt: at })]);
  log.info('conversation handed off', { conversationId, queue });
  return marked;
}

/** Ends the chat on the platform; the poller sees the end and finishes the conversation. */
export async function endConversation(gateway: Gateway, accountId: string, conversationId: string, log: Logger): Promise<Conversation> {
  const conversation = await conversationOf(gateway, accountId, conversationId);
  if (!isLive(conversation)) throw ended(conversation);
  try {
    const session = await conversationTransport(gateway, conversation, await instanceUrlOf(gateway, conversation), {
      settings: await messagingSettings(gateway, accountId),
    });
    await session.end();
  } catch (error) {
    throw await conversationCallProblem(gateway, conversation, error, log);
  }
  return conversation;
}

/**
 * Ends a live conversation once, whoever notices first (the poller, a send that met 401, the
 * lifecycle): frees its slot and its lease item, publishes the end, and returns the lifecycle's
 * task token so the execution moves on to the transcript. Undefined when it had already ended.
 */
export async function finishConversation(
  gateway: Gateway,
  conversation: Conversation,
  reason: ConversationEndReason,
  log: Logger,
): Promise<Conversation | undefined> {
  const now = gateway.now();
  const endedAt = new Date(now).toISOString();
  const done = await store.updateConversation(gateway.table, conversation.accountId, conversation.conversationId, {
    set: { state: 'ended', endReason: reason, endedAt, updatedAt: endedAt },
    whenStateIn: LIVE_STATES,
  });
  if (!done) return undefined;
  await store.deleteLiveConversation(gateway.table, done.accountId, done.conversationId);
  await store.releaseLiveSlot(gateway.table, done.accountId);
  const events = [];
  if (reason === 'session_expired') events.push(conversationEvent('conversation.expired', done, { remedy: SESSION_EXPIRED_REMEDY }, { occurredAt: endedAt }));
  events.push(
    conversationEvent(
      'conversation.ended',
      done,
      {
        conversationId: done.conversationId,
        ...(done.endUserEmail ? { endUserEmail: done.endUserEmail } : {}),
        channel: 'messaging',
        reason,
        startedAt: new Date(done.startedAt).toISOString(),
        endedAt,
        durationSeconds: Math.max(0, Math.round((now - Date.parse(done.startedAt)) / 1000)),
        handedOff: done.handedOff !== undefined,
      },
      { occurredAt: endedAt },
    ),
  );
  await publishConversationEvents(gateway, events);
  if (done.taskToken) await gateway.stateMachines.sendTaskSuccess(done.taskToken, { reason });
  log.info('conversation ended', { conversationId: done.conversationId, reason });
  return done;
}
