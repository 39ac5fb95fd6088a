import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformIdOf, startMessagingSandbox, type MessagingSandbox } from './support';
import * as store from '../../shared/store/store';

/**
 * Conversations on Messaging for In-App and Web (the platform's current product): the same playbook
 * API, fleet, leases and lifecycle as the long-poll, over the Messaging API simulator's Server-Sent
 * Events. Real HTTP end to end.
 */

const ORG_ID = '00D000000000042';
const DEPLOYMENT = 'Test_Deployment';

function settingsFor(messagingUrl: string): Record<string, unknown> {
  return {
    conversationTransport: 'messaging_api',
    messagingOrgId: ORG_ID,
    deploymentDeveloperName: DEPLOYMENT,
    messagingUrl,
    prechatMapping: { Email: { attribute: 'email', displayToAgent: true } },
  };
}

async function sseSandbox(tokenLifetimeMs?: number): Promise<MessagingSandbox> {
  // The settings name the simulator's URL, known once it listens: connect, then save them.
  const sandbox = await startMessagingSandbox({ simulator: { ...(tokenLifetimeMs ? { messagingApiTokenLifetimeMs: tokenLifetimeMs } : {}) } });
  sandbox.crm.messagingApi.registerDeployment(ORG_ID, DEPLOYMENT);
  const saved = await sandbox.gateway.call('PUT', `/api/v1/accounts/${sandbox.accountId}/connections/messaging/sync-settings`, { token: sandbox.userToken, body: settingsFor(sandbox.crm.url) });
  if (saved.status !== 200) throw new Error(`settings: ${saved.status} ${await saved.text()}`);
  return sandbox;
}

const texts = (sandbox: MessagingSandbox) => sandbox.events('message.received').map((e) => (e.data.message as { text?: string }).text).filter((text) => text !== undefined);

describe('a conversation on Messaging for In-App and Web', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await sseSandbox();
  });
  afterAll(() => sandbox?.stop());

  it('refuses a messaging URL outside the platform\'s domain, naming the field, and keeps the settings it had', async () => {
    const path = `/api/v1/accounts/${sandbox.accountId}/connections/messaging`;
    const refused = await sandbox.gateway.call('PUT', `${path}/sync-settings`, { token: sandbox.userToken, body: settingsFor('https://collector.example.com') });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await refused.json()) as { errors?: Array<{ path: string; message: string }> };
    expect(problem.errors).toEqual([{ path: 'messagingUrl', message: expect.stringContaining('salesforce-scrt.com') }]);
    const kept = (await (await sandbox.gateway.call('GET', path, { token: sandbox.userToken })).json()) as { syncSettings: { messagingUrl?: string } };
    expect(kept.syncSettings.messagingUrl).toBe(sandbox.crm.url);
  });

  it('starts under a lowercase UUID, streams one connection, resumes a dropped stream without loss or duplicates, and transcribes the platform entries', async () => {
    const api = sandbox.crm.messagingApi;
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound', prechat: { email: 'visitor@example.com' } });
    expect(started.status).toBe(201);
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    expect(platformId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // The pre-chat mapping became routing attributes.
    expect(api.conversation(platformId).routingAttributes).toEqual({ Email: 'visitor@example.com' });
    // The token is sealed, never stored as text.
    const stored = await store.getConversation(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId, id);
    expect(stored?.transport).toBe('messaging_api');
    expect(JSON.stringify(stored)).not.toMatch(/eyJ[A-Za-z0-9_-]+\.eyJ/);

    await sandbox.until('the stream', () => api.streamStats().openNow === 1);
    await sandbox.until('queued (routing result)', () => sandbox.events('conversation.queued').length === 1);
    api.agentJoins(platformId, 'Ann Agent');
    api.agentTypes(platformId, 'Ann Agent');
    api.agentWrites(platformId, 'Hello, how can I help?', 'Ann Agent');
    await sandbox.until('agent message', () => texts(sandbox).includes('Hello, how can I help?'));
    expect(sandbox.events('agent.joined')[0]?.data).toMatchObject({ agentName: 'Ann Agent' });
    const hello = sandbox.events('message.received').find((e) => (e.data.message as { text?: string }).text === 'Hello, how can I help?');
    expect(hello?.data.message).toMatchObject({ sender: 'agent', senderName: 'Ann Agent', type: 'text' });

    const reply = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'I need my invoice', author: 'end_user' });
    expect(reply.status).toBe(201);
    const media = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { media: { url: 'https://example.com/a.png', mimeType: 'image/png' }, author: 'end_user' });
    expect(media).toMatchObject({ status: 409, body: { type: 'urn:integration-gateway:problem:media-not-supported' } });

    // The stream drops; events written meanwhile arrive once the holder reconnects with Last-Event-Id.
    api.dropStreams();
    api.agentWrites(platformId, 'Written while the stream was down', 'Ann Agent');
    await sandbox.until('the event written during the drop', () => texts(sandbox).includes('Written while the stream was down'));
    expect(api.streamStats().opened).toBeGreaterThanOrEqual(2);
    api.agentWrites(platformId, 'One more', 'Ann Agent');
    await sandbox.until('one more', () => texts(sandbox).includes('One more'));
    // Nothing twice, nothing lost; the end user's own echo is not taken for an agent message.
    expect(texts(sandbox).filter((text) => text !== undefined && !text.startsWith('Ann'))).toEqual(['Hello, how can I help?', 'Written while the stream was down', 'One more']);
    const sequences = sandbox.events('message.received').map((e) => (e.data.message as { sequence: number }).sequence);
    expect(new Set(sequences).size).toBe(sequences.length);

    api.agentEnds(platformId, 'Ann Agent');
    await sandbox.until('transcript', () => sandbox.events('transcript.stored').length === 1, 15_000);
    expect(sandbox.events('conversation.ended')[0]?.data).toMatchObject({ reason: 'agent' });
    // Never two streams for one conversation.
    expect(api.streamStats().maxOpenPerEndUser).toBe(1);

    // The transcript is the platform's record: both sides, in order, typing indicators left out.
    const transcript = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/transcript`);
    const text = String(transcript.body.text);
    const order = ['routing result', 'agent joined: Ann Agent', 'Hello, how can I help?', 'Customer (Guest): I need my invoice', 'Written while the stream was down', 'One more', 'ended'];
    let last = -1;
    for (const line of order) {
      const at = text.indexOf(line, last + 1);
      expect(at, line).toBeGreaterThan(last);
      last = at;
    }
    expect(text).not.toMatch(/typing/i);
  });
});

describe('Messaging for In-App and Web tokens', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    // Tokens live 4 minutes: under the 5 minutes before expiry at which the holder renews them.
    sandbox = await sseSandbox(4 * 60_000);
  });
  afterAll(() => sandbox?.stop());

  it('renews a token before it expires; a token refused after renewing once ends the conversation with the restart remedy', async () => {
    const api = sandbox.crm.messagingApi;
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound', prechat: { email: 'visitor@example.com' } });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('the stream', () => api.streamStats().openNow === 1);
    await sandbox.until('a renewal', () => (sandbox.crm.requests.get('GET /iamessage/api/v2/authorization/continuation-access-token') ?? 0) > 0);
    api.agentWrites(platformId, 'Still here');
    await sandbox.until('a message after renewal', () => texts(sandbox).includes('Still here'));

    api.expireTokens();
    api.dropStreams();
    await sandbox.until('expired', () => sandbox.events('conversation.expired').length === 1, 15_000);
    expect(sandbox.events('conversation.expired')[0]?.data).toMatchObject({ remedy: expect.stringMatching(/restart/i) });
    expect(sandbox.events('conversation.ended')[0]?.data).toMatchObject({ reason: 'session_expired' });
  });
});
