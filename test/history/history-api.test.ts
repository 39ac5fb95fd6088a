import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, publishConversationEvents } from '../../shared/messaging/conversation-events';
import type { Conversation } from '../../shared/store/items';
import { watchCommands } from '../../local/local-dynamo';
import { generatedKey } from '../support/local-runtime';
import { basicHeader, startWebhookWorld, type WebhookWorld } from '../webhooks/support';
import * as store from '../../shared/store/store';

/**
 * The history the dashboard shows, end to end: the local gateway's functions write it as they work
 * (sync jobs against the payment simulator, the webhook receivers and worker, conversation events),
 * and the API reads it back, paged and validated. Everything through dynalite and real HTTP.
 */
let world: WebhookWorld;
let token: string;
let signingSecret: string;
const stripe = new Stripe(generatedKey('sk_test_'));

beforeAll(async () => {
  world = await startWebhookWorld();
  world.payment.seedCustomers(30);
  signingSecret = (await world.connectPayment('acme', { method: 'both', dataObjects: ['customers', 'charges'] }))!;
  token = await world.gateway.userToken('acme');
});
afterAll(() => world?.stop());

const get = async (path: string, as = token) => {
  const response = await world.gateway.call('GET', `/api/v1/accounts/acme${path}`, { token: as });
  return { status: response.status, type: response.headers.get('content-type'), body: (await response.json()) as Record<string, any> };
};
const syncNow = async () => {
  expect((await world.gateway.call('POST', '/api/v1/accounts/acme/connections/payment/syncs', { token, body: {} })).status).toBe(202);
  await world.gateway.runtime.local.queues.syncJobs.idle();
};

describe('sync history', () => {
  it('records every run of every object with its requests and counts, newest first, paged', async () => {
    const watch = watchCommands(world.gateway.runtime.local.dynamo.client);
    await syncNow();
    await syncNow();
    // One history write per run (two objects, two syncs; each run one invocation), however many records.
    expect(watch.itemsWritten((key) => key.pk.includes('#HISTORY#'))).toBe(4);
    const all = await get('/connections/payment/syncs/history');
    expect(all.status).toBe(200);
    expect(all.body.runs).toHaveLength(4);
    const [newest] = all.body.runs;
    expect(all.body.runs.map((run: { startedAt: string }) => run.startedAt)).toEqual([...all.body.runs.map((run: { startedAt: string }) => run.startedAt)].sort().reverse());
    const firstCustomers = all.body.runs.filter((run: { object: string }) => run.object === 'customers').at(-1);
    expect(firstCustomers).toMatchObject({ status: 'finished', mode: 'full', trigger: 'manual', created: 30, failures: 0 });
    expect(firstCustomers.requests).toBeGreaterThan(0);
    expect(firstCustomers.pages).toBeGreaterThan(0);
    expect(firstCustomers.durationMs).toBeGreaterThanOrEqual(0);
    expect(newest.status).toBe('finished');

    const first = await get('/connections/payment/syncs/history?limit=3');
    expect(first.body.runs).toEqual(all.body.runs.slice(0, 3));
    const second = await get(`/connections/payment/syncs/history?limit=3&cursor=${first.body.nextCursor}`);
    expect(second.body.runs).toEqual(all.body.runs.slice(3));
    expect(second.body.nextCursor).toBeUndefined();
    const customers = await get('/connections/payment/syncs/history?object=customers');
    expect(customers.body.runs.map((run: { object: string }) => run.object)).toEqual(['customers', 'customers']);
  });

  it('a failed run keeps its reason and remedy', async () => {
    world.payment.removeApiKey(world.paymentKey);
    await syncNow();
    world.payment.addApiKey(world.paymentKey, { access: 'read' });
    const { body } = await get('/connections/payment/syncs/history?limit=2');
    expect(body.runs).toHaveLength(2);
    for (const run of body.runs) expect(run).toMatchObject({ status: 'failed', failures: 1, error: { reason: expect.any(String), remedy: expect.any(String) } });
    expect(JSON.stringify(body)).not.toContain(world.paymentKey);
  });

  it('bad input is a problem, and another account’s history is not reachable', async () => {
    for (const query of ['cursor=not!a*cursor', 'limit=0', 'limit=500', 'object=Bad-Name', 'object=spaceships']) {
      const answer = await get(`/connections/payment/syncs/history?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.type).toBe('application/problem+json');
    }
    // A well-formed name the connector does not sync is named as such, with the names it does.
    expect(JSON.stringify((await get('/connections/payment/syncs/history?object=spaceships')).body)).toContain('not a data object of the payment connector: one of customers');
    expect((await get('/connections/data/syncs/history')).status).toBe(404);
    await world.gateway.enableAccount('globex');
    expect((await get('/connections/payment/syncs/history', await world.gateway.userToken('globex'))).status).toBe(404);
  });
});

describe('webhook deliveries', () => {
  const post = (connector: 'payments' | 'billing', accountId: string, body: string, headers: Record<string, string>) =>
    fetch(`${world.gateway.url}/webhooks/${connector}?account=${accountId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const signed = (body: string, secret = signingSecret, timestamp = Math.floor(Date.now() / 1000)) => ({
    'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp }),
  });

  it('counts verified, duplicate and refused deliveries per hour, by reason, without payloads or secrets', async () => {
    const watch = watchCommands(world.gateway.runtime.local.dynamo.client);
    const { events } = world.payment.createCustomer({ email: 'hours@example.com' });
    const body = JSON.stringify(events[0]);
    expect((await post('payments', 'acme', body, signed(body))).status).toBe(200);
    expect((await post('payments', 'acme', body, signed(body))).status).toBe(200);
    await world.settle();
    expect((await post('payments', 'acme', body, signed(body, generatedKey('whsec_')))).status).toBe(400);
    expect((await post('payments', 'acme', body, signed(body, signingSecret, Math.floor(Date.now() / 1000) - 3600))).status).toBe(400);
    expect((await post('payments', 'nobody', body, signed(body))).status).toBe(404);
    // One counter write per delivery: two verified (one a duplicate), three refused (one under the account it names).
    expect(watch.itemsWritten((key) => key.pk.includes('#HISTORY#'))).toBe(5);

    const { status, body: deliveries } = await get('/connections/payment/webhooks/deliveries');
    expect(status).toBe(200);
    expect(deliveries.hours).toHaveLength(7 * 24);
    const sum = (pick: (hour: any) => number) => deliveries.hours.reduce((total: number, hour: any) => total + pick(hour), 0);
    expect(sum((hour) => hour.verified)).toBe(2);
    expect(sum((hour) => hour.duplicates)).toBe(1);
    expect(sum((hour) => hour.refused.signature)).toBe(1);
    expect(sum((hour) => hour.refused.timestamp)).toBe(1);
    expect(sum((hour) => hour.refused.unknown_account)).toBe(0);
    expect(deliveries.lastRefused.map((refusal: { reason: string }) => refusal.reason).sort()).toEqual(['signature', 'timestamp']);
    const text = JSON.stringify(deliveries);
    expect(text).not.toContain(signingSecret);
    expect(text).not.toContain('hours@example.com');
  });

  it('billing: wrong Basic credentials count as credentials', async () => {
    const credentials = (await world.connectBilling('acme'))!;
    const { events } = world.site.createCustomer({ email: 'basic@example.com' });
    const body = JSON.stringify(events[0]);
    expect((await post('billing', 'acme', body, { authorization: basicHeader(credentials.username, generatedKey('pw')) })).status).toBe(401);
    expect((await post('billing', 'acme', body, { authorization: basicHeader(credentials.username, credentials.password) })).status).toBe(200);
    await world.settle();
    const { body: deliveries } = await get('/connections/billing/webhooks/deliveries');
    const last = deliveries.hours.at(-1);
    expect(last).toMatchObject({ verified: 1, duplicates: 0, refused: { credentials: 1, signature: 0 } });
    expect(deliveries.lastRefused).toEqual([{ at: expect.any(String), reason: 'credentials', count: 1 }]);
    expect((await get('/connections/data/webhooks/deliveries')).status).toBe(404);
  });
});

describe('conversation stats', () => {
  it('counts lifecycle events per day, the live count, and the median time to the first agent message', async () => {
    const table = world.gateway.runtime.local.gateway.table;
    const gateway = world.gateway.runtime.local.gateway;
    const now = Date.now();
    const startedAt = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
    const conversation = (id: string, secondsAgo: number): Conversation => ({ accountId: 'acme', conversationId: id, state: 'active', startedAt: startedAt(secondsAgo), updatedAt: startedAt(0), version: 1 });
    // Three conversations whose first agent message came 20 s, 40 s and 100 s after the start.
    for (const [id, firstAgentAfter] of [['c1', 20], ['c2', 40], ['c3', 100]] as const) {
      const c = conversation(id, 200);
      await publishConversationEvents(gateway, [conversationEvent('conversation.started', c, { startedAt: c.startedAt }, { occurredAt: c.startedAt })]);
      await store.appendMessage(table, 'acme', id, 0, { direction: 'inbound', type: 'system', sender: 'system', details: { systemEvent: 'agent_joined' }, sentAt: startedAt(200 - firstAgentAfter + 1) });
      await store.appendMessage(table, 'acme', id, 1, { direction: 'inbound', type: 'text', text: 'Hello', sender: 'agent', sentAt: startedAt(200 - firstAgentAfter) });
    }
    const ended = (id: string, reason: string) =>
      conversationEvent('conversation.ended', conversation(id, 200), { conversationId: id, channel: 'messaging', reason, startedAt: startedAt(200), endedAt: startedAt(0), durationSeconds: 200, handedOff: false }, { occurredAt: startedAt(0) });
    await publishConversationEvents(gateway, [conversationEvent('conversation.handed_off', conversation('c1', 200), { queue: 'Support' }, { occurredAt: startedAt(10) })]);
    await publishConversationEvents(gateway, [ended('c1', 'agent'), ended('c2', 'end_user')]);
    await publishConversationEvents(gateway, [conversationEvent('conversation.expired', conversation('c3', 200), { remedy: 'restart' }, { occurredAt: startedAt(0) }), ended('c3', 'session_expired')]);
    await store.reserveLiveSlot(table, 'acme', 10);

    const { status, body } = await get('/conversations/stats?days=7');
    expect(status).toBe(200);
    expect(body.days).toHaveLength(7);
    const total = (field: string) => body.days.reduce((sum: number, day: Record<string, number>) => sum + day[field]!, 0);
    expect({ started: total('started'), handedOff: total('handedOff'), ended: total('ended'), expired: total('expired'), firstAgentMessages: total('firstAgentMessages') }).toEqual({
      started: 3,
      handedOff: 1,
      ended: 2,
      expired: 1,
      firstAgentMessages: 3,
    });
    expect(body.live).toBe(1);
    // The middle one (40 s) falls in the 30-45 s bucket.
    expect(body.medianFirstAgentMessageSeconds).toBeGreaterThanOrEqual(30);
    expect(body.medianFirstAgentMessageSeconds).toBeLessThanOrEqual(45);
    expect((await get('/conversations/stats?days=31')).status).toBe(400);
  });
});
