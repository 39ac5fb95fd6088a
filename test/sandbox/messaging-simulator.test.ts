import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import type { PollAnswer } from '../../sandbox/messaging-simulator';
import { DOCUMENTED_EXAMPLES, DOCUMENTED_FIELDS } from '../messaging/chat-vocabulary';
import { bearer, jwtBearerToken, postJson, rsaKeyPair, type KeyPair } from './crm-fixtures';

const CHANNEL = 'web-chat-channel';

let crm: RunningCrmSimulator;
let keys: KeyPair;
/** Identity access token of the licensed integration user. */
let accessToken: string;

interface Conversation {
  conversationId: string;
  token: string;
}

async function startConversation(body: Record<string, unknown> = {}, token = accessToken): Promise<Response> {
  return postJson(`${crm.url}/v58.0/conversations/`, { messagingPlatformKey: CHANNEL, contactId: '003000000000001', ...body }, token);
}

async function newConversation(body: Record<string, unknown> = {}): Promise<Conversation> {
  const response = await startConversation(body);
  expect(response.status).toBe(201);
  return (await response.json()) as Conversation;
}

function poll(conversation: Conversation, query: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${crm.url}/v58.0/conversations/${conversation.conversationId}/messages${query}`, {
    headers: bearer(conversation.token),
    signal: signal ?? null,
  });
}

async function pollJson(conversation: Conversation, query: string): Promise<PollAnswer> {
  const response = await poll(conversation, query);
  expect(response.status).toBe(200);
  return (await response.json()) as PollAnswer;
}

/** Polls from the start and returns the last sequence, so later polls see only new events. */
async function drain(conversation: Conversation): Promise<number> {
  return (await pollJson(conversation, '?ack=-1&timeout=0')).sequence;
}

function send(conversation: Conversation, message: unknown): Promise<Response> {
  return postJson(`${crm.url}/v58.0/conversations/${conversation.conversationId}/messages`, { message }, conversation.token);
}

async function untilPolling(conversationId: string, polling: boolean): Promise<void> {
  await vi.waitFor(() => expect(crm.messaging.isPolling(conversationId)).toBe(polling), { timeout: 5_000, interval: 5 });
}

beforeAll(async () => {
  crm = await startCrmSimulator();
  keys = await rsaKeyPair();
  crm.identity.registerUser({ username: 'messaging@example.com', hasMessagingUserLicense: true });
  crm.identity.registerUser({ username: 'unlicensed@example.com', hasMessagingUserLicense: false });
  crm.identity.registerConnectedApp({
    clientId: 'messaging-app',
    clientSecret: randomBytes(16).toString('hex'),
    publicKey: keys.publicKey,
    callbackUrl: 'https://gateway.example/auth/crmmessaging/callback',
    scopes: ['api', 'refresh_token', 'offline_access'],
    approvedUsers: ['messaging@example.com', 'unlicensed@example.com'],
  });
  crm.messaging.registerMessagingChannel(CHANNEL);
  accessToken = (await jwtBearerToken(crm, keys.privateKey, 'messaging-app', 'messaging@example.com')).access_token;
});

afterAll(async () => {
  await crm.stop();
});

describe('conversation start', () => {
  it('returns a conversation id and a session JWT, and creates a waiting session with pre-chat values', async () => {
    const prechatDetails = [
      { label: 'Email', value: 'visitor@example.com', transcriptFields: ['Visitor_Email__c'], displayToAgent: true },
      { label: 'Topic', value: 'billing', transcriptFields: [], displayToAgent: false },
    ];
    const { conversationId, token } = await newConversation({ prechatDetails });
    expect(token.split('.')).toHaveLength(3);
    const session = crm.messaging.messagingSession(conversationId);
    expect(session).toMatchObject({ Status: 'Waiting', ConversationId: conversationId, EndUserContactId: '003000000000001', Visitor_Email__c: 'visitor@example.com' });
    expect(crm.messaging.prechatDetails(conversationId)).toEqual(prechatDetails);
    // The session token is for the conversation only, not for the CRM's APIs.
    expect((await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(token) })).status).toBe(401);
  });

  it('refuses an unknown messaging platform key with 400', async () => {
    const response = await startConversation({ messagingPlatformKey: 'no-such-channel' });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain('no-such-channel');
  });

  it('refuses an integration user without the Messaging User license with 403', async () => {
    const unlicensed = (await jwtBearerToken(crm, keys.privateKey, 'messaging-app', 'unlicensed@example.com')).access_token;
    const response = await startConversation({}, unlicensed);
    expect(response.status).toBe(403);
    expect(JSON.stringify(await response.json())).toContain('Messaging User');
  });

  it('refuses a missing or invalid access token with 401', async () => {
    expect((await startConversation({}, 'invalid')).status).toBe(401);
    const response = await postJson(`${crm.url}/v58.0/conversations/`, { messagingPlatformKey: CHANNEL });
    expect(response.status).toBe(401);
  });
});

describe('long-poll', () => {
  it('delivers from the start with ack=-1, then nothing twice once acknowledged', async () => {
    const conversation = await newConversation();
    const first = await pollJson(conversation, '?ack=-1&timeout=0.05');
    expect(first.messages.map((m) => m.type)).toEqual(['ChatRequestSuccess']);
    expect(first.messages[0]?.message).toEqual({ queuePosition: expect.any(Number) as unknown, estimatedWaitTime: expect.any(Number) as unknown });
    expect(first.sequence).toBe(1);

    crm.messaging.agentJoins(conversation.conversationId, 'Ana');
    crm.messaging.agentSays(conversation.conversationId, 'Hello, how can I help?');
    const second = await pollJson(conversation, `?ack=${first.sequence}&timeout=0.05`);
    expect(second.messages.map((m) => m.type)).toEqual(['ChatEstablished', 'ChatMessage']);
    const userId = second.messages[0]?.message.userId;
    expect(second.messages[0]?.message).toEqual({ name: 'Ana', userId: expect.stringMatching(/^005/) as unknown, sneakPeekEnabled: false });
    expect(second.messages[1]?.message).toEqual({ name: 'Ana', text: 'Hello, how can I help?', agentId: userId });
    expect(second.sequence).toBe(3);

    expect((await poll(conversation, `?ack=${second.sequence}&timeout=0.05`)).status).toBe(204);
    expect((await poll(conversation, `?ack=${second.sequence}&timeout=0.05`)).status).toBe(204);
    expect(crm.messaging.messagingSession(conversation.conversationId)).toMatchObject({ Status: 'Active', AgentType: 'Agent', OwnerId: userId });
  });

  it('answers a waiting poll as soon as the agent speaks, long before its timeout', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    const pending = poll(conversation, `?ack=${ack}&timeout=120`);
    await untilPolling(conversation.conversationId, true);
    crm.messaging.agentSays(conversation.conversationId, 'Are you still there?');

    // The poll holds for up to 120 s; its slot clears within the 5 s wait only if the message woke it.
    await untilPolling(conversation.conversationId, false);
    const response = await pending;
    expect(response.status).toBe(200);
    const answer = (await response.json()) as PollAnswer;
    expect(answer.messages).toHaveLength(1);
    expect(answer.messages[0]?.message).toMatchObject({ text: 'Are you still there?' });
    expect(answer.sequence).toBe(ack + 1);
    expect(crm.messaging.isPolling(conversation.conversationId)).toBe(false);
  });

  it('answers 204 when the timeout passes with nothing new', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    const response = await poll(conversation, `?ack=${ack}&timeout=0.1`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
  });

  it('establishes no long-poll without ack: an immediate 204 even with messages waiting', async () => {
    const conversation = await newConversation();
    crm.messaging.agentSays(conversation.conversationId, 'hello?');
    const response = await poll(conversation, '?timeout=120');
    expect(response.status).toBe(204);
    expect(crm.messaging.isPolling(conversation.conversationId)).toBe(false);
    expect((await pollJson(conversation, '?ack=-1')).messages.map((m) => m.type)).toEqual(['ChatRequestSuccess', 'ChatMessage']);
  });

  it('refuses a second concurrent poll on the same conversation with 409', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    const first = poll(conversation, `?ack=${ack}&timeout=120`);
    await untilPolling(conversation.conversationId, true);

    const second = await poll(conversation, `?ack=${ack}&timeout=0.05`);
    expect(second.status).toBe(409);

    crm.messaging.agentSays(conversation.conversationId, 'release');
    await untilPolling(conversation.conversationId, false);
    expect((await first).status).toBe(200);
  });

  it('frees the slot when the client aborts its poll, so the next poll is not 409', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    const controller = new AbortController();
    const aborted = poll(conversation, `?ack=${ack}&timeout=120`, controller.signal).catch((error: unknown) => error);
    await untilPolling(conversation.conversationId, true);
    controller.abort();
    expect(await aborted).toBeInstanceOf(Error);

    await untilPolling(conversation.conversationId, false);
    const next = await poll(conversation, `?ack=${ack}&timeout=0.05`);
    expect(next.status).toBe(204);
  });

  it('answers 401 after the session token expires', async () => {
    const conversation = await newConversation();
    crm.messaging.expireSessionToken(conversation.conversationId);
    const response = await poll(conversation, '?ack=-1&timeout=0.05');
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual([{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
    expect((await send(conversation, { text: 'hello' })).status).toBe(401);
  });

  it("refuses another conversation's session token", async () => {
    const mine = await newConversation();
    const theirs = await newConversation();
    const response = await poll({ conversationId: theirs.conversationId, token: mine.token }, '?ack=-1&timeout=0');
    expect(response.status).toBe(403);
  });

  it('serves injected faults in the CRM error shape', async () => {
    const conversation = await newConversation();
    crm.faults.inject({ fault: { kind: 'status', status: 503 }, pathPrefix: `/v58.0/conversations/${conversation.conversationId}/messages`, method: 'GET' });
    const response = await poll(conversation, '?ack=-1&timeout=0');
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual([{ message: 'injected 503', errorCode: 'SERVER_UNAVAILABLE' }]);
    expect((await poll(conversation, '?ack=-1&timeout=0')).status).toBe(200);
  });
});

describe('the documented chat vocabulary (contract)', () => {
  it('delivers only documented types, each with only documented fields of the documented kinds', async () => {
    const conversation = await newConversation();
    const id = conversation.conversationId;
    crm.messaging.queueUpdate(id, 1, 30);
    crm.messaging.agentJoins(id, 'Ana');
    crm.messaging.agentTyping(id, true);
    crm.messaging.agentTyping(id, false);
    crm.messaging.agentSays(id, 'Hello');
    crm.messaging.fileTransfer(id, 'Requested');
    crm.messaging.customEvent(id, 'survey', 'rated 5');
    crm.messaging.idleTimeoutWarning(id, 'triggered');
    crm.messaging.agentDisconnects(id);
    crm.messaging.transfer(id, 'Ben');
    crm.messaging.endConversation(id);
    const failed = await newConversation();
    crm.messaging.requestFails(failed.conversationId, 'Unavailable');

    const delivered = [...(await pollJson(conversation, '?ack=-1&timeout=0')).messages, ...(await pollJson(failed, '?ack=-1&timeout=0')).messages];
    const types = new Set(delivered.map((event) => event.type));
    expect([...types].sort()).toEqual(Object.keys(DOCUMENTED_EXAMPLES).sort());
    for (const event of delivered) {
      const documented = DOCUMENTED_FIELDS[event.type];
      expect(documented, event.type).toBeDefined();
      const example = DOCUMENTED_EXAMPLES[event.type as keyof typeof DOCUMENTED_EXAMPLES] as Record<string, unknown>;
      for (const [field, value] of Object.entries(event.message)) {
        expect(documented, `${event.type}.${field}`).toContain(field);
        if (field in example) expect(typeof value, `${event.type}.${field}`).toBe(typeof example[field]);
      }
    }
  });
});

describe('sending and the transcript', () => {
  it('accepts text and media with 202, does not echo them, and keeps the transcript in order', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    crm.messaging.agentJoins(conversation.conversationId, 'Ana');
    expect((await send(conversation, { text: 'I need help with my invoice' })).status).toBe(202);
    crm.messaging.agentSays(conversation.conversationId, 'Sure, which one?');
    expect((await send(conversation, { media: { url: 'https://files.example/invoice.pdf', mimeType: 'application/pdf' } })).status).toBe(202);
    crm.messaging.fileTransfer(conversation.conversationId, 'Requested');
    crm.messaging.transfer(conversation.conversationId, 'Ben');

    const delivered = await pollJson(conversation, `?ack=${ack}&timeout=0`);
    expect(delivered.messages.map((m) => m.type)).toEqual(['ChatEstablished', 'ChatMessage', 'FileTransfer', 'ChatTransferred']);
    expect(delivered.messages[3]?.message).toEqual({ name: 'Ben', userId: expect.stringMatching(/^005/) as unknown, sneakPeekEnabled: false });

    const transcript = crm.messaging.transcript(conversation.conversationId);
    expect(transcript.map((entry) => [entry.role, entry.type])).toEqual([
      ['System', 'ChatRequestSuccess'],
      ['System', 'ChatEstablished'],
      ['EndUser', 'ChatMessage'],
      ['Agent', 'ChatMessage'],
      ['EndUser', 'ChatMessage'],
      ['Agent', 'FileTransfer'],
      ['System', 'ChatTransferred'],
    ]);
    expect(transcript[2]?.message).toMatchObject({ text: 'I need help with my invoice' });
    const times = transcript.map((entry) => Date.parse(entry.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('refuses a malformed message with 400', async () => {
    const conversation = await newConversation();
    expect((await send(conversation, { body: 'hello' })).status).toBe(400);
    expect((await send(conversation, { text: '' })).status).toBe(400);
  });
});

describe('ending', () => {
  it('delivers ChatEnded, sets the session Ended with a record update event, then refuses with 403', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    crm.messaging.agentJoins(conversation.conversationId);
    crm.messaging.endConversation(conversation.conversationId);

    const last = await pollJson(conversation, `?ack=${ack}&timeout=5`);
    expect(last.messages.map((m) => m.type)).toEqual(['ChatEstablished', 'ChatEnded']);
    expect(last.messages[1]?.message).toEqual({ reason: 'agent' });
    expect(crm.messaging.messagingSession(conversation.conversationId).Status).toBe('Ended');
    const updates = crm.messaging.recordUpdates().filter((u) => u.conversationId === conversation.conversationId);
    expect(updates.at(-1)).toMatchObject({ object: 'MessagingSession', changedFields: { Status: 'Ended' } });

    const after = await poll(conversation, `?ack=${last.sequence}&timeout=5`);
    expect(after.status).toBe(403);
    expect(await after.json()).toEqual([{ message: 'session ended', errorCode: 'SESSION_ENDED' }]);
    expect((await send(conversation, { text: 'hello?' })).status).toBe(403);
  });

  it('wakes a waiting poll when the conversation ends', async () => {
    const conversation = await newConversation();
    const ack = await drain(conversation);
    const pending = poll(conversation, `?ack=${ack}&timeout=120`);
    await untilPolling(conversation.conversationId, true);
    crm.messaging.endConversation(conversation.conversationId, 'client');
    await untilPolling(conversation.conversationId, false);
    const response = await pending;
    expect(response.status).toBe(200);
    expect(((await response.json()) as PollAnswer).messages).toEqual([
      { type: 'ChatEnded', message: { reason: 'client' } },
    ]);
  });

  it('lets the end user end the conversation with DELETE', async () => {
    const conversation = await newConversation();
    const response = await fetch(`${crm.url}/v58.0/conversations/${conversation.conversationId}`, { method: 'DELETE', headers: bearer(conversation.token) });
    expect(response.status).toBe(204);
    expect(crm.messaging.messagingSession(conversation.conversationId).Status).toBe('Ended');
  });
});

describe('MessagingSession record over the REST API', () => {
  it('reads the record and writes the transcript field, refusing standard fields', async () => {
    const conversation = await newConversation();
    crm.messaging.endConversation(conversation.conversationId);
    const { Id: recordId } = crm.messaging.messagingSession(conversation.conversationId);
    const url = `${crm.url}/services/data/v58.0/sobjects/MessagingSession/${recordId}`;

    const read = await fetch(url, { headers: bearer(accessToken) });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ attributes: { type: 'MessagingSession' }, Id: recordId, Status: 'Ended', ConversationId: conversation.conversationId });

    const patch = (body: unknown): Promise<Response> =>
      fetch(url, { method: 'PATCH', headers: { ...bearer(accessToken), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await patch({ Transcript__c: 'Agent: hi\nVisitor: hello' })).status).toBe(204);
    expect(crm.messaging.messagingSession(conversation.conversationId).Transcript__c).toBe('Agent: hi\nVisitor: hello');
    expect(crm.messaging.recordUpdates().at(-1)).toMatchObject({ recordId, changedFields: { Transcript__c: 'Agent: hi\nVisitor: hello' } });

    expect((await patch({ Status: 'Active' })).status).toBe(400);
    expect(crm.messaging.messagingSession(conversation.conversationId).Status).toBe('Ended');
    expect((await fetch(url, { headers: bearer(conversation.token) })).status).toBe(401);
  });
});
