import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as webhookEvent } from '../../functions/webhook-event';
import { log } from '../../shared/log/logger';
import type { WebhookEventMessage } from '../../shared/queues/messages';
import { recordHash } from '../../shared/sync/record-hash';
import { applyWebhookEvent, CLAIM_LEASE_SECONDS } from '../../shared/webhooks/apply';
import type { BillingEvent } from '../../sandbox/billing-simulator';
import type { PaymentEvent } from '../../sandbox/payment-simulator';
import { startWebhookWorld, type WebhookWorld } from './support';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * The event worker on real servers: dynalite, the simulators (for records it must fetch), the
 * local bus. Events are delivered through the receivers in the order each test chooses.
 */
let world: WebhookWorld;
let secret: string;
let billingAuth: { username: string; password: string };
const table = () => world.gateway.runtime.local.gateway.table;

beforeAll(async () => {
  world = await startWebhookWorld();
  secret = (await world.connectPayment('acme'))!;
  billingAuth = (await world.connectBilling('acme'))!;
});
afterAll(() => world.stop());

/** Delivers events one after another, each applied before the next arrives. */
async function deliverInOrder(events: PaymentEvent[], accountId = 'acme', signingSecret = secret): Promise<void> {
  for (const event of events) {
    expect(await world.payment.deliverWebhook({ url: world.paymentUrl(accountId), event, secret: signingSecret, retries: 0 })).toEqual([200]);
    await world.settle();
  }
}
async function deliverBilling(events: BillingEvent[]): Promise<void> {
  for (const event of events) {
    expect(await world.billing.deliverWebhook({ url: world.billingUrl('acme'), event, basicAuth: billingAuth, retries: 0 })).toEqual([200]);
    await world.settle();
  }
}
const publishedFor = (event: { id: string }) => world.published.filter((e) => e.data.platformEventId === event.id);
const fetches = (path: string) => world.payment.requests.get(`GET ${path}`) ?? 0;

describe('order', () => {
  it('never lets an older payment event overwrite newer data, and publishes each event once', async () => {
    const { record: customer, events: created } = world.payment.createCustomer({ email: 'order@example.com' });
    const { record: subscription, events: started } = world.payment.createSubscription(customer.id);
    const changes: PaymentEvent[] = [];
    for (const quantity of [2, 3, 4]) {
      world.payment.advance(1000);
      const item = subscription.items.data[0]!;
      changes.push(...world.payment.update('subscriptions', subscription.id, { items: { ...subscription.items, data: [{ ...item, quantity }] } }).events);
    }
    await deliverInOrder([changes[2]!, changes[0]!, created[0]!, changes[1]!, started[0]!]);

    const stored = await store.getRecord(table(), recordsAt('acme', 'payment', 'subscriptions'), subscription.id);
    expect(stored?.body.amount).toBe(subscription.items.data[0]!.price.unit_amount * 4);
    expect(stored?.sourceVersion).toBe(changes[2]!.created);
    for (const event of [...changes, ...created, ...started]) expect(publishedFor(event)).toHaveLength(1);
  });

  it('never lets an older billing event overwrite newer data', async () => {
    const { record: customer, events: created } = world.site.createCustomer({ email: 'old@example.com' });
    const first = world.site.update('customers', customer.id, { email: 'newer@example.com' }).events[0]!;
    const second = world.site.update('customers', customer.id, { email: 'newest@example.com' }).events[0]!;
    await deliverBilling([second, created[0]!, first]);
    const stored = await store.getRecord(table(), recordsAt('acme', 'billing', 'customers'), customer.id);
    expect(stored?.body.email).toBe('newest@example.com');
    expect(publishedFor(second)[0]).toMatchObject({ type: 'customer.changed', data: { customer: { email: 'newest@example.com' } } });
  });

  it('asks the platform when two changes share one second, and ends with its current state', async () => {
    const { record: customer } = world.payment.createCustomer({ name: 'Tie' });
    await deliverInOrder(world.payment.update('customers', customer.id, { name: 'Tie 1' }).events);
    // Two changes within one second, as the platform records them (its clock held still for them),
    // and the platform's clock a few seconds ahead of the gateway's.
    world.payment.advance(5000);
    world.payment.setNow(world.payment.now());
    const sameSecond = [
      ...world.payment.update('customers', customer.id, { name: 'Tie 2' }).events,
      ...world.payment.update('customers', customer.id, { name: 'Tie 3' }).events,
    ];
    world.payment.clock.resume();
    expect(sameSecond[0]!.created).toBe(sameSecond[1]!.created);
    const before = fetches(`/v1/customers/${customer.id}`);
    // The older one first: only the platform can say that the second one is newer.
    await deliverInOrder([sameSecond[0]!, sameSecond[1]!]);
    expect(fetches(`/v1/customers/${customer.id}`)).toBe(before + 1);
    expect((await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id))?.body.name).toBe('Tie 3');
  });

  it('keeps a deletion: a late, older update does not bring the record back', async () => {
    const { record: customer, events: created } = world.payment.createCustomer({ email: 'gone@example.com' });
    world.payment.advance(1000);
    const updated = world.payment.update('customers', customer.id, { name: 'Still here' }).events;
    world.payment.advance(1000);
    const deleted = world.payment.delete('customers', customer.id).events;
    await deliverInOrder([created[0]!, ...deleted, ...updated]);
    const stored = await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id);
    expect(stored?.deletedAt).toBeDefined();
    expect(stored?.sourceVersion).toBe(deleted[0]!.created);
    expect((await store.listRecords(table(), recordsAt('acme', 'payment', 'customers'))).records.map((r) => r.id)).not.toContain(customer.id);
  });
});

describe('records not synced yet', () => {
  it("fetches a subscription's customer the gateway has not stored, and publishes with it", async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'fetched@example.com', name: 'Fay Tched' });
    const { events } = world.payment.createSubscription(customer.id);
    expect(await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id)).toBeUndefined();
    await deliverInOrder(events);
    expect(fetches(`/v1/customers/${customer.id}`)).toBe(1);
    expect((await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id))?.body).toMatchObject({ email: 'fetched@example.com' });
    expect(publishedFor(events[0]!)[0]?.data.customer).toEqual({ id: customer.id, email: 'fetched@example.com', name: 'Fay Tched' });
    // Stored now: the next event about it fetches nothing.
    world.payment.advance(1000);
    await deliverInOrder(world.payment.update('subscriptions', events[0]!.data.object.id as string, { metadata: { plan: 'gold' } }).events);
    expect(fetches(`/v1/customers/${customer.id}`)).toBe(1);
  });

  it('fetches the record of an event too big for the queue instead of storing its stub', async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'big@example.com' });
    const { events } = world.payment.update('customers', customer.id, { name: 'Big', metadata: { note: 'x'.repeat(300 * 1024) } });
    const before = fetches(`/v1/customers/${customer.id}`);
    await deliverInOrder(events);
    expect(fetches(`/v1/customers/${customer.id}`)).toBe(before + 1);
    expect((await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id))?.body).toMatchObject({ email: 'big@example.com', name: 'Big' });
    expect(publishedFor(events[0]!)[0]?.data.customer).toMatchObject({ email: 'big@example.com', name: 'Big' });
  });

  it('publishes a failed payment with the customer, amount and invoice, for dunning', async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'dunning@example.com', name: 'Dunn Ing' });
    const { record: subscription } = world.payment.createSubscription(customer.id);
    const { record: invoice, events } = world.payment.createInvoice(subscription.id, 'open');
    await deliverInOrder([...events].reverse());
    const failed = world.published.find((e) => e.type === 'payment.failed' && (e.data.payment as { invoiceId?: string }).invoiceId === invoice.id);
    expect(failed).toMatchObject({
      accountId: 'acme',
      source: 'payment',
      data: {
        platformEventType: 'invoice.payment_failed',
        customer: { id: customer.id, email: 'dunning@example.com', name: 'Dunn Ing' },
        payment: { amount: invoice.amount_due, currency: invoice.currency, outcome: 'failed', invoiceId: invoice.id, subscriptionId: subscription.id },
        invoice: { id: invoice.id, status: 'open' },
      },
    });
    expect(world.published.filter((e) => e.type === 'invoice.generated' && (e.data.invoice as { id: string }).id === invoice.id)).toHaveLength(1);
    // The invoice, its charge and payment intent are stored too (the subscription's own event was not sent).
    expect((await store.findRecordsByCustomer(table(), 'acme', 'payment', customer.id)).map((r) => r.object).sort()).toEqual(['charges', 'invoices', 'payment_intents']);
  });

  it('publishes a failed payment whose event was too big for the queue, from the fetched invoice', async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'bigfail@example.com' });
    const { record: subscription } = world.payment.createSubscription(customer.id);
    const { record: invoice, events } = world.payment.createInvoice(subscription.id, 'open');
    const failed = events.find((event) => event.type === 'invoice.payment_failed')!;
    // Invoices with many lines make big events; this one no longer fits an SQS message.
    failed.data.object = { ...failed.data.object, metadata: { lines: 'x'.repeat(300 * 1024) } };
    const before = fetches(`/v1/invoices/${invoice.id}`);
    await deliverInOrder([failed]);
    expect(fetches(`/v1/invoices/${invoice.id}`)).toBe(before + 1);
    expect(publishedFor(failed)[0]).toMatchObject({
      type: 'payment.failed',
      data: { customer: { id: customer.id, email: 'bigfail@example.com' }, payment: { amount: invoice.amount_due, invoiceId: invoice.id, outcome: 'failed' } },
    });
  });

  it("publishes a dispute with the disputed charge's customer, fetching the charge", async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'dispute@example.com' });
    const { record: subscription } = world.payment.createSubscription(customer.id);
    world.payment.createInvoice(subscription.id, 'paid');
    const charge = [...world.payment.state.test.charges.values()].find((c) => c.customer === customer.id)!;
    const dispute = world.payment.recordEvent('charge.dispute.created', {
      id: 'dp_1',
      object: 'dispute',
      amount: charge.amount,
      currency: charge.currency,
      charge: charge.id,
      payment_intent: charge.payment_intent,
      reason: 'fraudulent',
      status: 'needs_response',
      evidence_details: { due_by: Math.floor(Date.now() / 1000) + 7 * 86_400 },
    });
    await deliverInOrder([dispute]);
    // Neither the charge nor its customer was stored: both are fetched.
    expect(fetches(`/v1/charges/${charge.id}`)).toBe(1);
    expect(fetches(`/v1/customers/${customer.id}`)).toBe(1);
    expect(publishedFor(dispute)[0]).toMatchObject({
      type: 'dispute.created',
      data: { customer: { id: customer.id, email: 'dispute@example.com' }, dispute: { id: 'dp_1', chargeId: charge.id, amount: charge.amount, reason: 'fraudulent' } },
    });
  });
});

describe('the sync method and the data objects', () => {
  it('API Direct: acknowledges, records the event ignored, applies and publishes nothing', async () => {
    const apiSecret = (await world.connectPayment('api-direct', { method: 'api' }))!;
    const { record: customer, events } = world.payment.createCustomer({ email: 'api@example.com' });
    await deliverInOrder(events, 'api-direct', apiSecret);
    expect(await store.getRecord(table(), recordsAt('api-direct', 'payment', 'customers'), customer.id)).toBeUndefined();
    expect(await store.getWebhookEventMark(table(), 'api-direct', 'payment', events[0]!.id)).toMatchObject({ state: 'ignored', note: 'sync method API Direct' });
    expect(publishedFor(events[0]!)).toHaveLength(0);
  });

  it('Both: applies at once, and a copy a sync wrote later is not overwritten by an older event', async () => {
    const bothSecret = (await world.connectPayment('both', { method: 'both' }))!;
    const { record: customer, events: created } = world.payment.createCustomer({ name: 'Synced' });
    await deliverInOrder(created, 'both', bothSecret);
    expect((await store.getRecord(table(), recordsAt('both', 'payment', 'customers'), customer.id))?.body.name).toBe('Synced');

    // An update from a minute ago arrives after a sync stored the current copy (no version, just when).
    world.payment.setNow(Date.now() - 60_000);
    const late = world.payment.update('customers', customer.id, { name: 'Older' }).events;
    world.payment.clock.resume();
    world.payment.advance(60_000);
    const body = { id: customer.id, name: 'Synced again' };
    await store.putRecordIfChanged(table(), recordsAt('both', 'payment', 'customers'), { id: customer.id, hash: recordHash(body), body, syncedAt: new Date().toISOString() });
    await world.payment.deliverWebhook({ url: world.paymentUrl('both'), event: late[0]!, secret: bothSecret, retries: 0, timestamp: Math.floor(Date.now() / 1000) });
    await world.settle();
    expect((await store.getRecord(table(), recordsAt('both', 'payment', 'customers'), customer.id))?.body.name).toBe('Synced again');
    // The event still happened: playbooks hear of it.
    expect(publishedFor(late[0]!)).toHaveLength(1);
  });

  it('stores only the data objects the settings select, and still publishes', async () => {
    const narrowSecret = (await world.connectPayment('narrow', { dataObjects: ['customers'] }))!;
    const { record: customer, events: created } = world.payment.createCustomer({ email: 'narrow@example.com' });
    const { record: subscription, events } = world.payment.createSubscription(customer.id);
    await deliverInOrder([...created, ...events], 'narrow', narrowSecret);
    expect(await store.getRecord(table(), recordsAt('narrow', 'payment', 'customers'), customer.id)).toBeDefined();
    expect(await store.getRecord(table(), recordsAt('narrow', 'payment', 'subscriptions'), subscription.id)).toBeUndefined();
    expect(publishedFor(events[0]!)[0]).toMatchObject({ type: 'subscription.created', accountId: 'narrow' });
  });
});

describe('event types the gateway does not apply', () => {
  it('acknowledges and records them as ignored, without retrying', async () => {
    const payout = world.payment.recordEvent('payout.paid', { id: 'po_1', object: 'payout', amount: 1000 });
    const card = world.site.recordEvent('card_added', { customer: { id: 'cus_card' }, card: { id: 'card_1' } });
    await deliverInOrder([payout]);
    await deliverBilling([card]);
    expect(await store.getWebhookEventMark(table(), 'acme', 'payment', payout.id)).toMatchObject({ state: 'ignored', attempts: 1, note: 'event type payout.paid is not applied by the gateway' });
    expect(await store.getWebhookEventMark(table(), 'acme', 'billing', card.id)).toMatchObject({ state: 'ignored', attempts: 1 });
    expect(world.gateway.runtime.local.queues.webhookEvents.deadLetters).toHaveLength(0);
  });
});

describe('failures, dead letters and replay', () => {
  const message = (event: PaymentEvent, accountId = 'acme'): WebhookEventMessage => ({
    accountId,
    connector: 'payment',
    eventId: event.id,
    eventType: event.type,
    receivedAt: new Date().toISOString(),
    payload: event as unknown as Record<string, unknown>,
  });
  const sqsEvent = (bodies: unknown[]): SQSEvent => ({
    Records: bodies.map((body, index) => ({
      messageId: `m${index}`,
      receiptHandle: `m${index}`,
      body: JSON.stringify(body),
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:local:000000000000:webhook-events',
      awsRegion: 'local',
    })),
  });

  it('reports only the failed messages of a batch', async () => {
    const good = world.payment.createCustomer({ email: 'good@example.com' }).events[0]!;
    const { record: customer } = world.payment.createCustomer({ email: 'unreachable@example.com' });
    const needsFetch = world.payment.createSubscription(customer.id).events[0]!;
    // The platform refuses the fetch (a revoked key): not worth retrying within the attempt.
    world.payment.faults.inject({ fault: { kind: 'status', status: 401 }, times: 1, pathPrefix: `/v1/customers/${customer.id}` });
    const response = await webhookEvent(sqsEvent([message(good), message(needsFetch), { not: 'a message' }]));
    world.payment.faults.clear();
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m1', 'm2']);
    expect(await store.getWebhookEventMark(table(), 'acme', 'payment', good.id)).toMatchObject({ state: 'applied' });
    const failed = await store.getWebhookEventMark(table(), 'acme', 'payment', needsFetch.id);
    expect(failed).toMatchObject({ state: 'pending', claimedUntil: 0 });
    expect(failed?.note).toContain('payment');
  });

  it('dead-letters an event that keeps failing, and applies it when an operator replays it after the fix', async () => {
    const { record: customer } = world.payment.createCustomer({ email: 'replay@example.com' });
    const { events } = world.payment.createSubscription(customer.id);
    // The key was revoked on the platform: the customer cannot be fetched until it is restored.
    world.payment.removeApiKey(world.paymentKey);
    await deliverInOrder(events);
    const queue = world.gateway.runtime.local.queues.webhookEvents;
    expect(queue.deadLetters).toHaveLength(1);
    expect(publishedFor(events[0]!)).toHaveLength(0);

    world.payment.addApiKey(world.paymentKey, { access: 'read' });
    const replay = await fetch(`${world.gateway.url}/local/queues/webhookEvents/redrive`, { method: 'POST' });
    expect(await replay.json()).toEqual({ redriven: 1 });
    await world.settle();
    expect(queue.deadLetters).toHaveLength(0);
    expect(publishedFor(events[0]!)).toHaveLength(1);
    expect(await store.getWebhookEventMark(table(), 'acme', 'payment', events[0]!.id)).toMatchObject({ state: 'applied', attempts: 6 });
  });

  it('applies an event once when two workers get it at the same time', async () => {
    const { events } = world.payment.createCustomer({ email: 'twice@example.com' });
    const gateway = world.gateway.runtime.local.gateway;
    const results = await Promise.allSettled([applyWebhookEvent(gateway, message(events[0]!), log), applyWebhookEvent(gateway, message(events[0]!), log)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await applyWebhookEvent(gateway, message(events[0]!), log)).toEqual({ outcome: 'duplicate' });
    expect(publishedFor(events[0]!)).toHaveLength(1);
  });

  it('re-applies an event whose worker died holding the claim, once the claim lapses', async () => {
    const { record: customer, events } = world.payment.createCustomer({ email: 'crash@example.com' });
    const gateway = world.gateway.runtime.local.gateway;
    const now = Math.floor(gateway.now() / 1000);
    // A worker claimed it long ago and never finished.
    await store.claimWebhookEvent(table(), { accountId: 'acme', connector: 'payment', eventId: events[0]!.id, eventType: events[0]!.type, now: now - CLAIM_LEASE_SECONDS - 1, leaseSeconds: CLAIM_LEASE_SECONDS, expiresAt: now + 1000 });
    expect(await applyWebhookEvent(gateway, message(events[0]!), log)).toMatchObject({ outcome: 'applied', written: 1 });
    expect(await store.getRecord(table(), recordsAt('acme', 'payment', 'customers'), customer.id)).toBeDefined();
    expect(await store.getWebhookEventMark(table(), 'acme', 'payment', events[0]!.id)).toMatchObject({ state: 'applied', attempts: 2 });
  });
});
