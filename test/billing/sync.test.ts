import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type * as z from 'zod';
import type { BillingSyncSettings } from '../../shared/billing/settings';
import { BillingSyncSettings as SettingsSchema } from '../../shared/billing/settings';
import { billingListQuery, billingSync } from '../../shared/billing/sync';
import { billingProblem } from '../../shared/billing/errors';
import { PlatformError } from '../../shared/http/platform-error';
import { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';
import type { NormalisedRecord, PageCursor, SyncSource, SyncWindow } from '../../shared/sync/sync-source';
import type { BillingTransaction } from '../../sandbox/billing-simulator';
import type { SimulatorRequest } from '../../sandbox/simulator-server';
import { pageThrough, startBillingSandbox, unique, type BillingSandbox } from './billing-sandbox';

const FULL: SyncWindow = { mode: 'full' };
const settings = (overrides: Partial<z.input<typeof SettingsSchema>> = {}): BillingSyncSettings => SettingsSchema.parse(overrides);

let box: BillingSandbox;
/** Every API request the simulator routed (injected faults are served before this and not seen). */
let seen: SimulatorRequest[];

beforeEach(async () => {
  box = await startBillingSandbox();
  seen = [];
  box.sim.onRequest((request) => {
    seen.push(request);
  });
});
afterEach(async () => {
  await box.stop();
});

/** ~250 records of every object, 2% of them without updated_at. */
function seedSite(): void {
  box.site.seedCustomers(250, { withoutUpdatedAt: 0.02 });
  box.site.seedSubscriptions({ withoutUpdatedAt: 0.02 });
  box.site.seedInvoices({ withoutUpdatedAt: 0.02, perSubscription: 2 });
}

function source(object: string, overrides: Partial<z.input<typeof SettingsSchema>> = {}, client = box.client()): SyncSource {
  return billingSync.source(object, client, settings(overrides));
}

const LISTS = { customers: 'customers', subscriptions: 'subscriptions', invoices: 'invoices', payments: 'transactions' } as const;

/** What the platform holds for an object, as the sync should see it (live records only). */
function platformRecords(object: keyof typeof LISTS): Array<{ id: string; updated_at?: number; deleted: boolean; status?: string; resource_version: number }> {
  const all = [...box.site.data.collection(LISTS[object]).values()];
  return object === 'payments' ? all.filter((record) => (record as BillingTransaction).type === 'payment') : all;
}

const queriesTo = (list: string) => seen.filter((request) => request.path === `/sites/acme/api/v2/${list}`).map((request) => request.query);

describe('full sync', () => {
  it.each(Object.keys(LISTS) as Array<keyof typeof LISTS>)('pages through every %s: no record missing, none twice, ceil(N/100) calls', async (object) => {
    seedSite();
    // A refund is a transaction too, but not a payment.
    const someTransaction = box.site.data.transactions.sorted('date')[0]!;
    box.site.data.transactions.put({ ...someTransaction, id: 'txn_refund_1', type: 'refund' });

    const expected = platformRecords(object);
    expect(expected.length).toBeGreaterThan(200);
    const { records, deletedIds, pages } = await pageThrough(source(object), FULL);

    const ids = records.map((record) => record.id);
    expect(ids).toHaveLength(expected.length);
    expect(unique(ids)).toEqual(unique(expected.map((record) => record.id)));
    expect(deletedIds).toEqual([]);
    expect(pages.map((page) => page.records.length).slice(0, -1).every((n) => n === 100)).toBe(true);
    expect(box.requests(LISTS[object])).toBe(Math.ceil(expected.length / 100));
    expect(box.requests('payments')).toBe(0);

    // Records without updated_at are emitted, with no updatedAt.
    const undated = expected.filter((record) => record.updated_at === undefined).map((record) => record.id);
    expect(undated.length).toBeGreaterThan(0);
    expect(unique(records.filter((record) => record.updatedAt === undefined).map((record) => record.id))).toEqual(unique(undated));

    for (const query of queriesTo(LISTS[object])) {
      expect(query.get('limit')).toBe('100');
      expect(query.get('include_deleted')).toBe('true');
      expect(query.has('updated_at[after]')).toBe(false);
      expect(query.has('sort_by[asc]')).toBe(false);
      expect(query.get('type[is]')).toBe(object === 'payments' ? 'payment' : null);
    }
    expect(queriesTo(LISTS[object]).map((query) => query.has('offset'))).toEqual(pages.map((_, index) => index > 0));
  });

  it('normalises every record into the matching shape, with the ids the store keys on', async () => {
    seedSite();
    const shapes = { customers: NormalisedCustomer, subscriptions: NormalisedSubscription, invoices: NormalisedInvoice, payments: NormalisedPayment };
    for (const object of Object.keys(shapes) as Array<keyof typeof shapes>) {
      const { records } = await pageThrough(source(object), FULL);
      const platform = new Map(platformRecords(object).map((record) => [record.id, record]));
      for (const record of records) {
        expect(shapes[object].parse(record.fields)).toEqual(record.fields);
        expect(record.sourceVersion).toBe(platform.get(record.id)!.resource_version);
        if (object === 'customers') expect(record.email).toMatch(/@example\.com$/);
        else expect(record.customerId).toMatch(/^cust_/);
      }
    }
    const payments = (await pageThrough(source('payments'), FULL)).records;
    const failed = payments.filter((record) => record.fields.outcome === 'failed');
    expect(failed.length).toBe(platformRecords('payments').filter((record) => record.status === 'failure').length);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]!.fields).toMatchObject({ status: 'failure', failureMessage: expect.any(String), invoiceId: expect.stringMatching(/^inv_/) });
  });

  it('reports rows marked deleted in deletedIds, not as records', async () => {
    seedSite();
    const customers = box.site.data.customers.sorted('created_at');
    const gone = [customers[3]!.id, customers[201]!.id];
    for (const id of gone) box.site.delete('customers', id);
    const { records, deletedIds } = await pageThrough(source('customers'), FULL);
    expect(deletedIds.sort()).toEqual([...gone].sort());
    expect(records.map((record) => record.id)).not.toContain(gone[0]);
    expect(records).toHaveLength(248);

    const subscription = box.site.data.subscriptions.sorted('created_at')[7]!;
    box.site.delete('subscriptions', subscription.id);
    expect((await pageThrough(source('subscriptions'), FULL)).deletedIds).toEqual([subscription.id]);
  });
});

describe('incremental sync', () => {
  it('returns only what changed after since: updates, new records and deletions, in one call', async () => {
    seedSite();
    const seededAt = box.sim.clock.nowSeconds();
    box.sim.advance(3_600_000);
    const customers = box.site.data.customers.sorted('created_at');
    const changed = [customers[5]!, customers[120]!, customers[249]!].map((customer) => box.site.update('customers', customer.id, { email: `new.${customer.id}@example.com` }).record);
    const created = box.site.createCustomer().record;
    const deleted = box.site.delete('customers', customers[60]!.id).record;

    const { records, deletedIds } = await pageThrough(source('customers'), { mode: 'incremental', since: seededAt });
    expect(unique(records.map((record) => record.id))).toEqual(unique([...changed.map((c) => c.id), created.id]));
    expect(records.find((record) => record.id === changed[0]!.id)!.email).toBe(`new.${changed[0]!.id}@example.com`);
    expect(deletedIds).toEqual([deleted.id]);
    expect(box.requests('customers')).toBe(1);
    const [query] = queriesTo('customers');
    expect(Object.fromEntries(query!)).toEqual({
      limit: '100',
      'updated_at[after]': String(seededAt),
      'sort_by[asc]': 'updated_at',
      include_deleted: 'true',
    });
  });

  it('makes exactly one call per object when nothing changed', async () => {
    seedSite();
    const since = box.sim.clock.nowSeconds();
    for (const object of billingSync.objects) {
      const page = await source(object).fetchPage({ mode: 'incremental', since }, undefined);
      expect(page).toMatchObject({ records: [], deletedIds: [] });
    }
    expect(seen).toHaveLength(4);
    expect(Object.values(LISTS).map((list) => box.requests(list))).toEqual([1, 1, 1, 1]);
  });

  it('reads a record again when it changes mid-paging (it moves to the end of the updated_at order)', async () => {
    box.site.seedCustomers(250, { withoutUpdatedAt: 0.02 });
    const earliest = box.site.data.customers.sorted('created_at')[0]!.created_at;
    let edited: { id: string; version: number } | undefined;
    box.sim.onRequest(() => {
      if (seen.length !== 2) return;
      const first = box.site.data.customers.sorted('updated_at').find((customer) => customer.updated_at !== undefined)!;
      box.sim.advance(1_000);
      const { record } = box.site.update('customers', first.id, { first_name: 'Edited' });
      edited = { id: record.id, version: record.resource_version };
    });
    const { records } = await pageThrough(source('customers'), { mode: 'incremental', since: earliest - 1 });
    expect(records).toHaveLength(246); // 245 with updated_at, one of them twice
    expect(unique(records.map((record) => record.id)).size).toBe(245);
    const copies = records.filter((record) => record.id === edited!.id);
    expect(copies).toHaveLength(2);
    expect(copies[1]).toMatchObject({ sourceVersion: edited!.version, fields: { name: expect.stringMatching(/^Edited /) } });
  });

  it('refuses milliseconds where epoch seconds belong', async () => {
    await expect(source('customers').fetchPage({ mode: 'incremental', since: Date.now() }, undefined)).rejects.toThrow(/seconds/);
    expect(seen).toHaveLength(0);
  });
});

describe('a full sync followed by an incremental one, like the engine runs them', () => {
  /** A store as the engine keeps it: by id, a newer source version wins, deletions remove. */
  function applyTo(store: Map<string, NormalisedRecord>, run: { records: NormalisedRecord[]; deletedIds: string[] }): void {
    for (const record of run.records) {
      const stored = store.get(record.id);
      if (!stored || (stored.sourceVersion ?? 0) <= (record.sourceVersion ?? 0)) store.set(record.id, record);
    }
    for (const id of run.deletedIds) store.delete(id);
  }

  it('loses no change made while the full sync was paging', async () => {
    box.site.seedCustomers(250, { withoutUpdatedAt: 0.02 });
    const sorted = box.site.data.customers.sorted('created_at');
    const onFirstPage = sorted[10]!.id;
    const onLastPage = sorted[240]!.id;
    const deletedEarly = sorted[50]!.id;
    const runStartedAt = box.sim.clock.nowSeconds();
    box.sim.onRequest(() => {
      if (seen.length !== 2) return; // while the second page is being served
      box.sim.advance(1_000);
      box.site.update('customers', onFirstPage, { email: 'first.page.changed@example.com' });
      box.site.update('customers', onLastPage, { email: 'last.page.changed@example.com' });
      box.site.delete('customers', deletedEarly);
    });

    const store = new Map<string, NormalisedRecord>();
    const full = await pageThrough(source('customers'), FULL);
    applyTo(store, full);
    // The full run read the first page before the change: on its own it would be stale.
    expect(full.records.find((record) => record.id === onFirstPage)!.email).not.toBe('first.page.changed@example.com');
    expect(full.records.find((record) => record.id === onLastPage)!.email).toBe('last.page.changed@example.com');

    box.sim.advance(600_000);
    const overlapSeconds = 60;
    applyTo(store, await pageThrough(source('customers'), { mode: 'incremental', since: runStartedAt - overlapSeconds }));

    const live = [...box.site.data.customers.values()].filter((customer) => !customer.deleted);
    expect(unique([...store.keys()])).toEqual(unique(live.map((customer) => customer.id)));
    for (const customer of live) {
      expect(store.get(customer.id)).toMatchObject({ email: customer.email, sourceVersion: customer.resource_version });
    }
    expect(store.has(deletedEarly)).toBe(false);
  });
});

describe('subscription status filter', () => {
  beforeEach(() => {
    box.site.seedCustomers(250, { withoutUpdatedAt: 0 });
    box.site.seedSubscriptions({ withoutUpdatedAt: 0 });
  });

  it.each(['active', 'cancelled'] as const)('sends status[in]=["%s"] in full mode and gets only those', async (status) => {
    const { records } = await pageThrough(source('subscriptions', { subscriptionStatus: status }), FULL);
    const expected = platformRecords('subscriptions').filter((subscription) => subscription.status === status);
    expect(expected.length).toBeGreaterThan(10);
    expect(unique(records.map((record) => record.id))).toEqual(unique(expected.map((subscription) => subscription.id)));
    expect(unique(queriesTo('subscriptions').map((query) => query.get('status[in]')))).toEqual(unique([JSON.stringify([status])]));
  });

  it('sends no status filter for all', async () => {
    const { records } = await pageThrough(source('subscriptions', { subscriptionStatus: 'all' }), FULL);
    expect(records).toHaveLength(250);
    expect(queriesTo('subscriptions').some((query) => query.has('status[in]'))).toBe(false);
  });

  it('sends no filter in incremental mode, so a subscription that left the filter is seen, and keeps says to drop it', async () => {
    const active = platformRecords('subscriptions').filter((subscription) => subscription.status === 'active');
    const since = box.sim.clock.nowSeconds();
    box.sim.advance(60_000);
    box.site.update('subscriptions', active[0]!.id, { status: 'cancelled' });
    box.site.update('subscriptions', active[1]!.id, { mrr: 12_345 });

    const activeOnly = source('subscriptions', { subscriptionStatus: 'active' });
    const { records } = await pageThrough(activeOnly, { mode: 'incremental', since });
    expect(queriesTo('subscriptions')[0]!.has('status[in]')).toBe(false);
    const byId = new Map(records.map((record) => [record.id, record]));
    expect(byId.get(active[0]!.id)!.fields.status).toBe('cancelled');
    expect(activeOnly.keeps!(byId.get(active[0]!.id)!)).toBe(false);
    expect(activeOnly.keeps!(byId.get(active[1]!.id)!)).toBe(true);

    const cancelledOnly = source('subscriptions', { subscriptionStatus: 'cancelled' });
    expect(cancelledOnly.keeps!(byId.get(active[0]!.id)!)).toBe(true);
    expect(source('subscriptions').keeps!(byId.get(active[1]!.id)!)).toBe(true);
    expect(source('customers').keeps).toBeUndefined();
  });
});

describe('checkpoints', () => {
  it('resumes from a saved cursor in a new source and client: the rest, nothing twice', async () => {
    seedSite();
    const first = await source('customers').fetchPage(FULL, undefined);
    expect(first.next).toBeDefined();
    const saved = JSON.parse(JSON.stringify(first.next)) as PageCursor;

    // A new process: a new client and a new source, only the checkpoint's cursor carried over.
    const rest = await pageThrough(source('customers', {}, box.client()), FULL, saved);
    const ids = [...first.records, ...rest.records].map((record) => record.id);
    expect(ids).toHaveLength(250);
    expect(unique(ids).size).toBe(250);
    expect(box.requests('customers')).toBe(3);
  });

  it('resumes an incremental run with the window it started with', async () => {
    box.site.seedCustomers(250, { withoutUpdatedAt: 0 });
    const since = box.site.data.customers.sorted('created_at')[0]!.created_at - 1;
    const first = await source('customers').fetchPage({ mode: 'incremental', since }, undefined);
    const saved = JSON.parse(JSON.stringify(first.next)) as PageCursor;
    expect(saved).toMatchObject({ mode: 'incremental', since });

    // The engine may compute a later since on resume; the offset belongs to the started listing.
    const rest = await pageThrough(source('customers'), { mode: 'incremental', since: since + 86_400 }, saved);
    expect(unique([...first.records, ...rest.records].map((record) => record.id)).size).toBe(250);
    expect(unique(queriesTo('customers').map((query) => query.get('updated_at[after]')))).toEqual(unique([String(since)]));
  });

  it('refuses a cursor from another kind of run or another connector', async () => {
    seedSite();
    const first = await source('customers').fetchPage(FULL, undefined);
    await expect(source('customers').fetchPage({ mode: 'incremental', since: 1_700_000_000 }, first.next)).rejects.toThrow(/full run/);
    await expect(source('customers').fetchPage(FULL, { starting_after: 'cus_1' })).rejects.toThrow(/cursor/);
    expect(box.requests('customers')).toBe(1);
  });
});

describe('faults', () => {
  const customersPath = '/sites/acme/api/v2/customers';

  it.each([
    ['429 without Retry-After', { kind: 'status', status: 429 }],
    ['503', { kind: 'status', status: 503 }],
    ['a dropped connection', { kind: 'drop' }],
    ['truncated JSON once', { kind: 'truncated' }],
  ] as const)('retries %s and completes the page-through', async (_name, fault) => {
    box.site.seedCustomers(250);
    box.sim.faults.inject({ fault, pathPrefix: customersPath });
    const { records } = await pageThrough(source('customers'), FULL);
    expect(unique(records.map((record) => record.id)).size).toBe(250);
    expect(box.requests('customers')).toBe(4); // 3 pages + 1 retry
    expect(box.sleeps).toHaveLength(1);
  });

  it('gives up on a platform that hangs, after the client timeout, as a retryable timeout', async () => {
    box.site.seedCustomers(5);
    box.sim.faults.inject({ fault: { kind: 'timeout' }, pathPrefix: customersPath, times: 1 });
    const page = await source('customers', {}, box.client({ timeoutMs: 150 })).fetchPage(FULL, undefined);
    expect(page.records).toHaveLength(5);
    expect(box.requests('customers')).toBe(2);
  });

  it.each([
    ['truncated JSON', 'truncated', /truncated or malformed JSON/],
    ['an HTML page', 'html', /not JSON \(text\/html/],
  ] as const)('fails with a clear, non-retried-forever error on %s', async (_name, kind, reason) => {
    box.site.seedCustomers(5);
    box.sim.faults.inject({ fault: { kind }, pathPrefix: customersPath, times: 5 });
    const error = (await source('customers').fetchPage(FULL, undefined).catch((e: unknown) => e)) as PlatformError;
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ kind: 'invalid_response', platform: 'billing', path: '/api/v2/customers', attempts: 2 });
    expect(error.message).toMatch(reason);
    expect(box.requests('customers')).toBe(2);
    expect(billingProblem(error)).toMatchObject({ health: 'degraded', reason: expect.stringMatching(reason) });
  });

  it('names a malformed record by row and field, without its values, and does not retry', async () => {
    box.site.seedCustomers(5);
    box.site.seedSubscriptions({ statuses: ['active'] });
    box.site.seedInvoices();
    const transaction = box.site.data.transactions.sorted('date')[2]!;
    box.site.data.transactions.put({ ...transaction, amount: 'sixty-four dollars' } as unknown as BillingTransaction);
    const error = (await source('payments').fetchPage(FULL, undefined).catch((e: unknown) => e)) as PlatformError;
    expect(error).toBeInstanceOf(PlatformError);
    expect(error.kind).toBe('invalid_response');
    expect(error.message).toContain(`list row 2 (transaction ${transaction.id})`);
    expect(error.message).toContain('amount');
    expect(error.message).not.toContain('sixty-four');
    expect(box.requests('transactions')).toBe(1);
  });

  it('fails a page whose row has no usable id', async () => {
    box.site.seedCustomers(3);
    box.site.seedSubscriptions();
    box.site.data.subscriptions.put({ ...box.site.data.subscriptions.sorted('created_at')[0]!, id: '' });
    await expect(source('subscriptions').fetchPage(FULL, undefined)).rejects.toThrow(/list row 0 has no subscription with an id/);
  });
});

describe('billingListQuery', () => {
  it('builds each listing as the platform takes it', () => {
    const all = settings();
    expect(billingListQuery('payments', { mode: 'full' }, all, undefined)).toEqual({ limit: 100, 'type[is]': 'payment', include_deleted: true });
    expect(billingListQuery('subscriptions', { mode: 'full' }, settings({ subscriptionStatus: 'active' }), '["1","sub_1"]')).toEqual({
      limit: 100,
      'status[in]': '["active"]',
      include_deleted: true,
      offset: '["1","sub_1"]',
    });
    expect(billingListQuery('invoices', { mode: 'incremental', since: 1_717_200_000.9 }, all, undefined)).toEqual({
      limit: 100,
      'updated_at[after]': 1_717_200_000,
      'sort_by[asc]': 'updated_at',
      include_deleted: true,
    });
    // The platform takes 10-digit seconds only: an early since becomes the first 10-digit second.
    expect(billingListQuery('customers', { mode: 'incremental', since: 0 }, all, undefined)['updated_at[after]']).toBe(1_000_000_000);
    // A planned slice's first page asks for fewer; its next pages (an offset) a whole page.
    const slice = { from: 1_717_200_000, to: 1_717_300_000, firstPage: 37 };
    expect(billingListQuery('customers', { mode: 'full' }, all, undefined, slice).limit).toBe(37);
    expect(billingListQuery('customers', { mode: 'full' }, all, '["1","cus_1"]', slice).limit).toBe(100);
  });

  it('knows the four billing objects and no other', () => {
    expect(billingSync.objects).toEqual(['customers', 'subscriptions', 'invoices', 'payments']);
    expect(() => billingSync.source('charges', box.client(), settings())).toThrow(/unknown data object/);
  });
});
