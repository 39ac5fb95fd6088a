import * as z from 'zod/mini';
import { playbookAccountOf, type Caller } from '../caller';
import { problems } from '../problem';
import { route } from '../route';
import { PageCursor } from './params';
import { customerReference } from '../../reads/customer-records';
import {
  listFailedPayments,
  listSubscribers,
  readCustomerSubscription,
  readInvoices,
  readNextPayment,
  readPayments,
  type ReadScope,
} from '../../reads/playbook-reads';
import type { Gateway } from '../../gateway';
import type { Logger } from '../../log/logger';
import { SubscriptionState } from '../../sync/normalised';
import {
  CustomerSubscriptionAnswer,
  FailedPaymentsPage,
  InvoicesAnswer,
  NextPaymentAnswer,
  PaymentsAnswer,
  PlaybookConnectorName,
  SubscribersPage,
} from '../../reads/views';

/**
 * Reads for playbooks, answered from synced data. The account is the API key's, never a path
 * parameter, so a key can only ever read its own account. Every answer carries its freshness.
 */

const CustomerParams = z.object({
  customer: z
    .string()
    .check(
      z.regex(/^[^\s/]{1,254}$/, 'a platform customer id or an email address'),
      z.describe("The customer's id on the platform, or their email address (anything with an '@')"),
    ),
});

const connector = PlaybookConnectorName.check(z.describe('Which platform: billing or payment'));
const limit = (fallback: number) =>
  z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), fallback).check(z.describe(`How many items, 1-100 (default ${fallback})`));

const CustomerQuery = z.strictObject({
  connector: z.optional(connector).check(z.describe('Look on this platform only (default: every platform that has the customer)')),
});
const CustomerListQuery = z.extend(CustomerQuery, { limit: limit(20) });

const SubscribersQuery = z.strictObject({
  connector,
  state: z
    ._default(z.enum([...SubscriptionState.options, 'current']), 'active')
    .check(z.describe("Subscription state (default active); 'current' means active, trialing, non_renewing or past_due")),
  limit: limit(50),
  cursor: PageCursor,
});

const FailedPaymentsQuery = z.strictObject({
  connector,
  since: z.optional(z.iso.datetime({ offset: true })).check(z.describe('Only payments that failed at or after this time')),
  limit: limit(50),
  cursor: PageCursor,
});

function scopeOf(caller: Caller, gateway: Gateway, log: Logger): ReadScope {
  return { table: gateway.table, accountId: playbookAccountOf(caller), log };
}

function found<T>(answer: T | undefined): T {
  // The reference is not echoed: it may be an email address.
  if (answer === undefined) throw problems.notFound('No synced customer matches that id or email address.');
  return answer;
}

export const playbookRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/playbook/customers/{customer}/subscription',
    operationId: 'getCustomerSubscription',
    summary: "The customer's current subscription with plan name and status (subscription status questions)",
    access: 'playbook',
    params: CustomerParams,
    quota: { kind: 'reads' },
    query: CustomerQuery,
    response: { status: 200, description: 'The current subscription, or null with the reason', schema: CustomerSubscriptionAnswer },
    async handle({ params, query, caller, gateway, log }) {
      return found(await readCustomerSubscription(scopeOf(caller, gateway, log), customerReference(params.customer), query.connector));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/customers/{customer}/next-payment',
    operationId: 'getCustomerNextPayment',
    summary: 'When the customer pays next, how much, and from which subscription or invoice (next payment due questions)',
    access: 'playbook',
    params: CustomerParams,
    quota: { kind: 'reads' },
    query: CustomerQuery,
    response: { status: 200, description: 'The next payment, or null with the reason', schema: NextPaymentAnswer },
    async handle({ params, query, caller, gateway, log }) {
      return found(await readNextPayment(scopeOf(caller, gateway, log), customerReference(params.customer), query.connector));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/customers/{customer}/payments',
    operationId: 'getCustomerPayments',
    summary: "The customer's tier (plan and amount) and payment history, newest first (Qualification Agent)",
    access: 'playbook',
    params: CustomerParams,
    quota: { kind: 'reads' },
    query: CustomerListQuery,
    response: { status: 200, description: 'Tier and payments', schema: PaymentsAnswer },
    async handle({ params, query, caller, gateway, log }) {
      return found(await readPayments(scopeOf(caller, gateway, log), customerReference(params.customer), query));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/customers/{customer}/invoices',
    operationId: 'getCustomerInvoices',
    summary: "The customer's invoices, newest first (post-purchase follow-up)",
    access: 'playbook',
    params: CustomerParams,
    quota: { kind: 'reads' },
    query: CustomerListQuery,
    response: { status: 200, description: 'Invoices', schema: InvoicesAnswer },
    async handle({ params, query, caller, gateway, log }) {
      return found(await readInvoices(scopeOf(caller, gateway, log), customerReference(params.customer), query));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/subscribers',
    operationId: 'listSubscribers',
    summary: 'Subscribers in a state, paged, with plan and next billing date (renewal reminders)',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'reads' },
    query: SubscribersQuery,
    response: { status: 200, description: 'One page of subscribers', schema: SubscribersPage },
    async handle({ query, caller, gateway, log }) {
      const { cursor: startKey, ...options } = query;
      return listSubscribers(scopeOf(caller, gateway, log), { ...options, ...(startKey ? { startKey } : {}) });
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/payments/failed',
    operationId: 'listFailedPayments',
    summary: 'Failed payments with customer, amount and invoice, paged (dunning follow-up)',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'reads' },
    query: FailedPaymentsQuery,
    response: { status: 200, description: 'One page of failed payments', schema: FailedPaymentsPage },
    async handle({ query, caller, gateway, log }) {
      const { cursor: startKey, since, ...options } = query;
      return listFailedPayments(scopeOf(caller, gateway, log), {
        ...options,
        ...(since ? { since: new Date(since) } : {}),
        ...(startKey ? { startKey } : {}),
      });
    },
  }),
];
