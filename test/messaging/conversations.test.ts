import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformIdOf, startMessagingSandbox, type MessagingSandbox } from './support';
import * as store from '../../shared/store/store';

/**
 * A conversation end to end over real HTTP: the playbook API on the local gateway, the messaging
 * simulator, the deployed lifecycle and fleet definitions run by a local States Language
 * interpreter, and the same poller code in process.
 */
describe('a conversation end to end', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startMessagingSandbox({
      settings: {
        prechatMapping: {
          Email: { attribute: 'email', transcriptFields: ['Visitor_Email__c'], displayToAgent: true },
          'First name': { attribute: 'firstName', displayToAgent: false },
        },
      },
    });
  });
  afterAll(() => sandbox?.stop());

  it('starts, delivers in order, hands off, refuses automated replies, ends, and writes a chronological transcript', async () => {
    const { crm } = sandbox;
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', {
      direction: 'inbound',
      contactId: '003000000000001',
      prechat: { email: 'visitor@example.com', firstName: 'Ann' },
    });
    expect(started.status).toBe(201);
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);

    // The pre-chat mapping became the spec's prechatDetails.
    expect(crm.messaging.prechatDetails(platformId)).toEqual([
      { label: 'Email', value: 'visitor@example.com', transcriptFields: ['Visitor_Email__c'], displayToAgent: true },
      { label: 'First name', value: 'Ann', transcriptFields: [], displayToAgent: false },
    ]);
    // The running fleet was told: the first poll opens without waiting for a round.
    await sandbox.until('the first long-poll', () => crm.messaging.isPolling(platformId));
    await sandbox.until('queued', () => sandbox.events('conversation.queued').length === 1);

    crm.messaging.agentJoins(platformId, 'Ann Agent');
    crm.messaging.agentSays(platformId, 'Hello, how can I help?');
    await sandbox.until('agent message', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'Hello, how can I help?'));
    expect(sandbox.events('agent.joined')).toHaveLength(1);
    expect((await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}`)).body).toMatchObject({ state: 'active', agentName: 'Ann Agent' });

    const reply = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'I need my invoice', clientMessageId: 'm1' });
    expect(reply).toMatchObject({ status: 201, body: { status: 'sent', type: 'text' } });
    // A retried send with the same clientMessageId is not sent twice.
    expect((await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'I need my invoice', clientMessageId: 'm1' })).status).toBe(201);
    expect(crm.messaging.transcript(platformId).filter((entry) => entry.role === 'EndUser')).toHaveLength(1);
    expect(sandbox.events('message.sent')).toHaveLength(1);

    const handoff = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/handoff`, { queue: 'Billing' });
    expect(handoff).toMatchObject({ status: 202, body: { handedOff: { queue: 'Billing' } } });
    expect(crm.messaging.routedQueue(platformId)).toBe('Billing');
    expect(sandbox.events('conversation.handed_off')).toHaveLength(1);
    await sandbox.until('queued again', () => sandbox.events('conversation.queued').length === 2);

    // From now on the playbook's automated replies are refused, and nothing reaches the platform.
    const refused = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'Bot here!' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ type: 'urn:integration-gateway:problem:handed-off' });
    expect(refused.body.remedy).toBeTruthy();
    // The end user's own words are still relayed to the human agent.
    expect((await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'Still there?', author: 'end_user' })).status).toBe(201);
    expect(crm.messaging.transcript(platformId).filter((entry) => entry.role === 'EndUser').map((e) => e.message.text)).toEqual(['I need my invoice', 'Still there?']);

    crm.messaging.agentJoins(platformId, 'Bo Human');
    crm.messaging.agentSays(platformId, 'Bo here, sorting it out.');
    await sandbox.until('human reply', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'Bo here, sorting it out.'));
    crm.messaging.endConversation(platformId, 'agent');

    await sandbox.until('transcript', () => sandbox.events('transcript.stored').length === 1);
    const ended = sandbox.events('conversation.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.data).toMatchObject({ reason: 'agent', handedOff: true });

    // Every platform event was delivered once, in sequence order.
    const sequences = sandbox.events('message.received').map((e) => (e.data.message as { sequence: number }).sequence);
    expect(sequences).toEqual([...new Set(sequences)].sort((a, b) => a - b));
    expect(sequences).toHaveLength(crm.messaging.transcript(platformId).filter((entry) => entry.role !== 'EndUser').length);

    // The transcript went to the session field, in chronological order, both sides and system events.
    const field = crm.messaging.messagingSession(platformId).Transcript__c ?? '';
    const order = ['queue update', 'agent joined: Ann Agent', 'Hello, how can I help?', 'I need my invoice', 'queue update', 'Still there?', 'agent joined: Bo Human', 'Bo here', 'ended'];
    const positions = order.map((text) => field.indexOf(text, 0));
    expect(positions.every((p) => p >= 0)).toBe(true);
    let last = -1;
    for (const text of order) {
      const at = field.indexOf(text, last + 1);
      expect(at, text).toBeGreaterThan(last);
      last = at;
    }
    const transcript = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/transcript`);
    expect(transcript.body).toMatchObject({ state: 'transcribed', stored: true, text: field, outcome: { state: 'stored', field: 'Transcript__c' } });
    const dashboard = await sandbox.gateway.call('GET', `/api/v1/accounts/${sandbox.accountId}/conversations/${id}/transcript`, { token: sandbox.userToken });
    expect(((await dashboard.json()) as { text: string }).text).toBe(field);

    // The lifecycle ran the deployed definition to its end; the fleet stopped once nothing was live.
    await sandbox.until('the lifecycle to finish', () => sandbox.gateway.runtime.local.stateMachines.list('lifecycle').every((e) => e.status === 'succeeded'));
    await sandbox.until('the fleet to stop', () => sandbox.gateway.runtime.local.stateMachines.list('fleet').every((e) => e.status !== 'running'));
    // Never two polls on one conversation.
    expect(crm.messaging.pollStats().conflicts).toBe(0);

    const list = await sandbox.gateway.call('GET', `/api/v1/accounts/${sandbox.accountId}/conversations`, { token: sandbox.userToken });
    expect(((await list.json()) as { conversations: Array<{ id: string; state: string }> }).conversations).toEqual([expect.objectContaining({ id, state: 'transcribed' })]);
  });

  it('sends to an ended conversation, unknown ids and bad input are refused with problem+json and nothing sent', async () => {
    const before = sandbox.crm.messaging.conversationIds().length;
    const unknown = await sandbox.playbook('POST', '/api/v1/playbook/conversations/cv_nope/messages', { text: 'hi' });
    expect(unknown.status).toBe(404);
    const [ended] = (await store.listConversations(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId)).conversations;
    const toEnded = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${ended!.conversationId}/messages`, { text: 'hello?' });
    expect(toEnded).toMatchObject({ status: 409, body: { type: 'urn:integration-gateway:problem:conversation-ended' } });
    const oversized = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${ended!.conversationId}/messages`, { text: 'x'.repeat(4001) });
    expect(oversized.status).toBe(400);
    const unmapped = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound', prechat: { shoeSize: '44' } });
    expect(unmapped).toMatchObject({ status: 400, body: { type: 'urn:integration-gateway:problem:prechat-not-mapped' } });
    expect(unmapped.body.remedy).toMatch(/prechatDetails/);
    const malformed = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound', prechat: { email: '' } });
    expect(malformed.status).toBe(400);
    const badContact = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'sideways' });
    expect(badContact.status).toBe(400);
    expect(sandbox.crm.messaging.conversationIds().length).toBe(before);
  });
});
