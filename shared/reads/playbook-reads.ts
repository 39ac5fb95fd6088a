import type * as z from 'zod/mini';
import type { Logger } from '../log/logger';
import type { SyncCheckpoint, SyncedRecord } from '../store/items';
import type { Table } from '../store/table-access';
import { NormalisedCustomer, NormalisedInvoice, NormalisedPayment, NormalisedSubscription, type SubscriptionState } from '../sync/normalised';
import { readCustomerRecords, type CustomerRecords, type CustomerReference, type FoundCustomer } from './customer-records';
import { encodeCursor } from './cursor';
import { readFilteredPage } from './filtered-page';
import { readPlaces, type PlaceOf } from './record-place';
import { freshnessOf, UsedData } from './freshness';
import { isFailedPayment, invoicesNewestFirst, paymentHistory, paymentObjectCandidates, paymentObjectOf } from './payments';
import { PLAYBOOK_CONNECTORS, readBodies, type PlaybookConnector, type ReadRecord } from './read-record';
import { currentSubscription, isCurrent, nextPayment, noSubscriptionReason, tierOf } from './subscriptions';
import {
  customerView,
  failedPaymentView,
  invoiceView,
  paymentView,
  subscriberView,
  subscriptionView,
  type CustomerSubscriptionAnswer,
  type FailedPaymentsPage,
  type InvoicesAnswer,
  type NextPaymentAnswer,
  type PaymentsAnswer,
  type SubscribersPage,
} from './views';
import * as store from '../store/store';

/**
 * The playbook reads, answered from synced data: a thin I/O layer around the decisions in
 * subscriptions.ts and payments.ts. Every read is scoped to one account (the caller's key's) and
 * says how fresh it is. A customer read returns undefined when nobody matches the reference.
 */
export interface ReadScope {
  table: Table;
  accountId: string;
  log?: Logger;
}

/** Which connectors to look on: the one asked for, else every one that has the customer. */
function connectorsFor(connector: PlaybookConnector | undefined): readonly PlaybookConnector[] {
  return connector ? [connector] : PLAYBOOK_CONNECTORS;
}

/** The customer's records of some objects, and the account's sync checkpoints, read together. */
async function lookUp(
  scope: ReadScope,
  reference: CustomerReference,
  connector: PlaybookConnector | undefined,
  objectsOf: (connector: PlaybookConnector) => readonly string[],
): Promise<{ found: CustomerRecords; checkpoints: SyncCheckpoint[] } | undefined> {
  const [found, checkpoints] = await Promise.all([
    readCustomerRecords(scope.table, scope.accountId, reference, connectorsFor(connector), objectsOf, scope.log),
    store.listSyncCheckpoints(scope.table, scope.accountId),
  ]);
  return found.customers.length === 0 ? undefined : { found, checkpoints };
}

/** The records of one object, in their normalised shape; bodies that do not fit are logged and left out. */
function bodiesOf<T>(scope: ReadScope, records: readonly SyncedRecord[], objects: readonly string[], shape: z.core.$ZodType<T>): ReadRecord<T>[] {
  const { read, unreadableIds } = readBodies(
    records.filter((record) => objects.includes(record.object)),
    shape,
  );
  if (unreadableIds.length > 0) scope.log?.warn('synced records do not have the normalised shape', { objects, ids: unreadableIds });
  return read;
}

/** Every customer found, and the objects consulted on each connector that has one. */
function usedFor(customers: readonly FoundCustomer[], objectsOf: (connector: PlaybookConnector) => readonly string[]): UsedData {
  const used = new UsedData();
  for (const found of customers) {
    if (found.customer) used.add([found.customer]);
    for (const object of objectsOf(found.connector)) used.object(found.connector, object);
  }
  return used;
}

const customerViews = (customers: readonly FoundCustomer[]) =>
  customers.map((found) => customerView(found.customer ?? { connector: found.connector, id: found.customerId }));

// ---------- one customer ----------

/** Spec: "reads the customer's active subscription, retrieves plan name and status". */
export async function readCustomerSubscription(
  scope: ReadScope,
  reference: CustomerReference,
  connector?: PlaybookConnector,
): Promise<CustomerSubscriptionAnswer | undefined> {
  const objectsOf = () => ['subscriptions'];
  const looked = await lookUp(scope, reference, connector, objectsOf);
  if (!looked) return undefined;
  const subscriptions = bodiesOf(scope, looked.found.records, ['subscriptions'], NormalisedSubscription);
  const current = currentSubscription(subscriptions);
  const used = usedFor(looked.found.customers, withCustomers(objectsOf)).add(current ? [current] : []);
  return {
    customers: customerViews(looked.found.customers),
    subscription: current ? subscriptionView(current) : null,
    ...(current ? {} : { reason: noSubscriptionReason(subscriptions) }),
    freshness: freshnessOf(used, looked.checkpoints),
  };
}

/** Spec: "reads active subscriptions, retrieves the next invoice date". */
export async function readNextPayment(scope: ReadScope, reference: CustomerReference, connector?: PlaybookConnector): Promise<NextPaymentAnswer | undefined> {
  const objectsOf = () => ['subscriptions', 'invoices'];
  const looked = await lookUp(scope, reference, connector, objectsOf);
  if (!looked) return undefined;
  const subscriptions = bodiesOf(scope, looked.found.records, ['subscriptions'], NormalisedSubscription);
  const invoices = bodiesOf(scope, looked.found.records, ['invoices'], NormalisedInvoice);
  const decision = nextPayment(subscriptions, invoices);
  const used = usedFor(looked.found.customers, withCustomers(objectsOf)).add(decision.nextPayment ? [decision.from] : []);
  return {
    customers: customerViews(looked.found.customers),
    nextPayment: decision.nextPayment,
    ...(decision.nextPayment ? {} : { reason: decision.reason }),
    freshness: freshnessOf(used, looked.checkpoints),
  };
}

/** Tier and payment history (Qualification Agent), newest first. */
export async function readPayments(
  scope: ReadScope,
  reference: CustomerReference,
  options: { connector?: PlaybookConnector; limit: number },
): Promise<PaymentsAnswer | undefined> {
  const objectsOf = (connector: PlaybookConnector) => ['subscriptions', ...paymentObjectCandidates(connector)];
  const looked = await lookUp(scope, reference, options.connector, objectsOf);
  if (!looked) return undefined;
  const { records } = looked.found;
  const subscriptions = bodiesOf(scope, records, ['subscriptions'], NormalisedSubscription);
  // One payment object per connector: a charge and its payment intent are the same payment.
  const connectors = [...new Set(looked.found.customers.map((found) => found.connector))];
  const paymentObject = new Map(connectors.map((connector) => [connector, paymentObjectOf(connector, objectsOn(connector, records, looked.checkpoints))]));
  const payments = connectors.flatMap((connector) =>
    bodiesOf(
      scope,
      records.filter((record) => record.connector === connector),
      [paymentObject.get(connector)!],
      NormalisedPayment,
    ),
  );
  const history = paymentHistory(payments, options.limit);
  const current = currentSubscription(subscriptions);
  const used = usedFor(looked.found.customers, (connector) => ['customers', 'subscriptions', paymentObject.get(connector)!])
    .add(history)
    .add(current ? [current] : []);
  return {
    customers: customerViews(looked.found.customers),
    tier: tierOf(subscriptions),
    payments: history.map(paymentView),
    freshness: freshnessOf(used, looked.checkpoints),
  };
}

/** Invoices newest first (post-purchase follow-up). */
export async function readInvoices(
  scope: ReadScope,
  reference: CustomerReference,
  options: { connector?: PlaybookConnector; limit: number },
): Promise<InvoicesAnswer | undefined> {
  const objectsOf = () => ['invoices'];
  const looked = await lookUp(scope, reference, options.connector, objectsOf);
  if (!looked) return undefined;
  const invoices = invoicesNewestFirst(bodiesOf(scope, looked.found.records, ['invoices'], NormalisedInvoice), options.limit);
  const used = usedFor(looked.found.customers, withCustomers(objectsOf)).add(invoices);
  return {
    customers: customerViews(looked.found.customers),
    invoices: invoices.map(invoiceView),
    freshness: freshnessOf(used, looked.checkpoints),
  };
}

/** The objects a connector holds for this answer: found among the records, or synced for the account. */
function objectsOn(connector: PlaybookConnector, records: readonly SyncedRecord[], checkpoints: readonly SyncCheckpoint[]): Set<string> {
  return new Set([
    ...records.filter((record) => record.connector === connector).map((record) => record.object),
    ...checkpoints.filter((checkpoint) => checkpoint.connector === connector).map((checkpoint) => checkpoint.object),
  ]);
}

function withCustomers(objectsOf: (connector: PlaybookConnector) => readonly string[]) {
  return (connector: PlaybookConnector) => ['customers', ...objectsOf(connector)];
}

// ---------- lists across the account ----------

/** Table reads per list request, and records per read: at most 1,000 records looked at per request. */
const LIST_BUDGET = { maxReads: 10, readSize: 100 };

/** Which subscriptions a subscriber list holds: one state, or every running one. */
export type SubscriberState = SubscriptionState | 'current';

/** Subscribers for renewal reminders (Activation), one page. */
export async function listSubscribers(
  scope: ReadScope,
  options: { connector: PlaybookConnector; state: SubscriberState; limit: number; startKey?: string },
): Promise<SubscribersPage> {
  const { table, accountId } = scope;
  const placeOf = await readPlaces(table, accountId, options.connector);
  const [page, checkpoints] = await Promise.all([
    readFilteredPage(
      (startKey, limit) => store.listRecords(table, placeOf('subscriptions'), { limit, ...(startKey ? { startKey } : {}) }),
      (record) => {
        const subscription = NormalisedSubscription.safeParse(record.body);
        if (!subscription.success) return undefined;
        const wanted = options.state === 'current' ? isCurrent(subscription.data) : subscription.data.state === options.state;
        return wanted ? { record, subscription: subscription.data } : undefined;
      },
      { limit: options.limit, ...(options.startKey ? { startKey: options.startKey } : {}), ...LIST_BUDGET },
    ),
    store.listSyncCheckpoints(table, accountId),
  ]);
  const customers = await customersById(
    scope,
    placeOf,
    page.items.map((item) => item.subscription.customerId),
  );
  const used = new UsedData()
    .object(options.connector, 'subscriptions')
    .object(options.connector, 'customers')
    .add(page.items.map(({ record }) => ({ connector: options.connector, object: record.object, ...(record.syncedAt ? { syncedAt: record.syncedAt } : {}) })))
    .add([...customers.values()]);
  return {
    connector: options.connector,
    subscribers: page.items.map(({ subscription }) => subscriberView(subscription, customers.get(subscription.customerId)?.body.email)),
    ...(page.nextStartKey ? { nextCursor: encodeCursor(page.nextStartKey) } : {}),
    freshness: freshnessOf(used, checkpoints),
  };
}

/** Failed payments for dunning (Nurture & Conversion), in the store's order so paging stays stable. */
export async function listFailedPayments(
  scope: ReadScope,
  options: { connector: PlaybookConnector; since?: Date; limit: number; startKey?: string },
): Promise<FailedPaymentsPage> {
  const { table, accountId } = scope;
  const [checkpoints, placeOf] = await Promise.all([store.listSyncCheckpoints(table, accountId), readPlaces(table, accountId, options.connector)]);
  const synced = new Set(checkpoints.filter((checkpoint) => checkpoint.connector === options.connector).map((checkpoint) => checkpoint.object));
  const object = paymentObjectOf(options.connector, synced);
  const place = placeOf(object);
  const page = await readFilteredPage(
    (startKey, limit) => store.listRecords(table, place, { limit, ...(startKey ? { startKey } : {}) }),
    (record) => {
      const payment = NormalisedPayment.safeParse(record.body);
      return payment.success && isFailedPayment(payment.data, options.since)
        ? { connector: options.connector, object, body: payment.data, ...(record.syncedAt ? { syncedAt: record.syncedAt } : {}) }
        : undefined;
    },
    { limit: options.limit, ...(options.startKey ? { startKey: options.startKey } : {}), ...LIST_BUDGET },
  );
  const failed = page.items;
  const customers = await customersById(
    scope,
    placeOf,
    failed.map((payment) => payment.body.customerId),
  );
  const used = new UsedData()
    .object(options.connector, object)
    .object(options.connector, 'customers')
    .add(failed)
    .add([...customers.values()]);
  return {
    connector: options.connector,
    payments: failed.map((payment) => failedPaymentView(object, payment.body, customers.get(payment.body.customerId)?.body.email)),
    ...(page.nextStartKey ? { nextCursor: encodeCursor(page.nextStartKey) } : {}),
    freshness: freshnessOf(used, checkpoints),
  };
}

/** How many customer records a list reads at once (a page has at most 100 distinct customers). */
const CUSTOMER_READS_IN_FLIGHT = 10;

/** The synced customer records of these ids (for their emails); ids without one are left out. */
async function customersById(scope: ReadScope, placeOf: PlaceOf, ids: readonly string[]): Promise<Map<string, ReadRecord<NormalisedCustomer>>> {
  const unique = [...new Set(ids.filter((id) => id !== ''))];
  const found = new Map<string, ReadRecord<NormalisedCustomer>>();
  if (unique.length === 0) return found;
  const place = placeOf('customers');
  let next = 0;
  const worker = async () => {
    while (next < unique.length) {
      const id = unique[next++]!;
      const stored = await store.getRecord(scope.table, place, id);
      if (!stored || stored.deletedAt !== undefined) continue;
      const customer = bodiesOf(scope, [stored], ['customers'], NormalisedCustomer)[0];
      if (customer) found.set(id, customer);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CUSTOMER_READS_IN_FLIGHT, unique.length) }, worker));
  return found;
}
