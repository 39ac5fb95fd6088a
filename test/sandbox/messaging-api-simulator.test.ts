import { randomUUID } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';

/** The Messaging API simulator on the wire: what a client of the documented API sees. */

const ORG = '00D000000000007';
const DEPLOYMENT = 'Sim_Deployment';

describe('the Messaging API simulator', () => {
  let crm: RunningCrmSimulator;
  let now = Date.now();
  beforeAll(async () => {
    crm = await startCrmSimulator({ now: () => now, messagingApiTokenLifetimeMs: 60_000 });
    crm.messagingApi.registerDeployment(ORG, DEPLOYMENT);
  });
  afterAll(() => crm?.stop());

  const call = (method: string, path: string, token?: string, body?: unknown) =>
    fetch(`${crm.url}${path}`, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });

  /** Reads a stream until `count` events arrived, then closes it. */
  async function events(token: string, count: number, lastEventId?: string): Promise<EventSourceMessage[]> {
    const controller = new AbortController();
    const response = await fetch(`${crm.url}/eventrouter/v1/sse`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'x-org-id': ORG, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) }, signal: controller.signal });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const seen: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => seen.push(event) });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    while (seen.length < count) parser.feed((await reader.read()).value ?? '');
    controller.abort();
    return seen;
  }

  it('issues a token, creates a conversation under a lowercase UUID, streams its events with ids and replays after Last-Event-Id', async () => {
    const tokenAnswer = (await (await call('POST', '/iamessage/api/v2/authorization/unauthenticated/access-token', undefined, { orgId: ORG, esDeveloperName: DEPLOYMENT, capabilitiesVersion: '1', platform: 'Web' })).json()) as { accessToken: string; lastEventId: string };
    const token = tokenAnswer.accessToken;
    expect(token.split('.')).toHaveLength(3);
    expect((await call('POST', '/iamessage/api/v2/conversation', token, { conversationId: 'NOT-A-UUID', esDeveloperName: DEPLOYMENT })).status).toBe(400);
    const id = randomUUID();
    expect((await call('POST', '/iamessage/api/v2/conversation', token, { conversationId: id, esDeveloperName: DEPLOYMENT, routingAttributes: { Email: 'a@example.com' } })).ok).toBe(true);
    crm.messagingApi.agentJoins(id, 'Ann');
    crm.messagingApi.agentWrites(id, 'Hi there', 'Ann');

    const all = await events(token, 3, tokenAnswer.lastEventId);
    expect(all.map((event) => event.event)).toEqual(['CONVERSATION_ROUTING_RESULT', 'CONVERSATION_PARTICIPANT_CHANGED', 'CONVERSATION_MESSAGE']);
    const message = JSON.parse(all[2]!.data) as { conversationId: string; conversationEntry: { senderDisplayName: string; sender: { role: string }; entryPayload: string } };
    expect(message.conversationId).toBe(id);
    expect(message.conversationEntry).toMatchObject({ senderDisplayName: 'Ann', sender: { role: 'Agent' } });
    expect(typeof message.conversationEntry.entryPayload).toBe('string');
    expect(JSON.parse(message.conversationEntry.entryPayload)).toMatchObject({ entryType: 'Message', abstractMessage: { staticContent: { formatType: 'Text', text: 'Hi there' } } });

    // Resumed after the second event: only the third again.
    const resumed = await events(token, 1, all[1]!.id);
    expect(resumed.map((event) => event.id)).toEqual([all[2]!.id]);

    const entries = (await (await call('GET', `/iamessage/api/v2/conversation/${id}/entries`, token)).json()) as { conversationEntries: unknown[] };
    expect(entries.conversationEntries).toHaveLength(3);
  });

  it('refuses an expired token with 401, and renews a live one for the same end user', async () => {
    const { accessToken } = (await (await call('POST', '/iamessage/api/v2/authorization/unauthenticated/access-token', undefined, { orgId: ORG, esDeveloperName: DEPLOYMENT })).json()) as { accessToken: string };
    const renewed = await call('GET', '/iamessage/api/v2/authorization/continuation-access-token', accessToken);
    expect(renewed.status).toBe(200);
    now += 61_000;
    const stream = await fetch(`${crm.url}/eventrouter/v1/sse`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${accessToken}`, 'x-org-id': ORG } });
    expect(stream.status).toBe(401);
    expect((await call('GET', '/iamessage/api/v2/authorization/continuation-access-token', accessToken)).status).toBe(401);
    expect((await call('POST', '/iamessage/api/v2/authorization/unauthenticated/access-token', undefined, { orgId: '00D999999999999', esDeveloperName: DEPLOYMENT })).status).toBe(400);
  });
});
