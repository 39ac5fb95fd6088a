import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setLogSink } from '../../shared/log/logger';
import { forgetOpenedConnections } from '../../shared/webhooks/connection-cache';
import { basicHeader, outsideHistory, startWebhookWorld, webhookTraces, type WebhookWorld } from './support';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * POST /webhooks/billing end to end, with the Basic credentials the gateway makes for each account
 * (`POST .../connections/billing/webhook-credentials`), and deliveries from the billing simulator.
 */
let world: WebhookWorld;
let acme: { username: string; password: string };
let globex: { username: string; password: string };
const logLines: string[] = [];
let restoreSink: ReturnType<typeof setLogSink>;

beforeAll(async () => {
  restoreSink = setLogSink((line) => logLines.push(line));
  world = await startWebhookWorld();
  acme = (await world.connectBilling('acme'))!;
  globex = (await world.connectBilling('globex'))!;
  await world.connectBilling('initech', { credentials: false });
});
afterAll(async () => {
  setLogSink(restoreSink);
  await world.stop();
});

function post(accountId: string | undefined, body: string, headers: Record<string, string>): Promise<Response> {
  const query = accountId === undefined ? '' : `?account=${accountId}`;
  return fetch(`${world.gateway.url}/webhooks/billing${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

describe('webhook credentials', () => {
  it('are made by the gateway, shown once, and kept sealed with the connection', async () => {
    const token = await world.gateway.userToken('acme');
    expect(acme.username).toBe('acme-webhooks');
    expect(acme.password.length).toBeGreaterThanOrEqual(40);
    const view = await (await world.gateway.call('GET', '/api/v1/accounts/acme/connections/billing', { token })).text();
    expect(view).not.toContain(acme.password);
    expect(JSON.parse(view)).toMatchObject({ config: { webhookUsername: 'acme-webhooks' }, maskedSecrets: { webhookPassword: `••••${acme.password.slice(-4)}` } });
    const table = JSON.stringify(await world.tableItems());
    expect(table).not.toContain(acme.password);
    expect(logLines.join('\n')).not.toContain(acme.password);
    // The API key is still there: the credentials were added, not swapped.
    const stored = await store.getConnection(world.gateway.runtime.local.gateway.table, 'acme', 'billing');
    const opened = await world.gateway.runtime.local.gateway.vault.open({ accountId: 'acme', connector: 'billing' }, stored!.credentials);
    expect(opened).toEqual({ apiKey: world.billingKey, webhookUsername: acme.username, webhookPassword: acme.password });
  });

  it('survive a reconnect with a new API key: they are already entered on the platform', async () => {
    const creds = (await world.connectBilling('wonka'))!;
    const token = await world.gateway.userToken('wonka');
    const reconnect = await world.gateway.call('PUT', '/api/v1/accounts/wonka/connections/billing', {
      token,
      body: { siteName: world.site.name, apiKey: world.billingKey, environment: 'test' },
    });
    expect(reconnect.status).toBe(200);
    expect(await reconnect.json()).toMatchObject({ config: { webhookUsername: 'wonka-webhooks' }, maskedSecrets: { webhookPassword: `••••${creds.password.slice(-4)}` } });
    forgetOpenedConnections(world.gateway.runtime.local.gateway);
    const { events } = world.site.createCustomer({ email: 'wonka@example.com' });
    expect(await world.billing.deliverWebhook({ url: world.billingUrl('wonka'), event: events[0]!, basicAuth: creds, retries: 0 })).toEqual([200]);
  });

  it('need the billing connection, and account access', async () => {
    const other = await world.gateway.call('POST', '/api/v1/accounts/acme/connections/billing/webhook-credentials', { token: await world.gateway.userToken('globex') });
    expect(other.status).toBe(404);
    await world.gateway.enableAccount('hooli');
    const missing = await world.gateway.call('POST', '/api/v1/accounts/hooli/connections/billing/webhook-credentials', { token: await world.gateway.userToken('hooli') });
    expect(missing.status).toBe(404);
  });

  it('replace the earlier ones', async () => {
    const fresh = (await world.connectBilling('umbrella'))!;
    const { events } = world.site.createCustomer({ email: 'umbrella@example.com' });
    expect(await world.billing.deliverWebhook({ url: world.billingUrl('umbrella'), event: events[0]!, basicAuth: fresh, retries: 0 })).toEqual([200]);
    const token = await world.gateway.userToken('umbrella');
    const again = (await (await world.gateway.call('POST', '/api/v1/accounts/umbrella/connections/billing/webhook-credentials', { token })).json()) as typeof fresh;
    expect(again.password).not.toBe(fresh.password);
    // A receiver that kept the old copy reads the connection again once it is a few seconds old.
    forgetOpenedConnections(world.gateway.runtime.local.gateway);
    expect(await world.billing.deliverWebhook({ url: world.billingUrl('umbrella'), event: events[0]!, basicAuth: fresh, retries: 0 })).toEqual([401]);
    expect(await world.billing.deliverWebhook({ url: world.billingUrl('umbrella'), event: events[0]!, basicAuth: again, retries: 0 })).toEqual([200]);
  });
});

describe('sync settings filters', () => {
  it('a subscription that leaves the "Active" filter is not kept, as the sync would not keep it', async () => {
    const creds = (await world.connectBilling('stark'))!;
    const token = await world.gateway.userToken('stark');
    const saved = await world.gateway.call('PUT', '/api/v1/accounts/stark/connections/billing/sync-settings', {
      token,
      body: { method: 'webhooks', frequency: 'daily', subscriptionStatus: 'active' },
    });
    expect(saved.status).toBe(200);
    const { record: customer } = world.site.createCustomer({ email: 'tony@stark.example' });
    const { record: subscription, events: created } = world.site.createSubscription(customer.id);
    await world.billing.deliverWebhook({ url: world.billingUrl('stark'), event: created[0]!, basicAuth: creds, retries: 0 });
    await world.settle();
    const table = world.gateway.runtime.local.gateway.table;
    expect((await store.getRecord(table, recordsAt('stark', 'billing', 'subscriptions'), subscription.id))?.deletedAt).toBeUndefined();

    const { events: cancelled } = world.site.update('subscriptions', subscription.id, { status: 'cancelled' });
    await world.billing.deliverWebhook({ url: world.billingUrl('stark'), event: cancelled[0]!, basicAuth: creds, retries: 0 });
    await world.settle();
    const stored = await store.getRecord(table, recordsAt('stark', 'billing', 'subscriptions'), subscription.id);
    expect(stored?.deletedAt).toBeDefined();
    expect((await store.listRecords(table, recordsAt('stark', 'billing', 'subscriptions'))).records.map((r) => r.id)).not.toContain(subscription.id);
  });
});

describe('accepted deliveries', () => {
  it('applies a delivery with the right credentials, once, through duplicates', async () => {
    const { record: customer } = world.site.createCustomer({ email: 'billing@example.com', first_name: 'Bea', last_name: 'Ling' });
    const { record: subscription, events } = world.site.createSubscription(customer.id);
    const statuses = await world.billing.deliverWebhook({ url: world.billingUrl('acme'), event: events[0]!, basicAuth: acme, duplicates: 2 });
    expect(statuses).toEqual([200, 200, 200]);
    await world.settle();

    const table = world.gateway.runtime.local.gateway.table;
    // The subscription event carries its customer: both are stored.
    expect((await store.getRecord(table, recordsAt('acme', 'billing', 'subscriptions'), subscription.id))?.body).toMatchObject({ id: subscription.id, customerId: customer.id, state: 'active' });
    expect((await store.getRecord(table, recordsAt('acme', 'billing', 'customers'), customer.id))?.body).toMatchObject({ email: 'billing@example.com', name: 'Bea Ling' });
    const published = world.published.filter((e) => e.data.platformEventId === events[0]!.id);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ type: 'subscription.created', source: 'billing', accountId: 'acme', data: { customer: { id: customer.id, email: 'billing@example.com' } } });
    expect(world.site.events().find((e) => e.id === events[0]!.id)?.webhook_status).toBe('succeeded');
  });
});

describe('confirmed with the platform before anything changes (deliveries carry no signature)', () => {
  const metric = (name: string) => world.gateway.runtime.metrics.sum(name, { connector: 'billing' });

  it('a forged event with the right credentials is read back, not found, and changes nothing: no record, no payment.failed', async () => {
    const { record: customer } = world.site.createCustomer({ email: 'forged@example.com' });
    const { record: subscription } = world.site.createSubscription(customer.id);
    const { events } = world.site.createInvoice(subscription.id, { paid: false });
    const real = events.find((event) => event.event_type === 'payment_failed')!;
    // Someone holding the Basic credentials invents a failure the platform never recorded.
    const forged = { ...real, id: `ev_forged_${Date.now()}`, content: { ...real.content, transaction: { ...(real.content as { transaction: Record<string, unknown> }).transaction, id: 'txn_forged' } } };
    const unconfirmed = metric('WebhookEventsUnconfirmed');
    const response = await post('acme', JSON.stringify(forged), { authorization: basicHeader(acme.username, acme.password) });
    expect(response.status).toBe(200);
    await world.settle();
    const table = world.gateway.runtime.local.gateway.table;
    expect(await store.getRecord(table, recordsAt('acme', 'billing', 'payments'), 'txn_forged')).toBeUndefined();
    expect(world.published.filter((e) => e.data.platformEventId === forged.id)).toEqual([]);
    expect(metric('WebhookEventsUnconfirmed')).toBe(unconfirmed + 1);
  });

  it("a real event's delivered body is not trusted: the platform's own copy is what is applied and published", async () => {
    const { record: customer } = world.site.createCustomer({ email: 'honest@example.com' });
    const { events } = world.site.createSubscription(customer.id);
    const real = events[0]!;
    const tampered = { ...real, content: { ...real.content, customer: { ...(real.content as { customer: Record<string, unknown> }).customer, email: 'attacker@example.com' } } };
    const confirmed = metric('WebhookEventsConfirmed');
    expect((await post('acme', JSON.stringify(tampered), { authorization: basicHeader(acme.username, acme.password) })).status).toBe(200);
    await world.settle();
    const stored = await store.getRecord(world.gateway.runtime.local.gateway.table, recordsAt('acme', 'billing', 'customers'), customer.id);
    expect(stored?.body).toMatchObject({ email: 'honest@example.com' });
    const published = world.published.filter((e) => e.data.platformEventId === real.id);
    expect(published).toHaveLength(1);
    expect(JSON.stringify(published[0])).not.toContain('attacker@example.com');
    expect(metric('WebhookEventsConfirmed')).toBe(confirmed + 1);
  });
});

describe('refused deliveries: 401 with WWW-Authenticate, or another 4xx; nothing stored, nothing enqueued', () => {
  const body = () => JSON.stringify(world.site.createCustomer({ email: 'refused@example.com' }).events[0]);
  const cases: Array<[string, number, () => Promise<Response>]> = [
    ['no credentials', 401, () => post('acme', body(), {})],
    ['a wrong password', 401, () => post('acme', body(), { authorization: basicHeader(acme.username, `${acme.password}x`) })],
    ['a wrong username', 401, () => post('acme', body(), { authorization: basicHeader('globex-webhooks', acme.password) })],
    ["another account's credentials", 401, () => post('acme', body(), { authorization: basicHeader(globex.username, globex.password) })],
    ['a bearer token', 401, () => post('acme', body(), { authorization: `Bearer ${acme.password}` })],
    ['a malformed Basic header', 401, () => post('acme', body(), { authorization: 'Basic %%%' })],
    ['a connection without webhook credentials', 401, () => post('initech', body(), { authorization: basicHeader(acme.username, acme.password) })],
    ['an unknown account', 404, () => post('nobody', body(), { authorization: basicHeader(acme.username, acme.password) })],
    ['no account in the address', 400, () => post(undefined, body(), { authorization: basicHeader(acme.username, acme.password) })],
    ['a content type other than JSON', 415, () => post('acme', body(), { authorization: basicHeader(acme.username, acme.password), 'content-type': 'application/x-www-form-urlencoded' })],
    ['invalid JSON', 400, () => post('acme', '{"id":', { authorization: basicHeader(acme.username, acme.password) })],
    ['JSON that is not an event', 400, () => post('acme', '{"id":"ev_1","object":"event"}', { authorization: basicHeader(acme.username, acme.password) })],
    ['a body over 1 MB', 413, () => post('acme', JSON.stringify({ padding: 'x'.repeat(1024 * 1024) }), { authorization: basicHeader(acme.username, acme.password) })],
  ];

  it.each(cases)('refuses %s', async (_name, status, send) => {
    await world.settle();
    const before = { enqueued: world.enqueued.length, items: await world.tableItems() };
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    if (status === 401) expect(response.headers.get('www-authenticate')).toBe('Basic realm="billing webhooks", charset="UTF-8"');
    const text = await response.text();
    for (const secret of [acme.password, globex.password]) expect(text).not.toContain(secret);
    await world.settle();
    expect(world.enqueued.length).toBe(before.enqueued);
    const after = await world.tableItems();
    expect(after.filter(outsideHistory).length).toBe(before.items.filter(outsideHistory).length);
    expect(webhookTraces(after, 'acme')).toEqual(webhookTraces(before.items, 'acme'));
  });

  it('tells the user to create webhook credentials', async () => {
    const problem = (await (await post('initech', body(), {})).json()) as { remedy: string };
    expect(problem.remedy).toContain('Create webhook credentials');
  });
});

describe('webhook addresses', () => {
  it('lists each platform’s address for the account, with what is missing and no secret', async () => {
    const response = await world.gateway.call('GET', '/api/v1/accounts/initech/webhooks', { token: await world.gateway.userToken('initech') });
    expect(response.status).toBe(200);
    const { webhooks } = (await response.json()) as { webhooks: Array<{ connector: string; url: string; ready: boolean; connected: boolean; notes: string[] }> };
    expect(webhooks.map((w) => [w.connector, w.url, w.connected, w.ready])).toEqual([
      ['payment', `${world.gateway.url}/webhooks/payments?account=initech`, false, false],
      ['billing', `${world.gateway.url}/webhooks/billing?account=initech`, true, false],
    ]);
    expect(webhooks[1]!.notes.join(' ')).toContain('Create webhook credentials');

    const acmeView = await (await world.gateway.call('GET', '/api/v1/accounts/acme/webhooks', { token: await world.gateway.userToken('acme') })).text();
    expect(JSON.parse(acmeView).webhooks[1]).toMatchObject({ ready: true, username: 'acme-webhooks' });
    expect(acmeView).not.toContain(acme.password);
    expect((await world.gateway.call('GET', '/api/v1/accounts/acme/webhooks', { token: await world.gateway.userToken('globex') })).status).toBe(404);
  });
});
