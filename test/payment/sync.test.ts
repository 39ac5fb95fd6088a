import { FullSyncNeeded } from '../../shared/sync/sync-source';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PaymentSimulator } from '../../sandbox/payment-simulator';
import { PlatformError } from '../../shared/http/platform-error';
import { PAYMENT_OBJECTS, PaymentSyncSettings, type PaymentObject } from '../../shared/payment/settings';
import {
  LISTING_VERSION_MARGIN_SECONDS,
  checkEventWindow,
  EVENT_RETENTION_SECONDS,
  eventChanges,
  eventFilter,
  isListedItem,
  EventWindowExceeded,
  MAX_DELETIONS_PER_EVENTS_RUN,
  paymentSource,
  paymentSync,
  type PlatformEvent,
} from '../../shared/payment/sync';
import { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';
import type { SyncWindow } from '../../shared/sync/sync-source';
import { applyRuns, clientFor, ids, pageAll, requestCount, startSimulator } from './support';

const FROZEN_AT = Date.parse('2026-03-02T09:00:00Z');
const DAY = 86_400;
const FULL: SyncWindow = { mode: 'full' };

let sim: PaymentSimulator;
let key: string;

beforeEach(async () => {
  ({ sim, key } = await startSimulator());
  // A frozen clock: events share seconds, as they do on the platform when changes come in bursts.
  sim.setNow(FROZEN_AT);
});
afterEach(async () => {
  await sim.stop();
});

function settings(input: Partial<PaymentSyncSettings> = {}): PaymentSyncSettings {
  return PaymentSyncSettings.parse(input);
}

function source(object: PaymentObject, syncSettings = settings()) {
  return paymentSource(object, clientFor(sim, key), syncSettings, { now: () => sim.now() });
}

/** The simulator's own ids for an object: what a complete sync must return. */
function storedIds(object: PaymentObject): string[] {
  return [...sim.state.test.collection(object).values()].map((record) => record.id).sort();
}

function seedAll(): void {
  sim.seedCustomers(250);
  sim.seedSubscriptions();
  sim.seedInvoices();
}

const nowSeconds = (): number => sim.clock.nowSeconds();
const SCHEMA = {
  customers: NormalisedCustomer,
  subscriptions: NormalisedSubscription,
  invoices: NormalisedInvoice,
  payment_intents: NormalisedPayment,
  charges: NormalisedPayment,
} as const;

describe('full sync', () => {
  it('pages every object completely: no record missing, none twice, ceil(N/100) calls', async () => {
    seedAll();
    expect(paymentSync.objects).toEqual(PAYMENT_OBJECTS);
    for (const object of PAYMENT_OBJECTS) {
      const expected = storedIds(object);
      expect(expected.length).toBeGreaterThan(100);
      const before = requestCount(sim, `GET /v1/${object}`);
      const run = await pageAll(paymentSync.source(object, clientFor(sim, key), settings()), FULL);
      const seen = ids(run.records);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual(expected);
      expect(requestCount(sim, `GET /v1/${object}`) - before).toBe(Math.ceil(expected.length / 100));
      expect(run.deletedIds).toEqual([]);
      for (const record of run.records) {
        expect(SCHEMA[object].safeParse(record.fields).success).toBe(true);
        // Versioned by the platform clock at the listing, less a margin: an event after it always ranks newer.
        expect(record.sourceVersion).toBe(Math.floor(sim.now() / 1000) - LISTING_VERSION_MARGIN_SECONDS);
      }
    }
    expect(sim.totalRequests()).toBe(PAYMENT_OBJECTS.reduce((sum, object) => sum + Math.ceil(storedIds(object).length / 100), 0));
  });

  it('lists subscriptions with status=all, so canceled ones are seen', async () => {
    sim.seedCustomers(40);
    sim.seedSubscriptions();
    const canceled = [...sim.state.test.subscriptions.values()].filter((s) => s.status === 'canceled').map((s) => s.id);
    expect(canceled.length).toBeGreaterThan(0);
    const run = await pageAll(source('subscriptions'), FULL);
    expect(ids(run.records)).toEqual(expect.arrayContaining(canceled));
    expect(run.records.filter((r) => r.fields.state === 'cancelled').length).toBeGreaterThanOrEqual(canceled.length);
  });

  it('a slice whose first page asks for fewer (a planned slice ending its pages on whole pages) then pages 100 at a time', async () => {
    sim.seedCustomers(250);
    const range = { from: 0, to: nowSeconds() + 1, firstPage: 37 };
    const first = await source('customers').fetchPage(FULL, undefined, range);
    expect(first.records).toHaveLength(37);
    const second = await source('customers').fetchPage(FULL, first.next, range);
    expect(second.records).toHaveLength(100);
    const rest = await pageAll(source('customers'), FULL, second.next);
    const all = [...ids(first.records), ...ids(second.records), ...ids(rest.records)];
    expect(all.sort()).toEqual(storedIds('customers'));
  });

  it('a NEW source instance resumes from a saved cursor and yields exactly the rest', async () => {
    sim.seedCustomers(250);
    const first = await source('customers').fetchPage(FULL, undefined);
    expect(first.records).toHaveLength(100);
    const saved = JSON.stringify(first.next);

    const rest = await pageAll(source('customers'), FULL, JSON.parse(saved));
    const all = [...ids(first.records), ...ids(rest.records)];
    expect(new Set(all).size).toBe(250);
    expect(all.sort()).toEqual(storedIds('customers'));
    expect(rest.pages).toBe(2);
  });

  it('carries on when the record a cursor names was deleted meanwhile (a draft invoice)', async () => {
    sim.seedCustomers(150);
    sim.seedSubscriptions();
    sim.seedInvoices();
    const first = await source('invoices').fetchPage(FULL, undefined);
    const gone = first.records.at(-1)!.id;
    sim.state.test.invoices.remove(gone);

    const rest = await pageAll(source('invoices'), FULL, first.next);
    const all = new Set([...ids(first.records), ...ids(rest.records)]);
    for (const id of storedIds('invoices')) expect(all.has(id)).toBe(true);
    // One refused request (unknown cursor), then the same position by its second.
    expect(requestCount(sim, 'GET /v1/invoices')).toBe(1 + 1 + rest.pages);
  });

  it('restarts paging from the top when handed a cursor it cannot use', async () => {
    sim.seedCustomers(120);
    const run = await pageAll(source('customers'), FULL, { kind: 'events', after: 'evt_x', afterCreated: 1, tie: { second: 1, emitted: [], resolved: [] } });
    expect(ids(run.records).sort()).toEqual(storedIds('customers'));
  });
});

describe('incremental sync (events)', () => {
  it('returns only what changed since the window start, versioned by the event time', async () => {
    sim.seedCustomers(250);
    sim.advance(3_600_000);
    const since = nowSeconds();
    const all = [...sim.state.test.customers.values()];
    sim.update('customers', all[3]!.id, { email: 'moved@example.com' });
    sim.update('customers', all[200]!.id, { name: 'Grace B. Hopper' });
    sim.advance(5_000);
    const created = sim.createCustomer({ email: 'new.customer@example.com' }).record;
    const deleted = all[17]!.id;
    sim.delete('customers', deleted);

    const run = await pageAll(source('customers'), { mode: 'incremental', since });
    expect(ids(run.records).sort()).toEqual([all[3]!.id, all[200]!.id, created.id].sort());
    expect(run.deletedIds).toEqual([deleted]);
    const moved = run.records.find((r) => r.id === all[3]!.id)!;
    expect(moved.email).toBe('moved@example.com');
    expect(moved.sourceVersion).toBe(since);
    expect(moved.updatedAt).toBe(new Date(since * 1000).toISOString());
    expect(run.records.find((r) => r.id === created.id)!.sourceVersion).toBe(since + 5);
    // Oldest change first, as the engine asks of event pages.
    expect(run.records.at(-1)!.id).toBe(created.id);
    expect(requestCount(sim, 'GET /v1/events')).toBe(1);
  });

  it('nothing changed: exactly one call per object', async () => {
    seedAll();
    sim.advance(60_000);
    for (const object of PAYMENT_OBJECTS) {
      const page = await source(object).fetchPage({ mode: 'incremental', since: nowSeconds() - 30 }, undefined);
      expect(page).toMatchObject({ records: [], deletedIds: [] });
    }
    expect(requestCount(sim, 'GET /v1/events')).toBe(PAYMENT_OBJECTS.length);
    expect(sim.totalRequests()).toBe(PAYMENT_OBJECTS.length);
  });

  it('a record changed while a full sync pages is not lost once the incremental run follows', async () => {
    sim.seedCustomers(250);
    const byAge = [...sim.state.test.customers.sorted('created')]; // oldest first
    const newest = byAge.at(-1)!.id; // on the first page
    const oldest = byAge[0]!.id; // on the last page
    const deletedEarly = byAge.at(-2)!.id; // on the first page, deleted after it was read
    let listCalls = 0;
    const stop = sim.onRequest((request) => {
      if (request.path !== '/v1/customers') return;
      listCalls += 1;
      if (listCalls !== 2) return;
      sim.update('customers', newest, { email: 'changed.after.read@example.com' });
      sim.update('customers', oldest, { email: 'changed.before.read@example.com' });
      sim.createCustomer({ email: 'created.mid.sync@example.com' });
      sim.delete('customers', deletedEarly);
    });
    // The engine's watermark is taken when the full run starts, then moved back by its overlap.
    const runStartedAt = nowSeconds();
    const full = await pageAll(source('customers'), FULL);
    stop();
    sim.advance(60_000);
    const incremental = await pageAll(source('customers'), { mode: 'incremental', since: runStartedAt - 60 });

    const stored = applyRuns([full, incremental]);
    const platform = [...sim.state.test.customers.values()];
    expect([...stored.keys()].sort()).toEqual(platform.map((c) => c.id).sort());
    for (const customer of platform) expect(stored.get(customer.id)?.email).toBe(customer.email);
  });

  it('a cancellation is a cancelled subscription, a customer deletion is a deletion', async () => {
    sim.seedCustomers(20);
    sim.seedSubscriptions({ statuses: ['active'] });
    sim.advance(60_000);
    const since = nowSeconds();
    const [first, second] = [...sim.state.test.subscriptions.values()];
    sim.delete('subscriptions', first!.id);
    sim.delete('customers', second!.customer);

    const subscriptions = await pageAll(source('subscriptions'), { mode: 'incremental', since });
    expect(subscriptions.deletedIds).toEqual([]);
    expect(ids(subscriptions.records).sort()).toEqual([first!.id, second!.id].sort());
    for (const record of subscriptions.records) expect(record.fields).toMatchObject({ state: 'cancelled', status: 'canceled' });

    const customers = await pageAll(source('customers'), { mode: 'incremental', since });
    expect(customers.deletedIds).toEqual([second!.customer]);
    expect(customers.records).toEqual([]);
  });

  it('a deleted draft invoice is reported deleted; an upcoming invoice (no id) and disputes are skipped', async () => {
    sim.seedCustomers(5);
    sim.seedSubscriptions({ statuses: ['active'] });
    sim.seedInvoices();
    sim.advance(60_000);
    const since = nowSeconds();
    const draft = [...sim.state.test.invoices.values()][0]!;
    sim.state.test.invoices.remove(draft.id);
    sim.recordEvent('invoice.deleted', { ...draft, status: 'draft' });
    sim.recordEvent('invoice.upcoming', { object: 'invoice', customer: draft.customer, amount_due: 4900, status: 'draft' });
    const charge = [...sim.state.test.charges.values()][0]!;
    sim.recordEvent('charge.dispute.created', { id: 'dp_1', object: 'dispute', charge: charge.id, amount: charge.amount, status: 'needs_response' });

    const invoices = await pageAll(source('invoices'), { mode: 'incremental', since });
    expect(invoices).toMatchObject({ records: [], deletedIds: [draft.id] });
    const charges = await pageAll(source('charges'), { mode: 'incremental', since });
    expect(charges).toMatchObject({ records: [], deletedIds: [] });
  });

  it('several changes to one record in one second: the record is read as it is now, once', async () => {
    sim.seedCustomers(3);
    sim.seedSubscriptions({ statuses: ['active'] });
    sim.seedInvoices();
    sim.advance(60_000);
    const since = nowSeconds();
    const subscription = [...sim.state.test.subscriptions.values()][0]!;
    const invoice = sim.createInvoice(subscription.id, 'paid').record; // created, paid, payment_succeeded: one second
    const charge = [...sim.state.test.charges.values()].find((c) => c.invoice !== invoice.id)!;
    sim.update('charges', charge.id, { refunded: true, amount_refunded: charge.amount }); // updated + refunded

    const invoices = await pageAll(source('invoices'), { mode: 'incremental', since });
    expect(ids(invoices.records)).toEqual([invoice.id]);
    expect(invoices.records[0]!.sourceVersion).toBe(since);
    expect(requestCount(sim, `GET /v1/invoices/${invoice.id}`)).toBe(1);

    const charges = await pageAll(source('charges'), { mode: 'incremental', since });
    const refunded = charges.records.filter((r) => r.id === charge.id);
    expect(refunded).toHaveLength(1);
    expect(refunded[0]!.fields.outcome).toBe('refunded');

    const intents = await pageAll(source('payment_intents'), { mode: 'incremental', since });
    expect(intents.records).toHaveLength(1); // one event: its snapshot, no extra read
    expect(requestCount(sim, 'GET /v1/payment_intents/*')).toBe(0);
  });

  it('same-second changes split across pages still end with the current state', async () => {
    sim.seedCustomers(200);
    sim.advance(60_000);
    const since = nowSeconds();
    const customers = [...sim.state.test.customers.values()];
    const targets = customers.slice(0, 12);
    for (const target of targets) sim.update('customers', target.id, { email: `stale.${target.id}@example.com` });
    for (const other of customers.slice(12, 160)) sim.update('customers', other.id, { name: 'Renamed' });
    for (const target of targets) sim.update('customers', target.id, { email: `current.${target.id}@example.com` });

    // The list cannot order changes within one second. Check the data really holds the hard case:
    // a stale snapshot listed on the first page and the current one on the second.
    const listed = sim.events().map((event) => ({ id: (event.data.object as { id: string }).id, email: (event.data.object as { email: string }).email }));
    const hardCase = targets.some((target) => {
      const stale = listed.findIndex((e) => e.id === target.id && e.email.startsWith('stale.'));
      const current = listed.findIndex((e) => e.id === target.id && e.email.startsWith('current.'));
      return stale < 100 && current >= 100;
    });
    expect(hardCase).toBe(true);

    const run = await pageAll(source('customers'), { mode: 'incremental', since });
    expect(run.pages).toBe(2);
    const stored = applyRuns([run]);
    expect(stored.size).toBe(160);
    for (const target of targets) {
      expect(stored.get(target.id)?.email).toBe(`current.${target.id}@example.com`);
      // Never a staler state after a newer one for the same record:
      expect(run.records.filter((r) => r.id === target.id).at(-1)?.email).toBe(`current.${target.id}@example.com`);
    }
  });

  it('a record deleted after an older change on a later page stays deleted', async () => {
    sim.seedCustomers(200);
    const full = await pageAll(source('customers'), FULL);
    sim.advance(60_000);
    const since = nowSeconds();
    const customers = [...sim.state.test.customers.values()];
    const doomed = customers[0]!;
    sim.update('customers', doomed.id, { email: 'last.change@example.com' });
    sim.advance(1_000);
    for (const other of customers.slice(1, 151)) sim.update('customers', other.id, { name: 'Renamed' });
    sim.advance(1_000);
    sim.delete('customers', doomed.id);

    const incremental = await pageAll(source('customers'), { mode: 'incremental', since });
    expect(incremental.pages).toBe(2);
    expect(incremental.deletedIds).toEqual([doomed.id]);
    expect(ids(incremental.records)).not.toContain(doomed.id);
    const stored = applyRuns([full, incremental]);
    expect(stored.has(doomed.id)).toBe(false);
    expect(stored.size).toBe(199);
  });

  it('too many deletions to remember: asks the engine for a full sync instead', async () => {
    const customers = sim.seedCustomers(MAX_DELETIONS_PER_EVENTS_RUN + 150);
    sim.advance(60_000);
    const since = nowSeconds();
    for (const customer of customers) sim.delete('customers', customer.id);
    const error = await pageAll(source('customers'), { mode: 'incremental', since }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FullSyncNeeded);
  });

  it('a NEW source instance resumes an incremental run from a saved cursor', async () => {
    sim.seedCustomers(250);
    sim.advance(60_000);
    const since = nowSeconds();
    for (const [index, customer] of [...sim.state.test.customers.values()].entries()) {
      if (index % 2 === 0) sim.advance(1_000); // two changes per second
      sim.update('customers', customer.id, { name: `Renamed ${index}` });
    }
    const window: SyncWindow = { mode: 'incremental', since };
    const uninterrupted = await pageAll(source('customers'), window);

    const first = await source('customers').fetchPage(window, undefined);
    const rest = await pageAll(source('customers'), window, JSON.parse(JSON.stringify(first.next)));
    const resumed = [...ids(first.records), ...ids(rest.records)];
    expect(new Set(resumed).size).toBe(250);
    expect(resumed.sort()).toEqual(ids(uninterrupted.records).sort());
    expect(1 + rest.pages).toBe(uninterrupted.pages);
  });

  it('throws EventWindowExceeded when the window starts more than 30 days back, without calling', async () => {
    const tooOld = nowSeconds() - 31 * DAY;
    const error = await source('invoices').fetchPage({ mode: 'incremental', since: tooOld }, undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventWindowExceeded);
    // What the sync engine reads to fall back to a full sync:
    expect(error).toBeInstanceOf(FullSyncNeeded);
    expect(sim.totalRequests()).toBe(0);
    const page = await source('invoices').fetchPage({ mode: 'incremental', since: nowSeconds() - 29 * DAY }, undefined);
    expect(page.records).toEqual([]);
  });
});

describe('customer filter', () => {
  function customersWith(statuses: string[]): string[] {
    const wanted = new Set<string>();
    for (const subscription of sim.state.test.subscriptions.values()) {
      if (statuses.includes(subscription.status)) wanted.add(subscription.customer);
    }
    return [...wanted].sort();
  }

  beforeEach(() => {
    const customers = sim.seedCustomers(250);
    sim.seedSubscriptions();
    // Some customers hold two active subscriptions: each must still come once per page.
    sim.seedSubscriptions({ customerIds: customers.slice(0, 30).map((c) => c.id), statuses: ['active'] });
  });

  it('active subscriptions only: each customer with an active subscription, read through expanded subscriptions', async () => {
    const run = await pageAll(source('customers', settings({ customerFilter: 'active_subscriptions' })), FULL);
    const expected = customersWith(['active']);
    expect(new Set(ids(run.records))).toEqual(new Set(expected));
    for (const record of run.records) expect(NormalisedCustomer.safeParse(record.fields).success).toBe(true);
    const activeSubscriptions = [...sim.state.test.subscriptions.values()].filter((s) => s.status === 'active').length;
    expect(requestCount(sim, 'GET /v1/subscriptions')).toBe(Math.ceil(activeSubscriptions / 100));
    expect(requestCount(sim, 'GET /v1/customers')).toBe(0);
  });

  it('by status: every listed status in turn; a deleted customer is a deletion', async () => {
    const gone = [...sim.state.test.subscriptions.values()].find((s) => s.status === 'past_due')!.customer;
    sim.delete('customers', gone); // its subscriptions are canceled
    const run = await pageAll(source('customers', settings({ customerFilter: 'by_status', subscriptionStatuses: ['past_due', 'unpaid', 'canceled'] })), FULL);
    const expected = customersWith(['past_due', 'unpaid', 'canceled']).filter((id) => id !== gone);
    expect(new Set(ids(run.records))).toEqual(new Set(expected));
    expect(run.deletedIds).toContain(gone);
  });

  it('the simulator expands data.customer only (an additive sandbox change) and refuses other paths', async () => {
    const client = clientFor(sim, key);
    const page = await client.request({ method: 'GET', path: '/v1/invoices', query: { limit: 1, 'expand[0]': 'data.customer' } });
    expect(page.body).toMatchObject({ data: [] });
    const listed = await client.request<{ data: Array<{ customer: { object: string } }> }>({
      method: 'GET',
      path: '/v1/subscriptions',
      query: { limit: 2, 'expand[]': 'data.customer' },
    });
    expect(listed.body.data.map((s) => s.customer.object)).toEqual(['customer', 'customer']);
    const refused = await client.request({ method: 'GET', path: '/v1/subscriptions', query: { 'expand[0]': 'data.plan' } }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ kind: 'invalid_request', status: 400 });
  });

  it('incremental: customer events come as they are; a subscription entering the filter brings its customer', async () => {
    sim.advance(60_000);
    const since = nowSeconds();
    const active = new Set(customersWith(['active']));
    const outside = [...sim.state.test.customers.values()].filter((c) => !active.has(c.id));
    const [edited, returning, pastDue] = outside;
    sim.update('customers', edited!.id, { name: 'Edited Without Subscription' });
    sim.createSubscription(returning!.id, { status: 'active' });
    sim.createSubscription(pastDue!.id, { status: 'past_due' });

    const run = await pageAll(source('customers', settings({ customerFilter: 'active_subscriptions' })), { mode: 'incremental', since });
    expect(ids(run.records).sort()).toEqual([edited!.id, returning!.id].sort());
    expect(requestCount(sim, `GET /v1/customers/${returning!.id}`)).toBe(1);
    expect(requestCount(sim, 'GET /v1/events')).toBe(1);
  });
});

describe('faults', () => {
  beforeEach(() => {
    sim.seedCustomers(150);
  });

  it('429 without Retry-After, 503 and a dropped connection are retried; the page arrives', async () => {
    sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 1, pathPrefix: '/v1/customers' });
    sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 1, pathPrefix: '/v1/customers' });
    sim.faults.inject({ fault: { kind: 'drop' }, times: 1, pathPrefix: '/v1/customers' });
    const run = await pageAll(source('customers'), FULL);
    expect(ids(run.records).sort()).toEqual(storedIds('customers'));
    expect(requestCount(sim, 'GET /v1/customers')).toBe(2 + 3);
  });

  it('one HTML page (a proxy hiccup) is retried once', async () => {
    sim.faults.inject({ fault: { kind: 'html' }, times: 1, pathPrefix: '/v1/customers' });
    const page = await source('customers').fetchPage(FULL, undefined);
    expect(page.records).toHaveLength(100);
  });

  it.each([
    ['truncated', /truncated or malformed JSON/],
    ['html', /not JSON \(text\/html/],
  ] as const)('%s JSON twice is a clear invalid_response error', async (kind, reason) => {
    sim.faults.inject({ fault: { kind }, times: 2, pathPrefix: '/v1/customers' });
    const error = await source('customers').fetchPage(FULL, undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ kind: 'invalid_response', retryable: false, attempts: 2 });
    expect((error as PlatformError).message).toMatch(reason);
  });

  it('a record of the wrong shape fails the page with a clear error naming the field', async () => {
    const customer = [...sim.state.test.customers.values()][0]!;
    sim.state.test.customers.put({ ...customer, email: 42 as unknown as string });
    const error = await pageAll(source('customers'), FULL).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ kind: 'invalid_response' });
    expect((error as PlatformError).message).toMatch(new RegExp(`${customer.id}.*email`));
  });

  it('a listed record without its created second fails the page, naming where, and is not retried', async () => {
    const customer = [...sim.state.test.customers.values()][0]!;
    sim.state.test.customers.put({ ...customer, created: 'yesterday' as unknown as number });
    const before = requestCount(sim, 'GET /v1/customers');
    const error = await pageAll(source('customers'), FULL).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ kind: 'invalid_response', retryable: false });
    expect((error as PlatformError).message).toMatch(/data\.\d+: expected a record with an id and a whole-second created time/);
    expect((error as PlatformError).message).not.toContain('yesterday');
    expect(requestCount(sim, 'GET /v1/customers') - before).toBeLessThanOrEqual(2);
  });

  it('isListedItem: an object with a non-empty id and a whole-second created', () => {
    expect(isListedItem({ id: 'cus_1', created: 1_700_000_000, email: 'a@example.com' })).toBe(true);
    for (const value of [null, 'cus_1', { id: '', created: 1 }, { id: 'cus_1' }, { id: 'cus_1', created: 1.5 }, { id: 7, created: 1 }, { created: 1 }]) {
      expect(isListedItem(value)).toBe(false);
    }
  });

  it('simulator rate limits (25/s for test keys) are absorbed by retries', async () => {
    sim.setRateLimit({ perSecond: 1, burst: 1 });
    // The frozen clock never refills the bucket; each retry moves it on by a second.
    const client = clientFor(sim, key, { sleep: async () => sim.advance(1_000) });
    const run = await pageAll(paymentSource('customers', client, settings(), { now: () => sim.now() }), FULL);
    expect(run.records).toHaveLength(150);
    expect(sim.rateLimited()).toBeGreaterThan(0);
  });
});

describe('decisions (pure)', () => {
  const event = (id: string, created: number, objectId: string, type = 'customer.updated'): PlatformEvent => ({
    id,
    type,
    created,
    data: { object: { object: 'customer', id: objectId } },
  });
  const asCustomerEvent = (e: PlatformEvent) => ({ id: e.data.object.id!, action: e.type === 'customer.deleted' ? ('deletion' as const) : ('snapshot' as const) });

  it('newest first: the newest change per record is kept; an older second is left out; one second twice is read as it is now', () => {
    const { changes, tie } = eventChanges(
      [event('evt_5', 50, 'cus_a'), event('evt_4', 50, 'cus_b', 'customer.deleted'), event('evt_3', 40, 'cus_a'), event('evt_2', 30, 'cus_c'), event('evt_1', 30, 'cus_c')],
      asCustomerEvent,
      undefined,
    );
    expect(changes.map((c) => [c.id, c.action, c.second])).toEqual([
      ['cus_a', 'snapshot', 50],
      ['cus_b', 'deletion', 50],
      ['cus_c', 'current', 30],
    ]);
    expect(changes[0]!.event?.id).toBe('evt_5');
    expect(tie).toEqual({ second: 30, emitted: [], resolved: ['cus_c'] });
  });

  it('what the previous page took in its last second is remembered across the page break', () => {
    const carried = { second: 30, emitted: ['cus_a'], resolved: ['cus_b'] };
    const { changes, tie } = eventChanges(
      [event('evt_9', 30, 'cus_a'), event('evt_8', 30, 'cus_b'), event('evt_7', 20, 'cus_a'), event('evt_6', 20, 'cus_d')],
      asCustomerEvent,
      carried,
    );
    expect(changes.map((c) => [c.id, c.action])).toEqual([
      ['cus_a', 'current'],
      ['cus_d', 'snapshot'],
    ]);
    expect(tie).toEqual({ second: 20, emitted: ['cus_d'], resolved: [] });
  });

  it('event filters: exact names go as types[n], wildcards as type', () => {
    expect(eventFilter('customers', undefined)).toEqual({ 'types[0]': 'customer.created', 'types[1]': 'customer.updated', 'types[2]': 'customer.deleted' });
    expect(Object.keys(eventFilter('customers', ['active'])).length).toBeLessThanOrEqual(20);
    expect(eventFilter('subscriptions', undefined)).toEqual({ type: 'customer.subscription.*' });
    expect(eventFilter('charges', undefined)).toEqual({ type: 'charge.*' });
  });

  it('the event window: up to 30 days back, less an hour of margin', () => {
    const now = Date.parse('2026-03-02T09:00:00Z');
    const nowS = now / 1000;
    expect(() => checkEventWindow(nowS - EVENT_RETENTION_SECONDS + 7_200, now)).not.toThrow();
    expect(() => checkEventWindow(nowS - EVENT_RETENTION_SECONDS + 60, now)).toThrow(EventWindowExceeded);
  });
});
