import { createHmac } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as webhookReceiver } from '../../functions/webhook-receiver';
import { setLogSink } from '../../shared/log/logger';
import { generatedKey, startTestGateway } from '../support/local-runtime';
import { outsideHistory, startWebhookWorld, webhookTraces, type WebhookWorld } from './support';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * POST /webhooks/payments end to end: real HTTP into the local gateway, the receiver, the
 * in-process queue, the event worker and dynalite. Signatures come from the payment platform's
 * own SDK and from the simulator, which signs, retries and duplicates as the platform does.
 */
let world: WebhookWorld;
let acmeSecret: string;
let globexSecret: string;
const logLines: string[] = [];
let restoreSink: ReturnType<typeof setLogSink>;
const stripe = new Stripe(generatedKey('sk_test_'));
const nowSeconds = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  restoreSink = setLogSink((line) => logLines.push(line));
  world = await startWebhookWorld();
  acmeSecret = (await world.connectPayment('acme'))!;
  globexSecret = (await world.connectPayment('globex'))!;
  await world.connectPayment('initech', { signingSecret: null });
});
afterAll(async () => {
  setLogSink(restoreSink);
  await world.stop();
});

function post(accountId: string | undefined, body: string, headers: Record<string, string>): Promise<Response> {
  const query = accountId === undefined ? '' : `?account=${accountId}`;
  return fetch(`${world.gateway.url}/webhooks/payments${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

const signed = (secret: string, body: string, timestamp = nowSeconds()) => ({
  'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp }),
});

describe('accepted deliveries', () => {
  it("accepts an event signed by the platform's SDK, answers 200 at once, and applies it", async () => {
    const { record: customer, events } = world.payment.createCustomer({ email: 'sdk@example.com', name: 'Sam Dee' });
    const body = JSON.stringify(events[0]);
    const response = await post('acme', body, signed(acmeSecret, body));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true, eventId: events[0]!.id });
    await world.settle();

    const stored = await store.getRecord(world.gateway.runtime.local.gateway.table, recordsAt('acme', 'payment', 'customers'), customer.id);
    expect(stored?.body).toMatchObject({ id: customer.id, email: 'sdk@example.com', name: 'Sam Dee' });
    const event = world.published.find((e) => e.data.platformEventId === events[0]!.id);
    expect(event).toMatchObject({ type: 'customer.created', accountId: 'acme', source: 'payment', data: { customer: { id: customer.id, email: 'sdk@example.com' } } });
  });

  it('takes retries and duplicates from the simulator: one application, one published event', async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'retry@example.com' });
    const { events } = world.payment.createSubscription(customer.id);
    // The first attempt finds the queue down (503); the platform retries, then sends two duplicates.
    const queue = world.gateway.runtime.local.queues.webhookEvents;
    const send = queue.send;
    let failures = 1;
    queue.send = async (messages) => {
      if (failures-- > 0) throw new Error('queue unavailable');
      return send(messages);
    };
    const statuses = await world.payment.deliverWebhook({ url: world.paymentUrl('acme'), event: events[0]!, secret: acmeSecret, duplicates: 2, retryDelayMs: 1 });
    queue.send = send;
    expect(statuses).toEqual([503, 200, 200, 200]);
    await world.settle();

    expect(world.enqueued.filter((m) => m.eventId === events[0]!.id)).toHaveLength(3);
    expect(world.published.filter((e) => e.data.platformEventId === events[0]!.id)).toHaveLength(1);
    const mark = await store.getWebhookEventMark(world.gateway.runtime.local.gateway.table, 'acme', 'payment', events[0]!.id);
    expect(mark).toMatchObject({ state: 'applied', attempts: 1 });
    expect(logLines.filter((line) => line.includes(events[0]!.id) && line.includes('already handled'))).toHaveLength(2);
  });

  it('accepts a delivery signed with a rolled secret (any v1 matches) and ignores v0', async () => {
    const { events } = world.payment.createCustomer({ email: 'roll@example.com' });
    // The platform signs with the old and the new secret while one is rolled; the connection holds either.
    const statuses = await world.payment.deliverWebhook({ url: world.paymentUrl('acme'), event: events[0]!, secret: generatedKey('whsec_'), extraSignatures: [acmeSecret], retries: 0 });
    expect(statuses).toEqual([200]);
    const onlyV0 = JSON.stringify(events[0]);
    const v0 = `t=${nowSeconds()},v0=${createHmac('sha256', acmeSecret).update(`${nowSeconds()}.${onlyV0}`).digest('hex')}`;
    expect((await post('acme', onlyV0, { 'stripe-signature': v0 })).status).toBe(400);
  });

  it('verifies the exact bytes API Gateway hands over base64-encoded', async () => {
    const { events } = world.payment.createCustomer({ email: 'b64@example.com', name: 'Zoë Ünal' });
    const raw = Buffer.from(JSON.stringify(events[0], null, 2), 'utf8');
    // Handed to the function as API Gateway would, with the origin header the distribution adds.
    const origin = world.gateway.runtime.origin;
    const headers = { 'content-type': 'application/json', [origin.name]: origin.value, ...signed(acmeSecret, raw.toString('utf8')) };
    const event = (body: string, isBase64Encoded: boolean): APIGatewayProxyEventV2 =>
      ({
        version: '2.0',
        routeKey: 'POST /webhooks/payments',
        rawPath: '/webhooks/payments',
        rawQueryString: 'account=acme',
        queryStringParameters: { account: 'acme' },
        headers,
        requestContext: { http: { method: 'POST', path: '/webhooks/payments' }, requestId: 'b64-test' },
        body,
        isBase64Encoded,
      }) as unknown as APIGatewayProxyEventV2;
    const accepted = await webhookReceiver(event(raw.toString('base64'), true));
    expect(accepted).toMatchObject({ statusCode: 200 });
    // The same base64 text taken as the body itself is not what was signed.
    const refused = await webhookReceiver(event(raw.toString('base64'), false));
    expect(refused).toMatchObject({ statusCode: 400 });
    // The one receiver picks the platform by the path: one no platform sends to is not found, and nothing is enqueued.
    const enqueuedBefore = world.enqueued.length;
    const nowhere = { ...event(raw.toString('base64'), true), rawPath: '/webhooks/nowhere', routeKey: 'POST /webhooks/nowhere' } as APIGatewayProxyEventV2;
    expect(await webhookReceiver(nowhere)).toMatchObject({ statusCode: 404, headers: { 'content-type': 'application/problem+json' } });
    expect(world.enqueued.length).toBe(enqueuedBefore);
  });
});

describe('refused deliveries: a 4xx problem naming no secret, nothing stored, nothing enqueued', () => {
  const event = () => world.payment.createCustomer({ email: 'refused@example.com' }).events[0]!;

  const cases: Array<[string, number, () => Promise<Response>]> = [
    ['no signature header', 400, async () => post('acme', JSON.stringify(event()), {})],
    ['a malformed signature header', 400, async () => post('acme', JSON.stringify(event()), { 'stripe-signature': `t=${nowSeconds()},v0=abc` })],
    ['another secret', 400, async () => { const body = JSON.stringify(event()); return post('acme', body, signed(generatedKey('whsec_'), body)); }],
    ["another account's secret", 400, async () => { const body = JSON.stringify(event()); return post('acme', body, signed(globexSecret, body)); }],
    ['an old timestamp', 400, async () => { const body = JSON.stringify(event()); return post('acme', body, signed(acmeSecret, body, nowSeconds() - 301)); }],
    ['a body changed by one byte', 400, async () => { const body = JSON.stringify(event()); return post('acme', body.replace('"customer"', '"custOmer"'), signed(acmeSecret, body)); }],
    ['invalid JSON, signed', 400, async () => { const body = '{"id": "evt_1", '; return post('acme', body, signed(acmeSecret, body)); }],
    ['JSON that is not an event, signed', 400, async () => { const body = JSON.stringify({ hello: 'world' }); return post('acme', body, signed(acmeSecret, body)); }],
    ['a body over 1 MB', 413, async () => { const body = JSON.stringify({ ...event(), padding: 'x'.repeat(1024 * 1024) }); return post('acme', body, signed(acmeSecret, body)); }],
    ['a content type other than JSON', 415, async () => { const body = JSON.stringify(event()); return post('acme', body, { ...signed(acmeSecret, body), 'content-type': 'text/plain' }); }],
    ['an unknown account', 404, async () => { const body = JSON.stringify(event()); return post('nobody', body, signed(acmeSecret, body)); }],
    ['an account id that cannot exist', 404, async () => { const body = JSON.stringify(event()); return post('ACME%23x', body, signed(acmeSecret, body)); }],
    ['no account in the address', 400, async () => { const body = JSON.stringify(event()); return post(undefined, body, signed(acmeSecret, body)); }],
    ['a connection without a signing secret', 400, async () => { const body = JSON.stringify(event()); return post('initech', body, signed(acmeSecret, body)); }],
  ];

  it.each(cases)('refuses %s', async (_name, status, send) => {
    await world.settle();
    const before = { enqueued: world.enqueued.length, traces: (await world.tableItems()).filter((item) => String(item.pk).startsWith('ACCOUNT#') && outsideHistory(item)) };
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const text = await response.text();
    const problem = JSON.parse(text) as { type: string; title: string; status: number };
    expect(problem.status).toBe(status);
    for (const secret of [acmeSecret, globexSecret]) expect(text).not.toContain(secret.slice(6));
    expect(text).not.toMatch(/whsec_[A-Za-z0-9]|v1=|t=\d/);
    await world.settle();
    expect(world.enqueued.length).toBe(before.enqueued);
    const after = (await world.tableItems()).filter((item) => String(item.pk).startsWith('ACCOUNT#') && outsideHistory(item));
    expect(webhookTraces(after, 'acme')).toEqual(webhookTraces(before.traces, 'acme'));
    expect(after.length).toBe(before.traces.length);
  });

  it('tells a connection without a signing secret what to do', async () => {
    const body = JSON.stringify(event());
    const problem = (await (await post('initech', body, signed(acmeSecret, body))).json()) as { remedy: string };
    expect(problem.remedy).toContain('Add the Webhook Signing Secret to the payment connection');
  });
});

describe('accounts are kept apart', () => {
  it("applies a globex event to globex only, and acme's secret never verifies it", async () => {
    const { record: customer, events } = world.payment.createCustomer({ email: 'globex-only@example.com' });
    const body = JSON.stringify(events[0]);
    expect((await post('acme', body, signed(globexSecret, body))).status).toBe(400);
    expect((await post('globex', body, signed(acmeSecret, body))).status).toBe(400);
    expect((await post('globex', body, signed(globexSecret, body))).status).toBe(200);
    await world.settle();
    const table = world.gateway.runtime.local.gateway.table;
    expect(await store.getRecord(table, recordsAt('globex', 'payment', 'customers'), customer.id)).toBeDefined();
    expect(await store.getRecord(table, recordsAt('acme', 'payment', 'customers'), customer.id)).toBeUndefined();
    expect(world.published.filter((e) => e.data.platformEventId === events[0]!.id).map((e) => e.accountId)).toEqual(['globex']);
  });

  it('never logs a signing secret', () => {
    const text = logLines.join('\n');
    expect(text).toContain('webhook event applied');
    expect(text).toContain('request refused');
    for (const secret of [acmeSecret, globexSecret]) expect(text).not.toContain(secret);
  });
});

describe('the timestamp tolerance', () => {
  it('follows WEBHOOK_TOLERANCE_SECONDS', async () => {
    const gateway = await startTestGateway({ WEBHOOK_TOLERANCE_SECONDS: '30' });
    try {
      await gateway.enableAccount('acme');
      const secret = generatedKey('whsec_');
      const token = await gateway.userToken('acme');
      await gateway.call('PUT', '/api/v1/accounts/acme/connections/payment', { token, body: { secretKey: generatedKey('rk_test_'), webhookSigningSecret: secret } });
      const body = JSON.stringify({ id: 'evt_tolerance', object: 'event', type: 'customer.created', created: nowSeconds(), data: { object: { id: 'cus_t', object: 'customer' } } });
      const at = (age: number) =>
        fetch(`${gateway.url}/webhooks/payments?account=acme`, { method: 'POST', headers: { 'content-type': 'application/json', ...signed(secret, body, nowSeconds() - age) }, body });
      expect((await at(60)).status).toBe(400);
      expect((await at(10)).status).toBe(200);
    } finally {
      await gateway.stop();
    }
  });
});
