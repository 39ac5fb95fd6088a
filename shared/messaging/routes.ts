import * as z from 'zod/mini';
import { assertAccountAccess, playbookAccountOf } from '../api/caller';
import { json } from '../api/http';
import { route } from '../api/route';
import { AccountParams } from '../api/routes/params';
import type { Gateway } from '../gateway';
import type { Conversation } from '../store/items';
import { ConversationState, TranscriptOutcome } from '../store/items';
import {
  conversationOf,
  endConversation,
  handOff,
  HandOffInput,
  sendMessage,
  SendMessageInput,
  startConversation,
  StartConversationInput,
} from './conversations';
import { chronological, ConversationEntry } from './transcript';
import * as store from '../store/store';

/**
 * The messaging connector's API: playbooks (account API keys) start conversations, send, read,
 * hand off, end, and read transcripts; the dashboard lists an account's conversations with their
 * state and reads transcripts. Every id is looked up under the caller's account: another
 * account's conversation is simply not found.
 */

export const ConversationView = z
  .object({
    id: z.string(),
    state: ConversationState,
    direction: z.optional(z.enum(['inbound', 'outbound'])),
    contactId: z.optional(z.string()),
    agentName: z.optional(z.string()),
    handedOff: z.optional(z.object({ at: z.string(), queue: z.string() })),
    startedAt: z.string(),
    updatedAt: z.string(),
    endedAt: z.optional(z.string()),
    endReason: z.optional(z.string()),
    transcript: z.optional(TranscriptOutcome),
  })
  .register(z.globalRegistry, { id: 'Conversation' });

export function conversationView(conversation: Conversation): z.infer<typeof ConversationView> {
  return {
    id: conversation.conversationId,
    state: conversation.state,
    ...(conversation.direction ? { direction: conversation.direction } : {}),
    ...(conversation.contactId ? { contactId: conversation.contactId } : {}),
    ...(conversation.agentName ? { agentName: conversation.agentName } : {}),
    ...(conversation.handedOff ? { handedOff: conversation.handedOff } : {}),
    startedAt: conversation.startedAt,
    updatedAt: conversation.updatedAt,
    ...(conversation.endedAt ? { endedAt: conversation.endedAt } : {}),
    ...(conversation.endReason ? { endReason: conversation.endReason } : {}),
    ...(conversation.transcript ? { transcript: conversation.transcript } : {}),
  };
}

const TranscriptView = z
  .object({
    conversationId: z.string(),
    state: ConversationState,
    /** Whether the transcript was assembled (at the end, with transcript storage on). */
    stored: z.boolean(),
    outcome: z.optional(TranscriptOutcome),
    text: z.optional(z.string()),
    entries: z.array(ConversationEntry),
  })
  .register(z.globalRegistry, { id: 'Transcript' });

const MessagesView = z
  .object({ conversationId: z.string(), state: ConversationState, messages: z.array(ConversationEntry) })
  .register(z.globalRegistry, { id: 'ConversationMessages' });

const ConversationParams = z.object({
  conversationId: z.string().check(z.minLength(1), z.maxLength(64), z.describe("The gateway's conversation id (cv_...)")),
});
const AccountConversationParams = z.extend(AccountParams, ConversationParams.shape);

async function messagesOf(gateway: Gateway, conversation: Conversation) {
  return chronological(
    await store.listMessages(gateway.table, conversation.accountId, conversation.conversationId),
    await store.listSentMessages(gateway.table, conversation.accountId, conversation.conversationId),
  );
}

async function transcriptOf(gateway: Gateway, accountId: string, conversationId: string): Promise<z.infer<typeof TranscriptView>> {
  const conversation = await conversationOf(gateway, accountId, conversationId);
  const stored = await store.getTranscript(gateway.table, accountId, conversationId);
  return {
    conversationId,
    state: conversation.state,
    stored: stored !== undefined,
    ...(conversation.transcript ? { outcome: conversation.transcript } : {}),
    ...(stored ? { text: stored.text } : {}),
    entries: await messagesOf(gateway, conversation),
  };
}

const ListQuery = z.strictObject({
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 25).check(z.describe('How many, 1-100 (default 25)')),
  cursor: z.optional(z.string().check(z.regex(/^cv_[a-z0-9]{1,40}$/))).check(z.describe('The nextCursor of the previous page')),
  state: z._default(z.enum(['live', 'ended', 'all']), 'all').check(z.describe('live: starting, queued or active; ended: ended, transcribed or failed')),
});

const ConversationList = z
  .object({ conversations: z.array(ConversationView), nextCursor: z.optional(z.string()) })
  .register(z.globalRegistry, { id: 'ConversationList' });

export const messagingRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/playbook/conversations',
    operationId: 'startConversation',
    summary: 'Start a conversation on the messaging platform (pre-chat details from the mapping); its long-poll opens within a second',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'sends' },
    body: StartConversationInput,
    response: { status: 201, description: 'Started', schema: ConversationView },
    async handle({ body, caller, gateway, log }) {
      return json(201, conversationView(await startConversation(gateway, playbookAccountOf(caller), body, log)));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/conversations/{conversationId}',
    operationId: 'getConversation',
    summary: 'A conversation and its state',
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'reads' },
    response: { status: 200, description: 'The conversation', schema: ConversationView },
    async handle({ params, caller, gateway }) {
      return conversationView(await conversationOf(gateway, playbookAccountOf(caller), params.conversationId));
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/conversations/{conversationId}/messages',
    operationId: 'sendConversationMessage',
    summary: 'Send a text or media message (automated replies are refused once the conversation is handed off)',
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'sends' },
    body: SendMessageInput,
    response: {
      status: 201,
      description: 'Sent',
      schema: z.object({ id: z.string(), status: z.enum(['sending', 'sent']), type: z.enum(['text', 'media']), sentAt: z.string() }),
    },
    async handle({ params, body, caller, gateway, log }) {
      return json(201, await sendMessage(gateway, playbookAccountOf(caller), params.conversationId, body, log));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/conversations/{conversationId}/messages',
    operationId: 'listConversationMessages',
    summary: "The conversation's messages, both sides and system events, oldest first",
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'reads' },
    response: { status: 200, description: 'Messages', schema: MessagesView },
    async handle({ params, caller, gateway }) {
      const conversation = await conversationOf(gateway, playbookAccountOf(caller), params.conversationId);
      return { conversationId: conversation.conversationId, state: conversation.state, messages: await messagesOf(gateway, conversation) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/conversations/{conversationId}/handoff',
    operationId: 'handOffConversation',
    summary: 'Hand the conversation to a human agent: routed to an agent queue; automated replies are refused from then on',
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'sends' },
    body: HandOffInput,
    response: { status: 202, description: 'Routed to the queue', schema: ConversationView },
    async handle({ params, body, caller, gateway, log }) {
      return json(202, conversationView(await handOff(gateway, playbookAccountOf(caller), params.conversationId, body, log)));
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/conversations/{conversationId}/end',
    operationId: 'endConversation',
    summary: 'End the conversation on the platform; its end and transcript follow as events',
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'sends' },
    response: { status: 202, description: 'Ending', schema: ConversationView },
    async handle({ params, caller, gateway, log }) {
      return json(202, conversationView(await endConversation(gateway, playbookAccountOf(caller), params.conversationId, log)));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/conversations/{conversationId}/transcript',
    operationId: 'getConversationTranscript',
    summary: 'The transcript: chronological entries, and the stored text once the conversation ended',
    access: 'playbook',
    params: ConversationParams,
    quota: { kind: 'reads' },
    response: { status: 200, description: 'The transcript', schema: TranscriptView },
    async handle({ params, caller, gateway }) {
      return transcriptOf(gateway, playbookAccountOf(caller), params.conversationId);
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/conversations',
    operationId: 'listConversations',
    summary: "The account's conversations with their state, newest first (dashboard)",
    params: AccountParams,
    query: ListQuery,
    response: { status: 200, description: 'A page of conversations', schema: ConversationList },
    async handle({ params, query, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const live = new Set<string>(['starting', 'queued', 'active']);
      const wanted = (c: Conversation) => query.state === 'all' || (query.state === 'live') === live.has(c.state);
      const page = await store.listConversations(gateway.table, params.accountId, { limit: query.limit, ...(query.cursor ? { startKey: query.cursor } : {}) });
      return { conversations: page.conversations.filter(wanted).map(conversationView), ...(page.nextKey ? { nextCursor: page.nextKey } : {}) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/conversations/{conversationId}/transcript',
    operationId: 'getAccountConversationTranscript',
    summary: "A conversation's transcript (dashboard)",
    params: AccountConversationParams,
    response: { status: 200, description: 'The transcript', schema: TranscriptView },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      return transcriptOf(gateway, params.accountId, params.conversationId);
    },
  }),
];
