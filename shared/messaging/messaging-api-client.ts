import * as z from 'zod/mini';
import { createPlatformClient, type PlatformClient } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { unlimitedRateBudget } from '../http/rate-budget';
import { PlatformEntry } from './messaging-api-events';

/**
 * The Messaging API for In-App and Web (the platform's current "Enhanced Chat" API), as its public
 * documentation and the official web sample app call it. Every call goes to the deployment's
 * messaging URL (SCRT):
 * - `POST /iamessage/api/v2/authorization/unauthenticated/access-token` `{orgId, esDeveloperName,
 *   capabilitiesVersion, platform}` → `{accessToken, lastEventId, ...}` (a JWT for a new end user);
 * - `GET /iamessage/api/v2/authorization/continuation-access-token` (Bearer) → a new JWT for the same end user;
 * - `POST /iamessage/api/v2/conversation` `{conversationId, esDeveloperName, routingAttributes?}`
 *   (the id is the client's own lowercase UUID);
 * - `POST /iamessage/api/v2/conversation/{id}/message` `{message: {id, messageType:
 *   'StaticContentMessage', staticContent: {formatType: 'Text', text}}, esDeveloperName}`;
 * - `DELETE /iamessage/api/v2/conversation/{id}?esDeveloperName=...` closes it;
 * - `GET /iamessage/api/v2/conversation/{id}/entries` lists its entries;
 * - `GET /eventrouter/v1/sse` (Bearer, `X-Org-Id`, `Last-Event-Id`) streams the end user's events.
 */

const API = '/iamessage/api/v2';
export const EVENT_STREAM_PATH = '/eventrouter/v1/sse';

export interface MessagingApiEndpoint {
  /** The deployment's messaging URL (SCRT). */
  messagingUrl: string;
  orgId: string;
  deploymentName: string;
  allowInsecure: boolean;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const AccessTokenAnswer = z.looseObject({ accessToken: z.string().check(z.minLength(1)), lastEventId: z.optional(z.string()) });
const EntriesAnswer = z.looseObject({ conversationEntries: z._default(z.array(PlatformEntry), []) });

function client(endpoint: MessagingApiEndpoint, token?: string): PlatformClient {
  return createPlatformClient({
    baseUrl: endpoint.messagingUrl,
    platform: 'messaging',
    auth: token ? { kind: 'bearer', token } : { kind: 'none' },
    rateBudget: unlimitedRateBudget,
    allowInsecure: endpoint.allowInsecure,
    // The conversation's holder owns its retries (as for the long-poll), and a send is never repeated.
    retry: { maxAttempts: 1 },
    ...(endpoint.timeoutMs !== undefined ? { timeoutMs: endpoint.timeoutMs } : {}),
    ...(endpoint.fetch ? { fetch: endpoint.fetch } : {}),
  });
}

/** A JWT for a new anonymous end user of the deployment; `lastEventId` is where its event stream starts. */
export async function unauthenticatedAccessToken(endpoint: MessagingApiEndpoint): Promise<{ accessToken: string; lastEventId?: string }> {
  const answer = await client(endpoint).request({
    method: 'POST',
    path: `${API}/authorization/unauthenticated/access-token`,
    // capabilitiesVersion and platform as the official web client sends them.
    body: { orgId: endpoint.orgId, esDeveloperName: endpoint.deploymentName, capabilitiesVersion: '1', platform: 'Web' },
    schema: AccessTokenAnswer,
    idempotent: true,
  });
  return { accessToken: answer.body.accessToken, ...(answer.body.lastEventId ? { lastEventId: answer.body.lastEventId } : {}) };
}

/** A new JWT for the same end user (session continuity): how the gateway renews a token before it expires. */
export async function continuationAccessToken(endpoint: MessagingApiEndpoint, token: string): Promise<string> {
  const answer = await client(endpoint, token).request({ method: 'GET', path: `${API}/authorization/continuation-access-token`, schema: AccessTokenAnswer });
  return answer.body.accessToken;
}

export async function createConversation(
  endpoint: MessagingApiEndpoint,
  token: string,
  conversationId: string,
  routingAttributes: Record<string, string>,
): Promise<void> {
  await client(endpoint, token).request({
    method: 'POST',
    path: `${API}/conversation`,
    body: { ...(Object.keys(routingAttributes).length > 0 ? { routingAttributes } : {}), esDeveloperName: endpoint.deploymentName, conversationId },
    idempotent: false,
  });
}

export async function sendText(endpoint: MessagingApiEndpoint, token: string, conversationId: string, messageId: string, text: string): Promise<void> {
  await client(endpoint, token).request({
    method: 'POST',
    path: `${API}/conversation/${encodeURIComponent(conversationId)}/message`,
    body: {
      message: { id: messageId, messageType: 'StaticContentMessage', staticContent: { formatType: 'Text', text } },
      esDeveloperName: endpoint.deploymentName,
    },
    idempotent: false,
  });
}

export async function closeConversation(endpoint: MessagingApiEndpoint, token: string, conversationId: string): Promise<void> {
  await client(endpoint, token).request({
    method: 'DELETE',
    path: `${API}/conversation/${encodeURIComponent(conversationId)}`,
    query: { esDeveloperName: endpoint.deploymentName },
  });
}

export async function listEntries(endpoint: MessagingApiEndpoint, token: string, conversationId: string): Promise<PlatformEntry[]> {
  const answer = await client(endpoint, token).request({
    method: 'GET',
    path: `${API}/conversation/${encodeURIComponent(conversationId)}/entries`,
    schema: EntriesAnswer,
  });
  return answer.body.conversationEntries;
}

function streamError(status: number | undefined, reason?: string): PlatformError {
  const kind =
    status === undefined
      ? 'network'
      : status === 401
        ? 'auth'
        : status === 403
          ? 'permission'
          : status >= 500
            ? 'unavailable'
            : status === 429
              ? 'rate_limited'
              : 'invalid_request';
  return new PlatformError({
    platform: 'messaging',
    kind,
    ...(status !== undefined ? { status } : {}),
    attempts: 1,
    method: 'GET',
    path: EVENT_STREAM_PATH,
    ...(reason ? { reason } : {}),
    retryable: status === undefined || status >= 500 || status === 429,
  });
}

/** Opens the end user's event stream; resumes after `lastEventId` when given. */
export async function openEventStream(
  endpoint: MessagingApiEndpoint,
  token: string,
  lastEventId: string | undefined,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const url = new URL(EVENT_STREAM_PATH, endpoint.messagingUrl);
  if (url.protocol !== 'https:' && !endpoint.allowInsecure) throw streamError(undefined, 'the messaging URL is not https');
  let response: Response;
  try {
    response = await (endpoint.fetch ?? fetch)(url, {
      headers: {
        Accept: 'text/event-stream',
        Authorization: `Bearer ${token}`,
        'X-Org-Id': endpoint.orgId,
        ...(lastEventId ? { 'Last-Event-Id': lastEventId } : {}),
      },
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw streamError(undefined, 'the event stream did not open');
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw streamError(response.status);
  }
  return response.body;
}

/** Pure: when a JWT expires (epoch ms), from its `exp` claim; undefined when it is not a JWT or has none. */
export function tokenExpiresAt(token: string): number | undefined {
  const part = token.split('.')[1];
  if (!part) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    const exp = typeof claims === 'object' && claims !== null ? (claims as { exp?: unknown }).exp : undefined;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
