import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as z from 'zod/mini';
import { forgetVerifiedKeys } from '../../shared/api-keys/playbook-caller';
import type { ConnectorName } from '../../shared/connectors';
import {
  CustomerSubscriptionAnswer,
  FailedPaymentsPage,
  InvoicesAnswer,
  NextPaymentAnswer,
  PaymentsAnswer,
  SubscribersPage,
} from '../../shared/reads/views';
import type { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription } from '../../shared/sync/normalised';
import { recordHash } from '../../shared/sync/record-hash';
import type { Table } from '../../shared/store/store';
import { watchCommands } from '../support/dynamo';
import { startTestGateway, type TestGateway } from '../support/local-runtime';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

const iso = (text: string) => new Date(text).toISOString();
const SYNCED = iso('2030-01-10T08:00:00Z');

/** Writes one normalised record the way the sync engine does. */
async function put(
  table: Table,
  accountId: string,
  connector: ConnectorName,
  object: string,
  body: NormalisedCustomer | NormalisedSubscription | NormalisedInvoice | NormalisedPayment,
  syncedAt = SYNCED,
): Promise<void> {
  const owner = 'email' in body && object === 'customers' ? { email: body.email } : 'customerId' in body ? { customerId: body.customerId } : {};
  await store.putRecordIfChanged(table, recordsAt(accountId, connector, object, 'legacy'), { id: body.id, hash: recordHash(body), body, ...owner, syncedAt });
}

const subscription = (id: string, customerId: string, fields: Partial<NormalisedSubscription> = {}): NormalisedSubscription => ({
  id,
  customerId,
  state: 'active',
  status: 'active',
  ...fields,
});
const payment = (id: string, customerId: string, fields: Partial<NormalisedPayment> = {}): NormalisedPayment => ({
  id,
  customerId,
  amount: 2500,
  currency: 'USD',
  outcome: 'succeeded',
  status: 'succeeded',
  ...fields,
});

describe('playbook reads over HTTP', () => {
  let gateway: TestGateway;
  let table: Table;
  let acmeKey: string;
  let otherKey: string;

  async function createKey(accountId: string): Promise<{ key: string; keyId: string }> {
    const response = await gateway.call('POST', `/api/v1/accounts/${accountId}/api-keys`, {
      token: await gateway.userToken(accountId),
      body: { name: 'playbook' },
    });
    expect(response.status).toBe(201);
    return (await response.json()) as { key: string; keyId: string };
  }

  async function read<S extends z.ZodMiniType>(schema: S, path: string, key = acmeKey): Promise<z.infer<S>> {
    const response = await gateway.call('GET', path, { token: key });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    // Every answer matches the schema the OpenAPI document publishes.
    return schema.parse(JSON.parse(text));
  }

  async function expectProblem(response: Response, status: number): Promise<Record<string, unknown>> {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ status, type: expect.stringMatching(/^urn:integration-gateway:problem:/) });
    return problem;
  }

  beforeAll(async () => {
    gateway = await startTestGateway();
    table = gateway.runtime.local.gateway.table;
    await gateway.enableAccount('acme');
    await gateway.enableAccount('other');
    acmeKey = (await createKey('acme')).key;
    otherKey = (await createKey('other')).key;

    // acme: Ana on both platforms (same email), Bo on billing only.
    await put(table, 'acme', 'billing', 'customers', { id: 'cus_1', email: 'ana@example.com', name: 'Ana' });
    await put(table, 'acme', 'billing', 'subscriptions', subscription('sub_old', 'cus_1', { state: 'cancelled', status: 'cancelled', planName: 'Starter' }));
    await put(
      table,
      'acme',
      'billing',
      'subscriptions',
      subscription('sub_pro', 'cus_1', {
        planId: 'pro-monthly',
        planName: 'Pro',
        amount: 4900,
        currency: 'EUR',
        currentPeriodEnd: iso('2030-02-01'),
        nextBillingAt: iso('2030-02-01'),
      }),
      iso('2030-01-09T00:00:00Z'),
    );
    await put(table, 'acme', 'billing', 'invoices', { id: 'inv_1', customerId: 'cus_1', status: 'paid', total: 4900, issuedAt: iso('2029-12-01') });
    await put(table, 'acme', 'billing', 'invoices', { id: 'inv_2', customerId: 'cus_1', status: 'paid', total: 4900, issuedAt: iso('2030-01-01') });
    await put(table, 'acme', 'billing', 'invoices', { id: 'inv_0', customerId: 'cus_1', status: 'paid', total: 900, issuedAt: iso('2029-11-01') });
    await put(table, 'acme', 'payment', 'customers', { id: 'cus_P1', email: 'Ana@Example.com' });
    await put(
      table,
      'acme',
      'payment',
      'subscriptions',
      subscription('sub_P1', 'cus_P1', { state: 'trialing', status: 'trialing', planName: 'Add-on', nextBillingAt: iso('2030-01-20'), amount: 500, currency: 'USD' }),
    );
    await put(table, 'acme', 'payment', 'charges', payment('ch_1', 'cus_P1', { at: iso('2029-11-05') }));
    await put(table, 'acme', 'payment', 'charges', payment('ch_2', 'cus_P1', { at: iso('2029-12-05'), outcome: 'failed', status: 'failed', failureMessage: 'Your card was declined.' }));
    await put(table, 'acme', 'payment', 'charges', payment('ch_3', 'cus_P1', { at: iso('2030-01-05') }));
    // The same payments seen as payment intents: must not be counted twice.
    await put(table, 'acme', 'payment', 'payment_intents', payment('pi_3', 'cus_P1', { at: iso('2030-01-05') }));
    await put(table, 'acme', 'billing', 'customers', { id: 'cus_2', email: 'bo@example.com' });
    await put(table, 'acme', 'billing', 'subscriptions', subscription('sub_bo', 'cus_2', { state: 'non_renewing', status: 'non_renewing', planName: 'Basic' }));
    await put(table, 'acme', 'billing', 'invoices', { id: 'inv_bo', customerId: 'cus_2', status: 'payment_due', amountDue: 1500, currency: 'EUR', dueAt: iso('2030-01-15') });

    // other: the same customer id, a different customer.
    await put(table, 'other', 'billing', 'customers', { id: 'cus_1', email: 'zed@example.org' });
    await put(table, 'other', 'billing', 'subscriptions', subscription('sub_zed', 'cus_1', { planName: 'Other plan' }));

    // A finished sync of acme's billing subscriptions and customers.
    for (const object of ['subscriptions', 'customers']) {
      const claimed = await store.startSyncRun(table, 'acme', 'billing', object, { runId: `run-${object}`, now: new Date(SYNCED), leaseSeconds: 60 });
      await store.finishSyncRun(table, { ...claimed!, lastSucceededAt: object === 'customers' ? iso('2030-01-10T07:00:00Z') : SYNCED });
    }
  });
  afterAll(() => gateway.stop());

  describe('one customer', () => {
    it('subscription by platform id: the current one, with plan name and status, and how fresh it is', async () => {
      const answer = await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/cus_1/subscription?connector=billing');
      expect(answer).toEqual({
        customers: [{ connector: 'billing', id: 'cus_1', email: 'ana@example.com', name: 'Ana' }],
        subscription: {
          connector: 'billing',
          id: 'sub_pro',
          customerId: 'cus_1',
          planId: 'pro-monthly',
          planName: 'Pro',
          status: 'active',
          state: 'active',
          cancelling: false,
          amount: 4900,
          currency: 'EUR',
          currentPeriodEnd: iso('2030-02-01'),
          nextBillingAt: iso('2030-02-01'),
        },
        freshness: { syncedAt: iso('2030-01-09T00:00:00Z'), lastSyncSucceededAt: { billing: iso('2030-01-10T07:00:00Z') } },
      });
    });

    it('by email: every connector that has the customer, or the one asked for', async () => {
      const both = await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/ana%40example.com/subscription');
      expect(both.customers.map((c) => `${c.connector}:${c.id}`).sort()).toEqual(['billing:cus_1', 'payment:cus_P1']);
      expect(both.subscription?.id).toBe('sub_pro'); // active beats trialing
      expect(both.freshness.lastSyncSucceededAt).toEqual({ billing: iso('2030-01-10T07:00:00Z'), payment: null });

      const payment = await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/ANA@example.com/subscription?connector=payment');
      expect(payment.customers).toEqual([{ connector: 'payment', id: 'cus_P1', email: 'Ana@Example.com' }]);
      expect(payment.subscription).toMatchObject({ id: 'sub_P1', planName: 'Add-on', state: 'trialing' });
    });

    it('a customer with no running subscription gets null with the reason', async () => {
      await put(table, 'acme', 'billing', 'customers', { id: 'cus_gone', email: 'gone@example.com' });
      await put(table, 'acme', 'billing', 'subscriptions', subscription('sub_gone', 'cus_gone', { state: 'cancelled', status: 'cancelled' }));
      await put(table, 'acme', 'billing', 'customers', { id: 'cus_new', email: 'new@example.com' });
      expect(await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/cus_gone/subscription')).toMatchObject({ subscription: null, reason: 'none_current' });
      expect(await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/new@example.com/subscription')).toMatchObject({
        subscription: null,
        reason: 'no_subscriptions',
      });
    });

    it('next payment: the earliest renewal across platforms, else an open invoice', async () => {
      const ana = await read(NextPaymentAnswer, '/api/v1/playbook/customers/ana@example.com/next-payment');
      expect(ana.nextPayment).toEqual({
        at: iso('2030-01-20'),
        amount: 500,
        currency: 'USD',
        source: { kind: 'subscription', connector: 'payment', id: 'sub_P1', field: 'nextBillingAt' },
      });
      expect(ana.freshness.syncedAt).toBe(SYNCED);

      const bo = await read(NextPaymentAnswer, '/api/v1/playbook/customers/cus_2/next-payment?connector=billing');
      expect(bo.nextPayment).toEqual({
        at: iso('2030-01-15'),
        amount: 1500,
        currency: 'EUR',
        source: { kind: 'invoice', connector: 'billing', id: 'inv_bo', field: 'dueAt' },
      });
    });

    it('payments: tier plus history newest first, charges only (their payment intents are the same payments)', async () => {
      const answer = await read(PaymentsAnswer, '/api/v1/playbook/customers/cus_P1/payments?limit=2');
      expect(answer.tier).toEqual({ connector: 'payment', subscriptionId: 'sub_P1', state: 'trialing', planName: 'Add-on', amount: 500, currency: 'USD' });
      expect(answer.payments.map((p) => p.id)).toEqual(['ch_3', 'ch_2']);
      expect(answer.payments[1]).toMatchObject({ object: 'charges', outcome: 'failed', failureMessage: 'Your card was declined.', amount: 2500 });
      const all = await read(PaymentsAnswer, '/api/v1/playbook/customers/cus_P1/payments');
      expect(all.payments.map((p) => p.id)).toEqual(['ch_3', 'ch_2', 'ch_1']);
    });

    it('invoices newest first, limited', async () => {
      const answer = await read(InvoicesAnswer, '/api/v1/playbook/customers/cus_1/invoices?connector=billing&limit=2');
      expect(answer.invoices.map((i) => i.id)).toEqual(['inv_2', 'inv_1']);
      expect(answer.invoices[0]).toEqual({ connector: 'billing', id: 'inv_2', customerId: 'cus_1', status: 'paid', total: 4900, issuedAt: iso('2030-01-01') });
    });

    it('customer reads use the indexes only: no scan', async () => {
      const watch = watchCommands(gateway.runtime.local.dynamo.client);
      await read(NextPaymentAnswer, '/api/v1/playbook/customers/ana@example.com/next-payment');
      await read(PaymentsAnswer, '/api/v1/playbook/customers/cus_1/payments');
      expect(watch.sent('ScanCommand')).toBe(0);
      expect(watch.sent('QueryCommand')).toBeGreaterThan(0);
    });

    it('an unknown customer is a 404 problem that does not echo the address', async () => {
      const response = await gateway.call('GET', '/api/v1/playbook/customers/nobody@example.com/subscription', { token: acmeKey });
      const problem = await expectProblem(response, 404);
      expect(JSON.stringify(problem)).not.toContain('nobody');
      await expectProblem(await gateway.call('GET', '/api/v1/playbook/customers/cus_2/invoices?connector=payment', { token: acmeKey }), 404);
    });
  });

  describe('accounts are apart', () => {
    it('the same customer id answers with each key’s own account', async () => {
      const acme = await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/cus_1/subscription', acmeKey);
      const other = await read(CustomerSubscriptionAnswer, '/api/v1/playbook/customers/cus_1/subscription', otherKey);
      expect(acme.subscription?.planName).toBe('Pro');
      expect(other.subscription?.planName).toBe('Other plan');
      expect(other.customers).toEqual([{ connector: 'billing', id: 'cus_1', email: 'zed@example.org' }]);
      const otherPayments = await read(PaymentsAnswer, '/api/v1/playbook/customers/cus_1/payments', otherKey);
      expect(otherPayments.payments).toEqual([]);
    });

    it("another account's customers are unknown", async () => {
      await expectProblem(await gateway.call('GET', '/api/v1/playbook/customers/ana@example.com/subscription', { token: otherKey }), 404);
      await expectProblem(await gateway.call('GET', '/api/v1/playbook/customers/cus_P1/payments', { token: otherKey }), 404);
    });

    it('a path naming another account does not exist: the account comes from the key', async () => {
      await expectProblem(await gateway.call('GET', '/api/v1/playbook/accounts/acme/subscribers?connector=billing', { token: otherKey }), 404);
    });
  });

  describe('lists', () => {
    beforeAll(async () => {
      for (let i = 0; i < 23; i += 1) {
        const id = `cus_r${String(i).padStart(2, '0')}`;
        if (i % 2 === 0) await put(table, 'acme', 'payment', 'customers', { id, email: `${id}@example.com` });
        const state = i % 3 === 0 ? 'cancelled' : i % 5 === 0 ? 'trialing' : 'active';
        await put(table, 'acme', 'payment', 'subscriptions', subscription(`sub_r${String(i).padStart(2, '0')}`, id, { state, status: state, planName: 'Pro', nextBillingAt: iso('2030-03-01') }));
      }
      await put(table, 'other', 'payment', 'subscriptions', subscription('sub_zz', 'cus_zz', { planName: 'Other plan' }));
      await put(table, 'acme', 'billing', 'payments', payment('tx_1', 'cus_1', { outcome: 'failed', status: 'failure', at: iso('2030-01-02'), invoiceId: 'inv_2' }));
      await put(table, 'acme', 'billing', 'payments', payment('tx_2', 'cus_1', { outcome: 'failed', status: 'timeout', at: iso('2029-06-01') }));
      await put(table, 'acme', 'billing', 'payments', payment('tx_3', 'cus_2', { at: iso('2030-01-03') }));
      await put(table, 'acme', 'billing', 'payments', payment('tx_4', 'cus_2', { outcome: 'failed', status: 'failure', at: iso('2030-01-04') }));
    });

    async function allSubscribers(key: string, query: string): Promise<{ ids: string[]; pages: z.infer<typeof SubscribersPage>[] }> {
      const pages: z.infer<typeof SubscribersPage>[] = [];
      let cursor: string | undefined;
      do {
        const page = await read(SubscribersPage, `/api/v1/playbook/subscribers?${query}${cursor ? `&cursor=${cursor}` : ''}`, key);
        pages.push(page);
        cursor = page.nextCursor;
      } while (cursor && pages.length < 50);
      return { ids: pages.flatMap((page) => page.subscribers.map((s) => s.subscriptionId)), pages };
    }

    it('cursor paging returns every active subscriber once, with emails when known', async () => {
      const expected = Array.from({ length: 23 }, (_, i) => i)
        .filter((i) => !(i % 3 === 0) && !(i % 5 === 0))
        .map((i) => `sub_r${String(i).padStart(2, '0')}`);
      const { ids, pages } = await allSubscribers(acmeKey, 'connector=payment&state=active&limit=4');
      expect(ids).toEqual(expected);
      expect(pages.length).toBe(Math.ceil(expected.length / 4));
      const subscribers = pages.flatMap((page) => page.subscribers);
      expect(subscribers.find((s) => s.subscriptionId === 'sub_r02')).toEqual({
        customerId: 'cus_r02',
        email: 'cus_r02@example.com',
        subscriptionId: 'sub_r02',
        planName: 'Pro',
        state: 'active',
        status: 'active',
        cancelling: false,
        nextBillingAt: iso('2030-03-01'),
      });
      expect(subscribers.find((s) => s.subscriptionId === 'sub_r01')?.email).toBeUndefined();
      expect(pages[0]!.freshness).toMatchObject({ syncedAt: SYNCED, lastSyncSucceededAt: { payment: null } });
    });

    it("'current' takes every running state; the default state is active", async () => {
      const current = await allSubscribers(acmeKey, 'connector=payment&state=current&limit=100');
      expect(current.ids).toContain('sub_r05');
      expect(current.ids).not.toContain('sub_r03');
      const byDefault = await read(SubscribersPage, '/api/v1/playbook/subscribers?connector=payment');
      expect(byDefault.subscribers.every((s) => s.state === 'active')).toBe(true);
    });

    it("a cursor never reaches another account's records", async () => {
      const first = await read(SubscribersPage, '/api/v1/playbook/subscribers?connector=payment&limit=1');
      expect(first.nextCursor).toBeDefined();
      const { ids } = await allSubscribers(otherKey, `connector=payment&limit=100&cursor=${first.nextCursor}`);
      expect(ids).toEqual(['sub_zz']);
      expect((await allSubscribers(otherKey, 'connector=payment')).ids).toEqual(['sub_zz']);
    });

    it('failed payments with customer, amount and invoice, optionally since a time', async () => {
      const all = await read(FailedPaymentsPage, '/api/v1/playbook/payments/failed?connector=billing');
      expect(all.payments.map((p) => p.paymentId)).toEqual(['tx_1', 'tx_2', 'tx_4']);
      expect(all.payments[0]).toEqual({
        customerId: 'cus_1',
        email: 'ana@example.com',
        paymentId: 'tx_1',
        object: 'payments',
        amount: 2500,
        currency: 'USD',
        invoiceId: 'inv_2',
        status: 'failure',
        at: iso('2030-01-02'),
      });
      const recent = await read(FailedPaymentsPage, `/api/v1/playbook/payments/failed?connector=billing&since=${encodeURIComponent('2030-01-01T00:00:00Z')}&limit=1`);
      expect(recent.payments.map((p) => p.paymentId)).toEqual(['tx_1']);
      const rest = await read(FailedPaymentsPage, `/api/v1/playbook/payments/failed?connector=billing&since=2030-01-01T00:00:00Z&cursor=${recent.nextCursor}`);
      expect(rest.payments.map((p) => p.paymentId)).toEqual(['tx_4']);
      expect(rest.nextCursor).toBeUndefined();
      const charges = await read(FailedPaymentsPage, '/api/v1/playbook/payments/failed?connector=payment');
      expect(charges.payments.map((p) => `${p.object}:${p.paymentId}`)).toEqual(['charges:ch_2']);
      expect((await read(FailedPaymentsPage, '/api/v1/playbook/payments/failed?connector=billing', otherKey)).payments).toEqual([]);
    });
  });

  describe('refusals', () => {
    it('missing, garbage, dashboard and revoked keys: 401 problem', async () => {
      const path = '/api/v1/playbook/customers/cus_1/subscription';
      await expectProblem(await gateway.call('GET', path), 401);
      await expectProblem(await gateway.call('GET', path, { token: 'igk_garbage' }), 401);
      await expectProblem(await gateway.call('GET', path, { token: `${acmeKey.slice(0, -4)}AAAA` }), 401);
      await expectProblem(await gateway.call('GET', path, { token: await gateway.userToken('acme') }), 401);

      const { key, keyId } = await createKey('acme');
      expect((await gateway.call('GET', path, { token: key })).status).toBe(200);
      const revoked = await gateway.call('DELETE', `/api/v1/accounts/acme/api-keys/${keyId}`, { token: await gateway.userToken('acme') });
      expect(revoked.status).toBe(204);
      forgetVerifiedKeys(); // revocation is otherwise cached for up to a minute
      await expectProblem(await gateway.call('GET', path, { token: key }), 401);
    });

    it('bad query parameters: 400 problem naming the parameter', async () => {
      const bad = [
        ['/api/v1/playbook/customers/cus_1/subscription?connector=crm', 'connector'],
        ['/api/v1/playbook/customers/cus_1/subscription?conector=billing', '(query)'],
        ['/api/v1/playbook/customers/cus_1/payments?limit=0', 'limit'],
        ['/api/v1/playbook/customers/cus_1/payments?limit=101', 'limit'],
        ['/api/v1/playbook/customers/cus_1/invoices?limit=ten', 'limit'],
        ['/api/v1/playbook/subscribers', 'connector'],
        ['/api/v1/playbook/subscribers?connector=billing&state=dormant', 'state'],
        ['/api/v1/playbook/subscribers?connector=billing&cursor=not*a*cursor', 'cursor'],
        ['/api/v1/playbook/subscribers?connector=billing&cursor=AA', 'cursor'],
        ['/api/v1/playbook/payments/failed?connector=billing&since=yesterday', 'since'],
      ] as const;
      for (const [path, parameter] of bad) {
        const problem = await expectProblem(await gateway.call('GET', path, { token: acmeKey }), 400);
        expect(problem.errors, path).toEqual(expect.arrayContaining([expect.objectContaining({ path: parameter })]));
      }
    });

    it('a bad key wins over a bad parameter: nothing is said to strangers', async () => {
      await expectProblem(await gateway.call('GET', '/api/v1/playbook/subscribers?connector=crm'), 401);
    });
  });
});
