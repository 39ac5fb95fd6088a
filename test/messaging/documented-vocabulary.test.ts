import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import { platformIdOf, startMessagingSandbox, type MessagingSandbox } from './support';

/**
 * End to end against the simulator speaking the documented chat vocabulary (ChatRequestSuccess,
 * ChatEstablished, ChatMessage, AgentTyping, ChatTransferred, ChatEnded, ChatRequestFail): several
 * conversations side by side, several agent messages each, a playbook reply after each one and a
 * transfer half way. Every agent text must be read back once, in order, as text; the joins and
 * the transfer recognised; every MessagingSession.Transcript__c must hold every agent text and
 * playbook reply in chronological order.
 */
// The issue's own scale (19 conversations, 95 agent messages) runs with VOCABULARY_CONVERSATIONS=19 VOCABULARY_MESSAGES=5.
const CONVERSATIONS = Number(process.env.VOCABULARY_CONVERSATIONS ?? 5);
const AGENT_MESSAGES = Number(process.env.VOCABULARY_MESSAGES ?? 4);
const TRANSFER_AFTER = Math.ceil(AGENT_MESSAGES / 2);

const conversationOf = (event: GatewayEvent) => (event.data.conversation as { id: string }).id;
const textOf = (event: GatewayEvent) => (event.data.message as { type: string; text?: string });

describe('the documented chat vocabulary, end to end', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    // The simulator notices a closed poll at once, so a short handover grace is safe here.
    sandbox = await startMessagingSandbox({ env: { POLLER_HANDOVER_SECONDS: '0.2' } });
  });
  afterAll(() => sandbox?.stop());

  it('reads every agent text once, in order, recognises joins and transfers, and transcribes both sides in order', async () => {
    const { crm } = sandbox;
    const started = await Promise.all(Array.from({ length: CONVERSATIONS }, () => sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })));
    const ids = started.map((answer) => {
      expect(answer.status).toBe(201);
      return answer.body.id as string;
    });
    const expected = new Map<string, { agent: string[]; bot: string[]; order: string[] }>();

    await Promise.all(
      ids.map(async (id, c) => {
        const platformId = await platformIdOf(sandbox, id);
        await sandbox.until(`first poll of ${c}`, () => crm.messaging.isPolling(platformId), 30_000);
        // ChatRequestSuccess: queued with the documented position and wait.
        await sandbox.until(`queued ${c}`, () => sandbox.events('conversation.queued').some((e) => conversationOf(e) === id));
        const queued = sandbox.events('conversation.queued').find((e) => conversationOf(e) === id)!;
        expect(queued.data).toMatchObject({ position: expect.any(Number), estimatedWaitSeconds: expect.any(Number) });

        crm.messaging.agentJoins(platformId, `Agent ${c}`);
        await sandbox.until(`joined ${c}`, () => sandbox.events('agent.joined').some((e) => conversationOf(e) === id));
        expect((await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}`)).body).toMatchObject({ state: 'active', agentName: `Agent ${c}` });

        const mine = { agent: [] as string[], bot: [] as string[], order: [] as string[] };
        expected.set(id, mine);
        for (let k = 1; k <= AGENT_MESSAGES; k++) {
          if (k === TRANSFER_AFTER + 1) {
            crm.messaging.transfer(platformId, `Transferred ${c}`);
            await sandbox.until(`transfer ${c}`, () => sandbox.events('agent.joined').filter((e) => conversationOf(e) === id).length === 2);
            expect((await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}`)).body).toMatchObject({ state: 'active', agentName: `Transferred ${c}` });
          }
          const agentText = `c${c} agent says ${k}: it's "quoted" \\ and ünïcode`;
          crm.messaging.agentTyping(platformId, true);
          crm.messaging.agentSays(platformId, agentText);
          crm.messaging.agentTyping(platformId, false);
          mine.agent.push(agentText);
          mine.order.push(agentText);
          await sandbox.until(`agent text ${c}/${k}`, () => sandbox.events('message.received').some((e) => conversationOf(e) === id && textOf(e).text === agentText));
          const botText = `c${c} playbook replies ${k}`;
          expect((await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: botText })).status).toBe(201);
          mine.bot.push(botText);
          mine.order.push(botText);
        }
        crm.messaging.endConversation(platformId, 'agent');
      }),
    );
    await sandbox.until('every transcript', () => sandbox.events('transcript.stored').length === CONVERSATIONS, 60_000);

    let readBack = 0;
    let published = 0;
    let complete = 0;
    for (const id of ids) {
      const mine = expected.get(id)!;
      // Read back through the playbook API: the agent's words, as text, once each, in order.
      const read = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/messages`);
      const messages = read.body.messages as Array<{ direction: string; type: string; text?: string; senderName?: string }>;
      const inbound = messages.filter((m) => m.direction === 'inbound' && m.type === 'text');
      expect(inbound.map((m) => m.text)).toEqual(mine.agent);
      expect(inbound.map((m) => m.senderName)).toEqual(mine.agent.map((_, k) => (k < TRANSFER_AFTER ? `Agent ${ids.indexOf(id)}` : `Transferred ${ids.indexOf(id)}`)));
      readBack += inbound.filter((m, k) => m.text === mine.agent[k]).length;
      // No typing indicator became a message.
      expect(messages.filter((m) => m.type === 'system').map((m) => m.text)).not.toContain('AgentTyping');
      const events = sandbox.events('message.received').filter((e) => conversationOf(e) === id && textOf(e).type === 'text');
      expect(events.map((e) => textOf(e).text)).toEqual(mine.agent);
      published += events.length;

      const platformId = await platformIdOf(sandbox, id);
      const field = crm.messaging.messagingSession(platformId).Transcript__c ?? '';
      let last = -1;
      let inOrder = true;
      for (const line of mine.order) {
        const at = field.indexOf(line, last + 1);
        if (at <= last) inOrder = false;
        last = Math.max(last, at);
      }
      expect(inOrder, field).toBe(true);
      expect(field).toMatch(/transfer: Transferred/);
      if (inOrder) complete++;
      expect((await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}`)).body).toMatchObject({ state: 'transcribed' });
    }
    const total = CONVERSATIONS * AGENT_MESSAGES;
    console.info(`documented vocabulary: ${readBack} of ${total} agent messages read back as text (${published} published); ${complete} of ${CONVERSATIONS} transcripts complete and in order`);
    expect(readBack).toBe(total);
    expect(published).toBe(total);
    expect(complete).toBe(CONVERSATIONS);
    expect(sandbox.events('conversation.ended').every((e) => e.data.reason === 'agent')).toBe(true);
  }, 180_000);

  it('ends a start the platform could not serve (ChatRequestFail) with its reason', async () => {
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('first poll', () => sandbox.crm.messaging.isPolling(platformId));
    sandbox.crm.messaging.requestFails(platformId, 'Unavailable');
    await sandbox.until('ended', () => sandbox.events('conversation.ended').some((e) => conversationOf(e) === id));
    const ended = sandbox.events('conversation.ended').find((e) => conversationOf(e) === id)!;
    expect(ended.data).toMatchObject({ reason: 'failed' });
    const read = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/messages`);
    expect(read.body.messages).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'system', systemEvent: 'request_failed', text: 'Unavailable' })]));
  });
});
