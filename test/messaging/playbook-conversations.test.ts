import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setLogSink } from '../../shared/log/logger';
import { tableText } from '../support/dynamo';
import { platformIdOf, startMessagingSandbox, type MessagingSandbox } from './support';
import * as store from '../../shared/store/store';

/**
 * The playbook's own calls on a conversation, over real HTTP against the simulator: reading its
 * messages, ending it, another account's key, transcript storage switched off, and the session
 * token kept sealed (never in the table in plain, never in a log line).
 */
describe('the playbook conversation API', () => {
  let sandbox: MessagingSandbox;
  let otherKey: string;
  const logLines: string[] = [];
  let restoreSink: ReturnType<typeof setLogSink>;

  beforeAll(async () => {
    restoreSink = setLogSink((line) => logLines.push(line));
    sandbox = await startMessagingSandbox({
      settings: {
        transcriptStorage: 'disabled',
        prechatMapping: { Email: { attribute: 'email', displayToAgent: true } },
      },
    });
    // A second account on the same gateway, with its own playbook key.
    await sandbox.gateway.enableAccount('acct-stranger');
    const userToken = await sandbox.gateway.userToken('acct-stranger');
    const key = await sandbox.gateway.call('POST', '/api/v1/accounts/acct-stranger/api-keys', { token: userToken, body: { name: 'playbook' } });
    otherKey = ((await key.json()) as { key: string }).key;
  });
  afterAll(async () => {
    setLogSink(restoreSink);
    await sandbox?.stop();
  });

  it('reads the messages oldest first, both sides; another account sees, sends and ends nothing; the end goes to the platform', async () => {
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound', prechat: { email: 'visitor@example.com' } });
    expect(started.status).toBe(201);
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('the first long-poll', () => sandbox.crm.messaging.isPolling(platformId));

    sandbox.crm.messaging.agentJoins(platformId, 'Ann Agent');
    sandbox.crm.messaging.agentSays(platformId, 'Hello from Ann');
    await sandbox.until('the agent message', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'Hello from Ann'));
    expect((await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'Thanks Ann' })).status).toBe(201);
    sandbox.crm.messaging.agentSays(platformId, 'You are welcome');
    await sandbox.until('the second agent message', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'You are welcome'));

    const read = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/messages`);
    expect(read.status).toBe(200);
    const messages = read.body.messages as Array<{ direction: string; type: string; text?: string; systemEvent?: string; at: string }>;
    const texts = messages.filter((m) => m.type === 'text').map((m) => [m.direction, m.text]);
    expect(texts).toEqual([
      ['inbound', 'Hello from Ann'],
      ['outbound', 'Thanks Ann'],
      ['inbound', 'You are welcome'],
    ]);
    expect(messages.some((m) => m.type === 'system')).toBe(true);
    const times = messages.map((m) => Date.parse(m.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // Another account's key: the conversation does not exist for it, and nothing reaches the platform.
    const platformBefore = sandbox.crm.messaging.transcript(platformId).length;
    for (const [method, path, body] of [
      ['GET', `/api/v1/playbook/conversations/${id}`],
      ['GET', `/api/v1/playbook/conversations/${id}/messages`],
      ['POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'not yours' }],
      ['POST', `/api/v1/playbook/conversations/${id}/handoff`, { queue: 'Billing' }],
      ['POST', `/api/v1/playbook/conversations/${id}/end`],
      ['GET', `/api/v1/playbook/conversations/${id}/transcript`],
    ] as const) {
      const answer = await sandbox.playbook(method, path, body, otherKey);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.type).toBe('urn:integration-gateway:problem:not-found');
    }
    expect(sandbox.crm.messaging.transcript(platformId)).toHaveLength(platformBefore);
    expect(sandbox.crm.messaging.routedQueue(platformId)).toBeUndefined();
    expect(sandbox.crm.messaging.messagingSession(platformId).Status).not.toBe('Ended');

    // The playbook ends it: the platform ends the session, the end is published once, with who it was.
    const ending = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/end`);
    expect(ending.status).toBe(202);
    expect(sandbox.crm.messaging.messagingSession(platformId).Status).toBe('Ended');
    await sandbox.until('the end published', () => sandbox.events('conversation.ended').length === 1);
    expect(sandbox.events('conversation.ended')[0]!.data).toMatchObject({
      conversationId: id,
      endUserEmail: 'visitor@example.com',
      channel: 'messaging',
      handedOff: false,
    });
    expect((await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'still there?' })).status).toBe(409);
  });

  it('transcript storage Disabled: nothing assembled, nothing written to the session, the choice stated', async () => {
    const [conversation] = (await store.listConversations(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId)).conversations;
    const id = conversation!.conversationId;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('the lifecycle to finish', () => sandbox.gateway.runtime.local.stateMachines.list('lifecycle').every((e) => e.status === 'succeeded'));
    expect(sandbox.events('transcript.stored')).toHaveLength(0);
    expect(sandbox.crm.messaging.messagingSession(platformId).Transcript__c ?? '').toBe('');
    const transcript = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/transcript`);
    expect(transcript.status).toBe(200);
    expect(transcript.body).toMatchObject({ stored: false, outcome: { state: 'disabled' } });
    expect(transcript.body.text).toBeUndefined();
    // The messages themselves stay readable.
    expect((transcript.body.entries as unknown[]).length).toBeGreaterThan(3);
  });

  it('a send that meets 401 ends the conversation as expired and tells the playbook to restart it', async () => {
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('the first long-poll', () => sandbox.crm.messaging.isPolling(platformId));
    sandbox.crm.messaging.expireSessionToken(platformId);
    const platformBefore = sandbox.crm.messaging.transcript(platformId).length;

    const send = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'are you there?' });
    expect(send.status).toBe(409);
    expect(send.body.remedy).toMatch(/restart the conversation/);
    expect(sandbox.crm.messaging.transcript(platformId)).toHaveLength(platformBefore);
    await sandbox.until('expired', () => sandbox.events('conversation.expired').some((e) => (e.data.conversation as { id: string }).id === id));
    const ended = sandbox.events('conversation.ended').filter((e) => (e.data.conversation as { id: string }).id === id);
    expect(ended).toHaveLength(1);
    expect(ended[0]!.data).toMatchObject({ reason: 'session_expired' });
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });

  it('keeps each conversation’s session token sealed: not in the table in plain, not in any log line', async () => {
    const ids = (await store.listConversations(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId)).conversations.map((c) => c.conversationId);
    const tokens = await Promise.all(ids.map(async (id) => sandbox.crm.messaging.sessionTokenOf(await platformIdOf(sandbox, id))));
    expect(tokens.length).toBeGreaterThan(0);
    const table = await tableText(sandbox.gateway.runtime.local.dynamo);
    expect(table).toContain('CONVERSATION#'); // the scan did see the conversations
    const logs = logLines.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const token of tokens) {
      expect(token).toBeTruthy();
      for (const shape of [token!, token!.split('.')[2]!, Buffer.from(token!).toString('base64')]) {
        expect(table).not.toContain(shape);
        expect(logs).not.toContain(shape);
      }
    }
  });
});

describe('a new conversation and the running fleet', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    // Listings every 10 minutes: a conversation started while a run is going can only reach it by a notice.
    sandbox = await startMessagingSandbox({ env: { POLLER_SWEEP_SECONDS: '600' } });
  });
  afterAll(() => sandbox?.stop());

  it('is told to the running poller, which claims it and opens its first poll without waiting for a listing', async () => {
    const start = async () => {
      const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
      expect(started.status).toBe(201);
      const platformId = await platformIdOf(sandbox, started.body.id as string);
      await sandbox.until('its first poll', () => sandbox.crm.messaging.isPolling(platformId));
      return platformId;
    };
    await start();
    const machines = sandbox.gateway.runtime.local.stateMachines;
    const running = machines.pollers();
    expect(running.length).toBeGreaterThan(0);
    const onNotice = () => [...machines.finishedPollers, ...machines.pollers().map((run) => run.stats)].reduce((sum, stats) => sum + stats.claimedOnNotice, 0);
    const before = onNotice();

    const second = await start();
    // The run that held the first conversation is still going, and it took the second on the notice.
    expect(running.some((run) => machines.pollers().includes(run))).toBe(true);
    expect(onNotice()).toBe(before + 1);
    sandbox.crm.messaging.agentSays(second, 'hello second');
    await sandbox.until('delivered', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'hello second'));
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});
