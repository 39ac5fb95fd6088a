import type { Gateway } from '../gateway';
import type { Conversation } from '../store/items';

/**
 * The session token sealed under a name that carries its conversation (names are not secrets;
 * values are registered for redaction): opened for another conversation, it is refused.
 */
const sessionTokenName = (conversationId: string) => `sessionToken:${conversationId}`;

export async function sealSessionToken(gateway: Gateway, accountId: string, conversationId: string, sessionToken: string) {
  // Many short-lived tokens per account: one shared data key, so a poller taking over 200 conversations
  // unwraps one key per account rather than one per conversation (KMS is billed per call).
  return gateway.vault.seal({ accountId, connector: 'messaging' }, { [sessionTokenName(conversationId)]: sessionToken }, { shareDataKey: true });
}

export async function openSessionToken(gateway: Gateway, conversation: Conversation): Promise<string> {
  if (!conversation.sessionToken) throw new Error(`conversation ${conversation.conversationId} has no session token`);
  const opened = await gateway.vault.open({ accountId: conversation.accountId, connector: 'messaging' }, conversation.sessionToken, { shareDataKey: true });
  const token = opened[sessionTokenName(conversation.conversationId)];
  if (!token) throw new Error(`the session token stored with conversation ${conversation.conversationId} belongs to another conversation`);
  return token;
}
