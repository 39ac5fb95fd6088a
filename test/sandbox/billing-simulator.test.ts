import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startBillingSimulator, type BillingSimulator, type BillingSite } from '../../sandbox/billing-simulator';
import { startWebhookReceiver } from './webhook-receiver';

/** Keys are made at run time; nothing key-shaped is committed. */
const newKey = (): string => `test_${randomBytes(12).toString('hex')}`;

type Row = Record<string, Record<string, unknown> & { id: string }>;
interface ListBody {
  list: Row[];
  next_offset?: string;
}
interface ErrorBody {
  message: string;
  api_error_code: string;
  type?: string;
  param?: string;
  http_status_code: number;
}

let sim: BillingSimulator;
let acme: BillingSite;
let key: string;

const basic = (apiKey: string): string => `Basic ${Buffer.from(`${apiKey}:`).toString('base64')}`;

async function get(path: string, apiKey: string | undefined = key, site = 'acme'): Promise<Response> {
  return fetch(`${sim.url}/sites/${site}${path}`, apiKey === undefined ? {} : { headers: { authorization: basic(apiKey) } });
}
async function getJson<T>(path: string, apiKey?: string, site?: string): Promise<{ status: number; body: T; headers: Headers }> {
  const response = await get(path, apiKey ?? key, site);
  return { status: response.status, body: (await response.json()) as T, headers: response.headers };
}
/** Pages through a list with next_offset, as a sync does. */
async function pageAll(path: string, resource: string, limit = 100): Promise<{ records: Array<Record<string, unknown> & { id: string }>; calls: number; offsets: string[] }> {
  const records: Array<Record<string, unknown> & { id: string }> = [];
  const offsets: string[] = [];
  let calls = 0;
  let offset: string | undefined;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const { status, body } = await getJson<ListBody>(`${path}${separator}limit=${limit}${offset ? `&offset=${encodeURIComponent(offset)}` : ''}`);
    expect(status).toBe(200);
    calls += 1;
    records.push(...body.list.map((row) => row[resource]!));
    if (!body.next_offset) break;
    offset = body.next_offset;
    offsets.push(offset);
  }
  return { records, calls, offsets };
}
const q = (value: string): string => encodeURIComponent(value);

beforeEach(async () => {
  sim = await startBillingSimulator({ seed: 3 });
  acme = sim.addSite('acme');
  key = newKey();
  sim.addApiKey('acme', key, { type: 'read-only' });
  sim.setRateLimit(undefined);
});
afterEach(async () => {
  await sim.stop();
});

describe('lists', () => {
  it('pages 250 customers with limit 100 in exactly 3 calls, oldest first, with opaque offsets', async () => {
    acme.seedCustomers(250);
    const { records, calls, offsets } = await pageAll('/api/v2/customers', 'customer');
    expect(calls).toBe(3);
    expect(sim.requests.get('GET /sites/acme/api/v2/customers')).toBe(3);
    expect(new Set(records.map((r) => r.id)).size).toBe(250);
    const created = records.map((r) => r.created_at as number);
    expect(created).toEqual([...created].sort((a, b) => a - b));
    expect(offsets).toHaveLength(2);
    for (const offset of offsets) expect(Number.isNaN(Number(offset))).toBe(true);
    expect(records[0]).toMatchObject({ object: 'customer', deleted: false, email: expect.stringContaining('@') });
    expect(String(records[0]!.created_at)).toMatch(/^\d{10}$/);
    expect(new Set(records.map((r) => r.email)).size).toBe(250);
  });

  it('defaults to 10 rows and refuses limit 101, garbage offsets and plain-number offsets', async () => {
    acme.seedCustomers(15);
    const first = await getJson<ListBody>('/api/v2/customers');
    expect(first.body.list).toHaveLength(10);
    expect(first.body.next_offset).toBeDefined();

    const limit = await getJson<ErrorBody>('/api/v2/customers?limit=101');
    expect(limit.status).toBe(400);
    expect(limit.body).toMatchObject({ api_error_code: 'param_wrong_value', param: 'limit', type: 'invalid_request', http_status_code: 400 });
    for (const offset of ['garbage', '10', '["x"]']) {
      const bad = await getJson<ErrorBody>(`/api/v2/customers?offset=${q(offset)}`);
      expect(bad.status).toBe(400);
      expect(bad.body.param).toBe('offset');
    }
  });

  it('filters status[in] with a JSON array and refuses malformed filters with the param named', async () => {
    acme.seedCustomers(60);
    const subscriptions = acme.seedSubscriptions();
    for (const status of ['future', 'in_trial', 'active', 'non_renewing', 'paused', 'cancelled', 'transferred']) {
      expect(subscriptions.some((s) => s.status === status)).toBe(true);
    }
    const { records } = await pageAll(`/api/v2/subscriptions?status[in]=${q('["active","cancelled"]')}`, 'subscription');
    const expected = subscriptions.filter((s) => s.status === 'active' || s.status === 'cancelled');
    expect(new Set(records.map((r) => r.id))).toEqual(new Set(expected.map((s) => s.id)));

    const notIn = await pageAll(`/api/v2/subscriptions?status[not_in]=${q('["active"]')}`, 'subscription');
    expect(notIn.records).toHaveLength(subscriptions.filter((s) => s.status !== 'active').length);

    const badJson = await getJson<ErrorBody>(`/api/v2/subscriptions?status[in]=${q('[active')}`);
    expect(badJson.status).toBe(400);
    expect(badJson.body.param).toBe('status[in]');
    // The payment platform's spelling is not a billing status.
    expect((await get(`/api/v2/subscriptions?status[is]=canceled`)).status).toBe(400);
    expect((await get(`/api/v2/subscriptions?colour[is]=blue`)).status).toBe(400);
  });

  it('wraps each subscription row with its customer, and retrieves one as {subscription, customer}', async () => {
    acme.seedCustomers(3);
    const [subscription] = acme.seedSubscriptions({ statuses: ['active'] });
    const page = await getJson<ListBody>('/api/v2/subscriptions?limit=1');
    expect(page.body.list[0]!.subscription!.id).toBe(subscription!.id);
    expect(page.body.list[0]!.customer!.id).toBe(subscription!.customer_id);

    const one = await getJson<Row>(`/api/v2/subscriptions/${subscription!.id}`);
    expect(one.body.subscription).toMatchObject({
      id: subscription!.id,
      status: 'active',
      next_billing_at: expect.any(Number),
      current_term_end: expect.any(Number),
      subscription_items: [expect.objectContaining({ item_type: 'plan', item_price_id: expect.any(String) })],
    });
    expect(one.body.customer!.id).toBe(subscription!.customer_id);
    expect((await get('/api/v2/subscriptions/sub_99999')).status).toBe(404);
  });

  it('filters and sorts on updated_at, and some seeded records have no updated_at at all', async () => {
    const now = Date.UTC(2025, 5, 1);
    sim.setNow(now);
    const customers = acme.seedCustomers(250, { withoutUpdatedAt: 0.1 });
    const { records } = await pageAll('/api/v2/customers', 'customer');
    const missing = records.filter((r) => !('updated_at' in r));
    expect(missing).toHaveLength(25);

    const since = Math.floor(now / 1000) - 3 * 86_400;
    const recent = await pageAll(`/api/v2/customers?updated_at[after]=${since}&sort_by[asc]=updated_at`, 'customer');
    const expected = customers.filter((c) => c.updated_at !== undefined && c.updated_at > since);
    expect(recent.records.map((r) => r.id).sort()).toEqual(expected.map((c) => c.id).sort());
    const updated = recent.records.map((r) => r.updated_at as number);
    expect(updated).toEqual([...updated].sort((a, b) => a - b));

    const between = await pageAll(`/api/v2/customers?created_at[between]=${q(`[${customers[10]!.created_at},${customers[19]!.created_at}]`)}`, 'customer');
    expect(between.records).toHaveLength(10);
    // Milliseconds are not the platform's unit.
    expect((await get(`/api/v2/customers?updated_at[after]=${now}`)).status).toBe(400);
  });

  it('hides deleted records unless include_deleted=true', async () => {
    const customers = acme.seedCustomers(5);
    const { record } = acme.delete('customers', customers[2]!.id);
    expect(record).toMatchObject({ deleted: true });
    const visible = await getJson<ListBody>('/api/v2/customers');
    expect(visible.body.list.map((row) => row.customer!.id)).not.toContain(customers[2]!.id);
    expect(visible.body.list).toHaveLength(4);
    const all = await getJson<ListBody>('/api/v2/customers?include_deleted=true');
    expect(all.body.list).toHaveLength(5);
    expect(all.body.list.find((row) => row.customer!.id === customers[2]!.id)!.customer!.deleted).toBe(true);
  });

  it('has no /api/v2/payments: payments are transactions', async () => {
    acme.seedCustomers(10);
    acme.seedSubscriptions({ statuses: ['active'] });
    const invoices = acme.seedInvoices();
    const payments = await getJson<ErrorBody>('/api/v2/payments');
    expect(payments.status).toBe(404);
    expect(payments.body.api_error_code).toBe('resource_not_found');

    const invoice = invoices[0]!;
    const transactions = await getJson<ListBody>(`/api/v2/transactions?customer_id[is]=${invoice.customer_id}&type[is]=payment`);
    expect(transactions.body.list.map((row) => row.transaction!.linked_invoices)).toEqual([[expect.objectContaining({ invoice_id: invoice.id })]]);
    const failed = await pageAll('/api/v2/transactions?status[is]=failure', 'transaction');
    expect(failed.records.length).toBeGreaterThan(0);
    expect(failed.records.every((t) => t.status === 'failure')).toBe(true);
    const forInvoice = await getJson<ListBody>(`/api/v2/invoices/${invoice.id}/payments`);
    expect(forInvoice.body.list).toHaveLength(1);
  });

  it('shows a change made mid-paging (onRequest) in later pages', async () => {
    acme.seedCustomers(250);
    const late = acme.data.customers.sorted('created_at')[240]!; // on the third page
    sim.onRequest((_request, count) => {
      if (count === 2) acme.update('customers', late.id, { email: 'changed@example.com' });
    });
    const { records } = await pageAll('/api/v2/customers', 'customer');
    expect(records.find((r) => r.id === late.id)!.email).toBe('changed@example.com');
  });

  it('moves a record changed mid-sync to the end of an updated_at-sorted list, so it is seen again', async () => {
    sim.setNow(Date.UTC(2025, 5, 1));
    acme.seedCustomers(250, { withoutUpdatedAt: 0 });
    let early: string | undefined;
    sim.onRequest((_request, count) => {
      if (count !== 2) return;
      early = acme.data.customers.sorted('updated_at')[0]!.id;
      sim.advance(1000);
      acme.update('customers', early, { first_name: 'Changed' });
    });
    const { records } = await pageAll('/api/v2/customers?sort_by[asc]=updated_at', 'customer');
    expect(records).toHaveLength(251);
    expect(records.at(-1)).toMatchObject({ id: early, first_name: 'Changed' });
  });
});

describe('sites and keys', () => {
  it('answers 404 site_not_found for an unknown site', async () => {
    const unknown = await getJson<ErrorBody>('/api/v2/customers', key, 'nowhere');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ api_error_code: 'site_not_found', message: expect.stringContaining('site') });
  });

  it('answers 401 api_authentication_failed without a key, with an unknown key, or with another site key', async () => {
    const none = await getJson<ErrorBody>('/api/v2/customers', '');
    expect(none.status).toBe(401);
    expect(none.body.api_error_code).toBe('api_authentication_failed');
    const unknownKey = newKey();
    const unknown = await getJson<ErrorBody>('/api/v2/customers', unknownKey);
    expect(unknown.status).toBe(401);
    expect(JSON.stringify(unknown.body)).not.toContain(unknownKey);

    sim.addSite('other');
    const otherKey = newKey();
    sim.addApiKey('other', otherKey, { type: 'full' });
    expect((await get('/api/v2/customers', otherKey)).status).toBe(401);
    expect((await get('/api/v2/customers', otherKey, 'other')).status).toBe(200);
  });

  it('refuses a publishable key with 403 api_authorization_failed', async () => {
    const publishable = newKey();
    sim.addApiKey('acme', publishable, { type: 'publishable' });
    const refused = await getJson<ErrorBody>('/api/v2/customers', publishable);
    expect(refused.status).toBe(403);
    expect(refused.body.api_error_code).toBe('api_authorization_failed');
  });
});

describe('rate limit and faults', () => {
  it('answers the 6th rapid request with 429 at 5/s on a frozen clock, counting it', async () => {
    sim.setNow(Date.UTC(2025, 0, 1));
    sim.setRateLimit({ perSecond: 5 });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i += 1) {
      last = await get('/api/v2/customers');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(last!.headers.get('retry-after')).toBeNull();
    expect(((await last!.json()) as ErrorBody).api_error_code).toBe('api_request_limit_exceeded');
    expect(sim.rateLimited()).toBe(1);
  });

  it('defaults to 150 per minute and sends Retry-After only when configured', async () => {
    const fresh = await startBillingSimulator();
    fresh.addSite('acme');
    const freshKey = newKey();
    fresh.addApiKey('acme', freshKey, { type: 'full' });
    fresh.setNow(Date.UTC(2025, 0, 1));
    const call = () => fetch(`${fresh.url}/sites/acme/api/v2/customers`, { headers: { authorization: basic(freshKey) } });
    let ok = 0;
    for (let i = 0; i < 150; i += 1) if ((await call()).status === 200) ok += 1;
    expect(ok).toBe(150);
    expect((await call()).status).toBe(429);

    fresh.setRateLimit({ perMinute: 1, retryAfterSeconds: 60 });
    expect((await call()).status).toBe(200);
    const limited = await call();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(fresh.rateLimited()).toBe(2);
    await fresh.stop();
  });

  it('serves faults injected through /__sandbox/faults in the platform error shape', async () => {
    acme.seedCustomers(2);
    const inject = (rule: unknown) => fetch(`${sim.url}/__sandbox/faults`, { method: 'POST', body: JSON.stringify(rule) });
    await inject({ fault: { kind: 'status', status: 429, retryAfterSeconds: 30 }, pathPrefix: '/sites/acme/api/v2/customers' });
    const limited = await get('/api/v2/customers');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(((await limited.json()) as ErrorBody).api_error_code).toBe('api_request_limit_exceeded');

    await inject({ fault: { kind: 'status', status: 503 } });
    const unavailable = await get('/api/v2/customers');
    expect(unavailable.status).toBe(503);
    expect(((await unavailable.json()) as ErrorBody).http_status_code).toBe(503);

    await inject({ fault: { kind: 'drop' } });
    await expect(get('/api/v2/customers')).rejects.toThrow();
    expect((await get('/api/v2/customers')).status).toBe(200);
  });
});

describe('events and webhooks', () => {
  it('records events for changes and lists them with event_type and occurred_at filters', async () => {
    sim.setNow(Date.UTC(2025, 0, 1));
    acme.seedCustomers(3);
    const [subscription] = acme.seedSubscriptions({ statuses: ['active'] });
    const before = sim.clock.nowSeconds();
    sim.advance(60_000);
    const cancelled = acme.update('subscriptions', subscription!.id, { status: 'cancelled' });
    expect(cancelled.record).toMatchObject({ status: 'cancelled', cancelled_at: before + 60, updated_at: before + 60 });
    expect(cancelled.events[0]).toMatchObject({ event_type: 'subscription_cancelled', api_version: 'v2', object: 'event' });
    expect(cancelled.events[0]!.content).toMatchObject({ subscription: { id: subscription!.id }, customer: { id: subscription!.customer_id } });
    acme.update('customers', subscription!.customer_id, { first_name: 'Renamed' });

    const all = await getJson<ListBody>('/api/v2/events');
    expect(all.body.list.map((row) => row.event!.event_type)).toEqual(['customer_changed', 'subscription_cancelled']);
    const byType = await getJson<ListBody>(`/api/v2/events?event_type[in]=${q('["subscription_cancelled"]')}`);
    expect(byType.body.list).toHaveLength(1);
    expect((await getJson<ListBody>(`/api/v2/events?occurred_at[after]=${before + 60}`)).body.list).toHaveLength(0);
    expect((await getJson<ListBody>(`/api/v2/events?occurred_at[after]=${before}`)).body.list).toHaveLength(2);
  });

  it('delivers webhooks with Basic auth, duplicates, and retries until a 2xx', async () => {
    const receiver = await startWebhookReceiver([500]);
    try {
      acme.seedCustomers(1);
      const [subscription] = acme.seedSubscriptions({ statuses: ['active'] });
      const { events } = acme.update('subscriptions', subscription!.id, { status: 'paused' });
      const password = randomBytes(8).toString('hex');
      const statuses = await sim.deliverWebhook({
        url: receiver.url,
        event: events[0]!,
        basicAuth: { username: 'gateway', password },
        duplicates: 1,
        retries: 2,
        retryDelayMs: 1,
      });
      expect(statuses).toEqual([500, 200, 200]);
      expect(receiver.received).toHaveLength(3);
      for (const delivery of receiver.received) {
        expect(delivery.headers.authorization).toBe(`Basic ${Buffer.from(`gateway:${password}`).toString('base64')}`);
        expect(JSON.parse(delivery.rawBody)).toMatchObject({ id: events[0]!.id, event_type: 'subscription_paused', content: { subscription: { status: 'paused' } } });
      }
      expect(acme.events()[0]!.webhook_status).toBe('succeeded');
    } finally {
      await receiver.stop();
    }
  });
});
