import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';
import { startWebhookReceiver } from './webhook-receiver';

/** Keys are made at run time; nothing key-shaped is committed. */
const newKey = (prefix: string): string => `${prefix}${randomBytes(12).toString('hex')}`;

interface ListBody {
  object: string;
  data: Array<Record<string, unknown> & { id: string; created: number }>;
  has_more: boolean;
  url: string;
}
interface ErrorBody {
  error: { type: string; code?: string; message: string; param?: string };
}

let sim: PaymentSimulator;
let key: string;

async function get(path: string, auth: string | undefined = key): Promise<Response> {
  return fetch(`${sim.url}${path}`, auth === undefined ? {} : { headers: { authorization: `Bearer ${auth}` } });
}
async function getJson<T>(path: string, auth?: string): Promise<{ status: number; body: T; headers: Headers }> {
  const response = await get(path, auth ?? key);
  return { status: response.status, body: (await response.json()) as T, headers: response.headers };
}
/** Pages through a list with starting_after, as a sync does. */
async function pageAll(path: string, limit: number): Promise<{ ids: string[]; calls: number; records: ListBody['data'] }> {
  const records: ListBody['data'] = [];
  let calls = 0;
  let after: string | undefined;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const { body } = await getJson<ListBody>(`${path}${separator}limit=${limit}${after ? `&starting_after=${after}` : ''}`);
    calls += 1;
    records.push(...body.data);
    if (!body.has_more) break;
    after = body.data.at(-1)?.id;
  }
  return { ids: records.map((r) => r.id), calls, records };
}

beforeEach(async () => {
  sim = await startPaymentSimulator({ seed: 7 });
  key = newKey('sk_test_');
  sim.addApiKey(key);
  sim.setRateLimit(undefined);
});
afterEach(async () => {
  await sim.stop();
});

describe('lists', () => {
  it('pages 250 customers with limit 100 in exactly 3 calls, newest first, no duplicates', async () => {
    sim.seedCustomers(250);
    const { ids, calls, records } = await pageAll('/v1/customers', 100);
    expect(calls).toBe(3);
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
    expect(sim.requests.get('GET /v1/customers')).toBe(3);
    for (let i = 1; i < records.length; i += 1) {
      const previous = records[i - 1]!;
      const current = records[i]!;
      expect(previous.created > current.created || (previous.created === current.created && previous.id > current.id)).toBe(true);
    }
    const first = await getJson<ListBody>('/v1/customers?limit=1');
    expect(first.body).toMatchObject({ object: 'list', url: '/v1/customers', has_more: true });
    expect(first.body.data[0]).toMatchObject({ object: 'customer', livemode: false });
    expect(first.body.data[0]?.id).toMatch(/^cus_[0-9A-Za-z]{14}$/);
  });

  it('keeps cursors stable when many records share one second', async () => {
    sim.seedCustomers(30, { perSecond: 10 });
    const { ids, calls } = await pageAll('/v1/customers', 7);
    expect(new Set(ids).size).toBe(30);
    expect(calls).toBe(5);
  });

  it('ending_before walks back to the previous page', async () => {
    sim.seedCustomers(25);
    const first = await getJson<ListBody>('/v1/customers?limit=10');
    const second = await getJson<ListBody>(`/v1/customers?limit=10&starting_after=${first.body.data.at(-1)?.id}`);
    const back = await getJson<ListBody>(`/v1/customers?limit=10&ending_before=${second.body.data[0]?.id}`);
    expect(back.body.data.map((r) => r.id)).toEqual(first.body.data.map((r) => r.id));
    expect(back.body.has_more).toBe(false);
  });

  it('refuses an unknown cursor, limit 101 and unknown parameters with 400 in the platform shape', async () => {
    sim.seedCustomers(3);
    const cursor = await getJson<ErrorBody>('/v1/customers?starting_after=cus_doesnotexist00');
    expect(cursor.status).toBe(400);
    expect(cursor.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'starting_after' });

    const limit = await getJson<ErrorBody>('/v1/customers?limit=101');
    expect(limit.status).toBe(400);
    expect(limit.body.error).toMatchObject({ type: 'invalid_request_error', param: 'limit' });
    expect((await get('/v1/customers?limit=0')).status).toBe(400);
    expect((await get('/v1/customers?limit=100')).status).toBe(200);

    const unknown = await getJson<ErrorBody>('/v1/customers?colour=blue');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('colour');
  });

  it('filters on created[gte] and created[lt]', async () => {
    const customers = sim.seedCustomers(50, { spacingSeconds: 10 });
    const from = customers[20]!.created;
    const to = customers[30]!.created;
    const { ids } = await pageAll(`/v1/customers?created[gte]=${from}&created[lt]=${to}`, 100);
    const expected = customers.filter((c) => c.created >= from && c.created < to).map((c) => c.id);
    expect(expected).toHaveLength(10);
    expect(new Set(ids)).toEqual(new Set(expected));
  });

  it('finds customers by exact email', async () => {
    const customers = sim.seedCustomers(20);
    const wanted = customers[7]!;
    const found = await getJson<ListBody>(`/v1/customers?email=${encodeURIComponent(wanted.email!)}`);
    expect(found.body.data.map((c) => c.id)).toEqual([wanted.id]);
    expect(new Set(customers.map((c) => c.email)).size).toBe(20);
  });

  it('leaves canceled subscriptions out unless asked, and filters by customer and status', async () => {
    sim.seedCustomers(40);
    const subscriptions = sim.seedSubscriptions();
    const canceled = subscriptions.filter((s) => s.status === 'canceled');
    expect(canceled.length).toBeGreaterThan(0);
    for (const status of ['active', 'trialing', 'past_due', 'canceled', 'unpaid', 'incomplete', 'incomplete_expired', 'paused']) {
      expect(subscriptions.some((s) => s.status === status)).toBe(true);
    }

    const byDefault = await pageAll('/v1/subscriptions', 100);
    expect(byDefault.ids).toHaveLength(subscriptions.length - canceled.length);
    expect(byDefault.records.every((s) => s.status !== 'canceled')).toBe(true);

    const onlyCanceled = await pageAll('/v1/subscriptions?status=canceled', 100);
    expect(new Set(onlyCanceled.ids)).toEqual(new Set(canceled.map((s) => s.id)));
    expect((await pageAll('/v1/subscriptions?status=all', 100)).ids).toHaveLength(subscriptions.length);
    expect((await get('/v1/subscriptions?status=cancelled')).status).toBe(400);

    const one = subscriptions.find((s) => s.status === 'active')!;
    const forCustomer = await getJson<ListBody>(`/v1/subscriptions?customer=${one.customer}`);
    expect(forCustomer.body.data.map((s) => s.id)).toEqual([one.id]);
    expect(forCustomer.body.data[0]).toMatchObject({
      object: 'subscription',
      current_period_end: one.current_period_end,
      cancel_at_period_end: false,
      items: { data: [{ price: { nickname: expect.any(String), unit_amount: expect.any(Number), recurring: { interval: expect.any(String) } } }] },
    });
  });

  it('serves invoices, payment intents and charges linked to each other, with retrieve by id', async () => {
    sim.seedCustomers(20);
    sim.seedSubscriptions();
    const invoices = sim.seedInvoices({ perSubscription: 2 });
    const paid = invoices.find((i) => i.status === 'paid' && i.payment_intent !== null)!;
    const charges = await getJson<ListBody>(`/v1/charges?customer=${paid.customer}&limit=100`);
    expect(charges.body.data.some((c) => c.invoice === paid.id && c.paid === true && c.status === 'succeeded')).toBe(true);
    const intent = await getJson<Record<string, unknown>>(`/v1/payment_intents/${paid.payment_intent}`);
    expect(intent.body).toMatchObject({ object: 'payment_intent', invoice: paid.id, status: 'succeeded', amount: paid.amount_paid });
    const open = invoices.find((i) => i.status === 'open');
    expect(open).toBeDefined();
    const invoice = await getJson<Record<string, unknown>>(`/v1/invoices/${open!.id}`);
    expect(invoice.body).toMatchObject({ status: 'open', amount_paid: 0, next_payment_attempt: expect.any(Number) });
    const missing = await getJson<ErrorBody>('/v1/invoices/in_nothinghere');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('resource_missing');
  });

  it('answers the list contract the official SDK expects (auto-pagination through the stripe package)', async () => {
    sim.seedCustomers(230);
    const port = Number(new URL(sim.url).port);
    const stripe = new Stripe(key, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 });
    const customers = await stripe.customers.list({ limit: 100 }).autoPagingToArray({ limit: 1000 });
    expect(customers).toHaveLength(230);
    expect(new Set(customers.map((c) => c.id)).size).toBe(230);
  });
});

describe('keys and modes', () => {
  it('answers 401 without a key or with an unknown one, without echoing the key', async () => {
    sim.seedCustomers(1);
    const none = await getJson<ErrorBody>('/v1/customers', '');
    expect(none.status).toBe(401);
    const unknownKey = newKey('sk_test_');
    const unknown = await getJson<ErrorBody>('/v1/customers', unknownKey);
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.type).toBe('authentication_error');
    expect(JSON.stringify(unknown.body)).not.toContain(unknownKey);
  });

  it('accepts Basic auth with the key as username and an empty password', async () => {
    sim.seedCustomers(2);
    const response = await fetch(`${sim.url}/v1/customers`, {
      headers: { authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` },
    });
    expect(response.status).toBe(200);
  });

  it('refuses a publishable key and a restricted key without access', async () => {
    const publishable = newKey('pk_test_');
    sim.addApiKey(publishable);
    const refused = await getJson<ErrorBody>('/v1/customers', publishable);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('publishable API key');

    const restricted = newKey('rk_test_');
    sim.addApiKey(restricted, { access: 'none' });
    expect((await get('/v1/customers', restricted)).status).toBe(403);

    const partial = newKey('rk_test_');
    sim.addApiKey(partial, { access: { customers: 'read' } });
    expect((await get('/v1/customers', partial)).status).toBe(200);
    const charges = await getJson<ErrorBody>('/v1/charges', partial);
    expect(charges.status).toBe(403);
    expect(charges.body.error.message).toContain('rak_charge_read');
    expect(charges.body.error.message).not.toContain(partial);
  });

  it('keeps test and live data apart and says when an id lives in the other mode', async () => {
    const [testCustomer] = sim.seedCustomers(3);
    sim.seedCustomers(5, { mode: 'live' });
    const live = newKey('sk_live_');
    sim.addApiKey(live);
    const liveList = await getJson<ListBody>('/v1/customers?limit=100', live);
    expect(liveList.body.data).toHaveLength(5);
    expect(liveList.body.data.every((c) => c.livemode === true)).toBe(true);
    expect((await getJson<ListBody>('/v1/customers?limit=100')).body.data).toHaveLength(3);

    const crossed = await getJson<ErrorBody>(`/v1/customers/${testCustomer!.id}`, live);
    expect(crossed.status).toBe(404);
    expect(crossed.body.error.message).toContain('exists in test mode');
  });

  it('stops answering a revoked key', async () => {
    expect((await get('/v1/customers')).status).toBe(200);
    sim.removeApiKey(key);
    expect((await get('/v1/customers')).status).toBe(401);
  });
});

describe('rate limit and faults', () => {
  it('answers the 6th rapid request with 429 at 5/s on a frozen clock, without Retry-After', async () => {
    sim.setNow(Date.UTC(2025, 0, 1));
    sim.setRateLimit({ perSecond: 5 });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i += 1) {
      last = await get('/v1/customers');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(last!.headers.get('retry-after')).toBeNull();
    const body = (await last!.json()) as ErrorBody;
    expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit' });
    expect(sim.rateLimited()).toBe(1);
    const stats = (await (await fetch(`${sim.url}/__sandbox/stats`)).json()) as { rateLimited: number };
    expect(stats.rateLimited).toBe(1);

    sim.advance(1000);
    expect((await get('/v1/customers')).status).toBe(200);
  });

  it('limits each endpoint on its own too (25/s by default): a list past its limit gets 429 while another endpoint and a retrieve still answer', async () => {
    sim.setNow(Date.UTC(2025, 0, 1));
    const [customer] = sim.seedCustomers(1);
    sim.setRateLimit({ perSecond: 100 });
    const statuses: number[] = [];
    for (let i = 0; i < 26; i += 1) statuses.push((await get('/v1/customers')).status);
    expect(statuses.slice(0, 25).every((status) => status === 200)).toBe(true);
    expect(statuses[25]).toBe(429);
    // Each named operation has its own: listing subscriptions, and retrieving one customer (whichever id).
    expect((await get('/v1/subscriptions')).status).toBe(200);
    expect((await get(`/v1/customers/${customer!.id}`)).status).toBe(200);
    expect(sim.rateLimited(key)).toBe(1);
    expect(sim.rateLimited()).toBe(1);

    // A lower endpoint limit, given with the global one.
    sim.setRateLimit({ perSecond: 100 }, { perEndpoint: { perSecond: 2 } });
    expect([(await get('/v1/invoices')).status, (await get('/v1/invoices')).status, (await get('/v1/invoices')).status]).toEqual([200, 200, 429]);
    sim.advance(1000);
    expect((await get('/v1/invoices')).status).toBe(200);
  });

  it('limits each key on its own and can send Retry-After when configured', async () => {
    sim.setNow(Date.UTC(2025, 0, 1));
    sim.setRateLimit({ perSecond: 1, retryAfterSeconds: 2 });
    const other = newKey('sk_test_');
    sim.addApiKey(other);
    expect((await get('/v1/customers')).status).toBe(200);
    const limited = await get('/v1/customers');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect((await get('/v1/customers', other)).status).toBe(200);
    expect(sim.rateLimited()).toBe(1);
  });

  it('applies the default test-mode limit of 25 per second', async () => {
    const fresh = await startPaymentSimulator();
    const testKey = newKey('sk_test_');
    fresh.addApiKey(testKey);
    fresh.setNow(Date.UTC(2025, 0, 1));
    const statuses = [];
    for (let i = 0; i < 26; i += 1) {
      statuses.push((await fetch(`${fresh.url}/v1/customers`, { headers: { authorization: `Bearer ${testKey}` } })).status);
    }
    await fresh.stop();
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.at(-1)).toBe(429);
  });

  it('serves faults injected through /__sandbox/faults', async () => {
    sim.seedCustomers(3);
    const inject = (rule: unknown) =>
      fetch(`${sim.url}/__sandbox/faults`, { method: 'POST', body: JSON.stringify(rule), headers: { 'content-type': 'application/json' } });

    expect((await inject({ fault: { kind: 'status', status: 429, retryAfterSeconds: 3 } })).status).toBe(204);
    const limited = await get('/v1/customers');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(((await limited.json()) as ErrorBody).error.type).toBe('rate_limit_error');

    await inject({ fault: { kind: 'status', status: 503 } });
    const unavailable = await get('/v1/customers');
    expect(unavailable.status).toBe(503);
    expect(((await unavailable.json()) as ErrorBody).error.type).toBe('api_error');

    await inject({ fault: { kind: 'drop' } });
    await expect(get('/v1/customers')).rejects.toThrow();

    await inject({ fault: { kind: 'truncated' } });
    const truncated = await get('/v1/customers');
    expect(truncated.status).toBe(200);
    await expect(truncated.json()).rejects.toThrow();

    expect((await get('/v1/customers')).status).toBe(200);
    const stats = (await (await fetch(`${sim.url}/__sandbox/stats`)).json()) as { faultsServed: Record<string, number> };
    expect(stats.faultsServed).toEqual({ status: 2, drop: 1, truncated: 1 });
  });

  it('answers with a latency set at start or through /__sandbox/latency, holding requests in flight meanwhile', async () => {
    const slow = await startPaymentSimulator({ seed: 7, latency: { ms: 150, jitterMs: 50 } });
    try {
      expect(slow.latency()).toEqual({ ms: 150, jitterMs: 50 });
      slow.addApiKey(key);
      slow.setRateLimit(undefined);
      slow.seedCustomers(5);
      // Five at once: each is held for its latency, so all five are being answered together.
      const statuses = await Promise.all(Array.from({ length: 5 }, () => fetch(`${slow.url}/v1/customers`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status)));
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      expect(slow.maxInFlight()).toBeGreaterThanOrEqual(3);
    } finally {
      await slow.stop();
    }

    const set = (body: unknown) => fetch(`${sim.url}/__sandbox/latency`, { method: 'POST', body: JSON.stringify(body) });
    expect((await set({ ms: 80, jitterMs: 20 })).status).toBe(204);
    expect(await (await fetch(`${sim.url}/__sandbox/latency`)).json()).toEqual({ ms: 80, jitterMs: 20 });
    expect(sim.latency()).toEqual({ ms: 80, jitterMs: 20 });
    // A bad setting is refused and changes nothing.
    expect((await set({ ms: -1 })).status).toBe(400);
    expect((await set({ ms: 'slow' })).status).toBe(400);
    expect(sim.latency()).toEqual({ ms: 80, jitterMs: 20 });
    const stats = (await (await fetch(`${sim.url}/__sandbox/stats`)).json()) as { latency: unknown };
    expect(stats.latency).toEqual({ ms: 80, jitterMs: 20 });
  });
});

describe('changes and events', () => {
  it('shows a change made mid-paging (onRequest) in later pages', async () => {
    sim.seedCustomers(250);
    const doomed = sim.state.test.customers.sorted('created')[10]!; // among the oldest: on the last page
    sim.onRequest((_request, count) => {
      if (count === 2) sim.delete('customers', doomed.id);
    });
    const { ids } = await pageAll('/v1/customers', 100);
    expect(ids).toHaveLength(249);
    expect(ids).not.toContain(doomed.id);

    const deleted = await getJson<Record<string, unknown>>(`/v1/customers/${doomed.id}`);
    expect(deleted.body).toEqual({ id: doomed.id, object: 'customer', deleted: true });
  });

  it('records events for updates and deletes, filterable by type, with previous_attributes', async () => {
    sim.seedCustomers(5);
    const [subscription] = sim.seedSubscriptions({ statuses: ['active'] });
    const updated = sim.update('subscriptions', subscription!.id, { status: 'past_due' });
    expect(updated.events.map((e) => e.type)).toEqual(['customer.subscription.updated']);
    expect(updated.events[0]!.data.previous_attributes).toEqual({ status: 'active' });

    const removed = sim.delete('customers', subscription!.customer);
    expect(removed.events.map((e) => e.type)).toEqual(['customer.subscription.deleted', 'customer.deleted']);

    const all = await getJson<ListBody>('/v1/events?limit=100');
    expect(all.body.data).toHaveLength(3);
    const subscriptionEvents = await getJson<ListBody>('/v1/events?type=customer.subscription.*');
    expect(subscriptionEvents.body.data.map((e) => e.type).sort()).toEqual(['customer.subscription.deleted', 'customer.subscription.updated']);
    const typed = await getJson<ListBody>('/v1/events?types[]=customer.deleted&types[]=customer.subscription.updated');
    expect(typed.body.data.map((e) => e.type).sort()).toEqual(['customer.deleted', 'customer.subscription.updated']);
    const deletedEvent = typed.body.data.find((e) => e.type === 'customer.deleted') as unknown as { data: { object: { id: string } } };
    expect(deletedEvent.data.object.id).toBe(subscription!.customer);
  });

  it('lists events from the last 30 days only', async () => {
    const start = Date.UTC(2025, 0, 1);
    sim.setNow(start);
    sim.createCustomer();
    sim.advance(20 * 86_400_000);
    sim.createCustomer();
    expect((await getJson<ListBody>('/v1/events')).body.data).toHaveLength(2);
    sim.advance(15 * 86_400_000);
    const events = await getJson<ListBody>('/v1/events');
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0]!.created).toBe(Math.floor((start + 20 * 86_400_000) / 1000));
    expect((await getJson<ListBody>(`/v1/events?created[gte]=${Math.floor(start / 1000)}`)).body.data).toHaveLength(1);
  });
});

describe('webhooks', () => {
  it('signs deliveries so the platform SDK itself verifies them, with rolled secrets as extra v1 values', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const secret = `whsec_${randomBytes(16).toString('hex')}`;
      const oldSecret = `whsec_${randomBytes(16).toString('hex')}`;
      const { events } = sim.createCustomer({ email: 'hooked@example.com' });
      const statuses = await sim.deliverWebhook({ url: receiver.url, event: events[0]!, secret, extraSignatures: [oldSecret] });
      expect(statuses).toEqual([200]);

      const [delivery] = receiver.received;
      const header = delivery!.headers['stripe-signature'] as string;
      expect(header.match(/v1=/g)).toHaveLength(2);
      const stripe = new Stripe(newKey('sk_test_'));
      for (const candidate of [secret, oldSecret]) {
        const event = stripe.webhooks.constructEvent(delivery!.rawBody, header, candidate);
        expect(event.id).toBe(events[0]!.id);
        expect(event.type).toBe('customer.created');
      }
      expect(() => stripe.webhooks.constructEvent(delivery!.rawBody, header, `whsec_${randomBytes(16).toString('hex')}`)).toThrow();
      // The signature covers the raw bytes: re-serialised JSON does not verify.
      expect(() => stripe.webhooks.constructEvent(JSON.stringify(JSON.parse(delivery!.rawBody)), header, secret)).toThrow();
    } finally {
      await receiver.stop();
    }
  });

  it('sends duplicates and retries until a 2xx', async () => {
    const receiver = await startWebhookReceiver([500, 503]);
    try {
      const secret = `whsec_${randomBytes(16).toString('hex')}`;
      const event = sim.createCustomer().events[0]!;
      const statuses = await sim.deliverWebhook({ url: receiver.url, event, secret, duplicates: 2, retries: 3, retryDelayMs: 1 });
      expect(statuses).toEqual([500, 503, 200, 200, 200]);
      expect(receiver.received).toHaveLength(5);
      expect(new Set(receiver.received.map((r) => (JSON.parse(r.rawBody) as { id: string }).id))).toEqual(new Set([event.id]));
    } finally {
      await receiver.stop();
    }
  });

  it('gives up after the configured retries and reports an unreachable receiver as 0', async () => {
    const receiver = await startWebhookReceiver([500, 500, 500]);
    const event = sim.createCustomer().events[0]!;
    const secret = `whsec_${randomBytes(16).toString('hex')}`;
    expect(await sim.deliverWebhook({ url: receiver.url, event, secret, retries: 1, retryDelayMs: 1 })).toEqual([500, 500]);
    await receiver.stop();
    expect(await sim.deliverWebhook({ url: receiver.url, event, secret, retries: 0 })).toEqual([0]);
  });
});
