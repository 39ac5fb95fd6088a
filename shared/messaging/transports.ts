import type { Gateway } from '../gateway';
import type { Conversation } from '../store/items';
import { ConversationSession } from './conversation-api';
import type { ConversationTransport } from './conversation-transport';
import { LongPollTransport } from './long-poll-transport';
import type { MessagingApiEndpoint } from './messaging-api-client';
import { MessagingApiTransport } from './messaging-api-transport';
import { openSessionToken, sealSessionToken } from './session-tokens';
import type { MessagingSettings } from './settings';
import * as store from '../store/store';

/** The conversation's own long-poll calls (poll, send, route, end), with its session token. */
export async function conversationSession(gateway: Gateway, conversation: Conversation, instanceUrl: string, transport: { fetch?: typeof fetch } = {}): Promise<ConversationSession> {
  if (!conversation.platformConversationId) throw new Error(`conversation ${conversation.conversationId} has no platform id`);
  return new ConversationSession({
    instanceUrl,
    platformConversationId: conversation.platformConversationId,
    sessionToken: await openSessionToken(gateway, conversation),
    allowInsecure: gateway.env.ALLOW_INSECURE_PLATFORM_URLS,
    timeoutMs: gateway.env.PLATFORM_TIMEOUT_MS,
    ...transport,
  });
}

/** The Messaging API endpoint of an account's settings (undefined while they do not name one). */
export function messagingApiEndpoint(gateway: Gateway, settings: MessagingSettings, transport: { fetch?: typeof fetch } = {}): MessagingApiEndpoint | undefined {
  const { messagingUrl, messagingOrgId, deploymentDeveloperName } = settings;
  if (!messagingUrl || !messagingOrgId || !deploymentDeveloperName) return undefined;
  return { messagingUrl, orgId: messagingOrgId, deploymentName: deploymentDeveloperName, allowInsecure: gateway.env.ALLOW_INSECURE_PLATFORM_URLS, timeoutMs: gateway.env.PLATFORM_TIMEOUT_MS, ...transport };
}

/**
 * The transport a conversation was started on, with its sealed token opened. A Messaging API
 * conversation reaches the messaging URL it started on (`instanceUrl`), with the org and deployment
 * of the account's settings.
 */
export async function conversationTransport(
  gateway: Gateway,
  conversation: Conversation,
  instanceUrl: string,
  options: { settings: MessagingSettings; fetch?: typeof fetch },
): Promise<ConversationTransport> {
  const transport = options.fetch ? { fetch: options.fetch } : {};
  if (conversation.transport !== 'messaging_api') {
    return new LongPollTransport(await conversationSession(gateway, conversation, instanceUrl, transport), gateway.env.LONG_POLL_TIMEOUT_SECONDS, () => gateway.now());
  }
  const endpoint = messagingApiEndpoint(gateway, { ...options.settings, messagingUrl: instanceUrl }, transport);
  if (!endpoint || !conversation.platformConversationId) throw new Error(`conversation ${conversation.conversationId} has no Messaging API endpoint in its account's settings`);
  const { accountId, conversationId } = conversation;
  return new MessagingApiTransport({
    endpoint,
    platformConversationId: conversation.platformConversationId,
    token: await openSessionToken(gateway, conversation),
    now: () => gateway.now(),
    // Sealed like the first one: a send or the next holder opens the renewed token.
    onRenewed: async (token) => {
      await store.updateConversation(gateway.table, accountId, conversationId, { set: { sessionToken: await sealSessionToken(gateway, accountId, conversationId, token) } });
    },
  });
}
