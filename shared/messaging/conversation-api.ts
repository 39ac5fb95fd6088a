import * as z from 'zod/mini';
import { createPlatformClient, type PlatformClient, type PlatformTransportOptions } from '../http/platform-client';
import { unlimitedRateBudget } from '../http/rate-budget';
import type { MessagingPlatformSession } from './client';

/**
 * The messaging platform's conversation API (spec: Messaging platform calls). Starting a
 * conversation and the org's records use the connection's identity token (`MessagingPlatformSession`);
 * everything inside a conversation uses that conversation's own short-lived session token
 * (spec Authentication, messaging rule 6), through `ConversationSession`.
 *
 * The poll's answer follows the platform's chat REST API (./chat-messages.ts). What no
 * documentation shows is the gateway's assumption (docs/platform-contracts.md): the send path
 * `POST /v58.0/conversations/{id}/messages` with `{message: {text}}` or `{message: {media}}`, the
 * handoff `POST .../route`, the end `DELETE /v58.0/conversations/{id}`.
 */

export const API_VERSION = 'v58.0';
const DATA_API = `/services/data/${API_VERSION}`;

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const PrechatItem = z.lazy(() =>
  z.object({
    label: z.string(),
    value: z.string(),
    transcriptFields: z.array(z.string()),
    displayToAgent: z.boolean(),
  }),
);
export type PrechatItem = z.infer<typeof PrechatItem>;

export interface StartRequest {
  messagingPlatformKey: string;
  contactId?: string;
  prechatDetails: PrechatItem[];
}

const StartAnswer = z.lazy(() => z.object({ conversationId: z.string().check(z.minLength(1)), token: z.string().check(z.minLength(1)) }));

/** One event of a poll answer, as the platform's older chat API shapes them. */
export const PolledEvent = z.lazy(() => z.object({ type: z.string(), message: z._default(z.record(z.string(), z.unknown()), {}) }));
export type PolledEvent = z.infer<typeof PolledEvent>;
const PollAnswer = z.lazy(() => z.object({ messages: z.array(PolledEvent), sequence: z.number().check(z.int()) }));
export type PollAnswer = z.infer<typeof PollAnswer>;

const QueryAnswer = z.lazy(() => z.object({ records: z.array(z.object({ Id: z.string() })) }));
const Describe = z.lazy(() => z.object({ fields: z.array(z.object({ name: z.string(), type: z.optional(z.string()) })) }));
const SendAnswer = z.lazy(() => z.looseObject({ messageId: z.optional(z.string()) }));

export async function startPlatformConversation(
  session: MessagingPlatformSession,
  request: StartRequest,
): Promise<{ platformConversationId: string; sessionToken: string }> {
  const answer = await session.request({
    method: 'POST',
    path: `/${API_VERSION}/conversations/`,
    body: {
      messagingPlatformKey: request.messagingPlatformKey,
      ...(request.contactId ? { contactId: request.contactId } : {}),
      ...(request.prechatDetails.length ? { prechatDetails: request.prechatDetails } : {}),
    },
    schema: StartAnswer,
    // A start that may have reached the platform is not sent again: it would open a second session.
    idempotent: false,
  });
  return { platformConversationId: answer.body.conversationId, sessionToken: answer.body.token };
}

/** Quotes a literal for the CRM's query language. */
function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The MessagingSession record of a conversation, or undefined when the platform has none. */
export async function findSessionRecordId(session: MessagingPlatformSession, platformConversationId: string): Promise<string | undefined> {
  const answer = await session.request({
    method: 'GET',
    path: `${DATA_API}/query`,
    query: { q: `SELECT Id FROM MessagingSession WHERE ConversationId = ${quoted(platformConversationId)}` },
    schema: QueryAnswer,
  });
  return answer.body.records[0]?.Id;
}

export async function writeSessionField(session: MessagingPlatformSession, recordId: string, field: string, value: string): Promise<void> {
  await session.request({
    method: 'PATCH',
    path: `${DATA_API}/sobjects/MessagingSession/${encodeURIComponent(recordId)}`,
    body: { [field]: value },
    idempotent: true,
  });
}

export async function sessionFieldNames(session: MessagingPlatformSession): Promise<Set<string>> {
  const answer = await session.request({ method: 'GET', path: `${DATA_API}/sobjects/MessagingSession/describe`, schema: Describe });
  return new Set(answer.body.fields.map((field) => field.name));
}

/** Whether the user holds the Messaging User permission set license (a read: no conversation is started). */
export async function hasMessagingUserLicense(session: MessagingPlatformSession, userId: string): Promise<boolean> {
  const answer = await session.request({
    method: 'GET',
    path: `${DATA_API}/query`,
    query: { q: `SELECT Id FROM PermissionSetLicenseAssign WHERE AssigneeId = ${quoted(userId)} AND PermissionSetLicense.DeveloperName = 'MessagingUser'` },
    schema: QueryAnswer,
  });
  return answer.body.records.length > 0;
}

export interface ConversationSessionOptions extends PlatformTransportOptions {
  instanceUrl: string;
  platformConversationId: string;
  sessionToken: string;
  allowInsecure: boolean;
}

/**
 * Calls inside one conversation, with its session token. No automatic retries: the poller owns
 * its reconnect policy (spec long-poll rules), and a send that may have reached the platform is
 * not repeated.
 */
export class ConversationSession {
  private readonly client: PlatformClient;
  private readonly base: string;

  constructor(options: ConversationSessionOptions) {
    const { instanceUrl, platformConversationId, sessionToken, allowInsecure, ...transport } = options;
    this.client = createPlatformClient({
      ...transport,
      baseUrl: instanceUrl,
      platform: 'messaging',
      auth: { kind: 'bearer', token: sessionToken },
      rateBudget: unlimitedRateBudget,
      allowInsecure,
      retry: { maxAttempts: 1 },
    });
    this.base = `/${API_VERSION}/conversations/${encodeURIComponent(platformConversationId)}`;
  }

  /**
   * The long-poll: `ack` is the last sequence delivered (-1 at first, which also switches
   * long-polling on); answers within `timeoutSeconds` (204 → undefined).
   */
  async poll(ack: number, timeoutSeconds: number, options: { signal?: AbortSignal; waitMs: number }): Promise<PollAnswer | undefined> {
    const answer = await this.client.request({
      method: 'GET',
      path: `${this.base}/messages`,
      query: { ack, timeout: timeoutSeconds },
      timeoutMs: options.waitMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (answer.status === 204 || answer.body === undefined) return undefined;
    const parsed = PollAnswer.safeParse(answer.body);
    if (!parsed.success) throw new TypeError('the long-poll answer is not {messages, sequence}');
    return parsed.data;
  }

  async send(message: { text: string } | { media: { url: string; mimeType: string; name?: string } }): Promise<{ platformMessageId?: string }> {
    const answer = await this.client.request({ method: 'POST', path: `${this.base}/messages`, body: { message }, schema: SendAnswer, idempotent: false });
    return answer.body.messageId ? { platformMessageId: answer.body.messageId } : {};
  }

  async route(queue: string): Promise<void> {
    await this.client.request({ method: 'POST', path: `${this.base}/route`, body: { queue }, idempotent: false });
  }

  async end(): Promise<void> {
    await this.client.request({ method: 'DELETE', path: this.base });
  }
}
