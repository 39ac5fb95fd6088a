import type { Logger } from '../log/logger';
import type { SyncedRecord } from '../store/items';
import type { Table } from '../store/table-access';
import * as store from '../store/store';
import { readPlaces } from './record-place';
import { NormalisedCustomer } from '../sync/normalised';
import { readBodies, type PlaybookConnector, type ReadRecord } from './read-record';

/** How a playbook names a customer: an email (it has an '@'), else the platform's customer id. */
export type CustomerReference = { kind: 'email'; email: string } | { kind: 'id'; id: string };

export function customerReference(text: string): CustomerReference {
  return text.includes('@') ? { kind: 'email', email: text } : { kind: 'id', id: text };
}

/** A customer found on one connector; `customer` is its synced record, when customers are synced. */
export interface FoundCustomer {
  connector: PlaybookConnector;
  customerId: string;
  customer?: ReadRecord<NormalisedCustomer>;
}

export interface CustomerRecords {
  customers: FoundCustomer[];
  /** The asked-for objects' records of every customer found (deleted ones left out). */
  records: SyncedRecord[];
}

/**
 * Finds a customer and reads the given objects of theirs, all through the store's indexes (no scan):
 * - by email, the customer records of that email (gsi1), on each connector asked for; an email
 *   may match a customer on both platforms, or several customers on one (duplicates happen);
 * - by id, the customer record on each connector asked for. A customer whose record is not synced
 *   (customers left out of the data objects) still counts as found when any of their records is.
 * Nobody found: `customers` is empty.
 */
export async function readCustomerRecords(
  table: Table,
  accountId: string,
  reference: CustomerReference,
  connectors: readonly PlaybookConnector[],
  objectsOf: (connector: PlaybookConnector) => readonly string[],
  log?: Logger,
): Promise<CustomerRecords> {
  const recordsOf = async (connector: PlaybookConnector, customerId: string) => {
    const perObject = await Promise.all(
      objectsOf(connector).map((object) => store.findRecordsByCustomer(table, accountId, connector, customerId, { object })),
    );
    return perObject.flat();
  };

  if (reference.kind === 'email') {
    const matches = await store.findRecordsByEmail(table, accountId, reference.email);
    const customerRecords = matches.filter((record) => record.object === 'customers' && (connectors as readonly string[]).includes(record.connector));
    const customers = readCustomers(customerRecords, log);
    const records = await Promise.all(customers.map((found) => recordsOf(found.connector, found.customerId)));
    return { customers, records: records.flat() };
  }

  const perConnector = await Promise.all(
    connectors.map(async (connector) => {
      const [stored, records] = await Promise.all([
        readPlaces(table, accountId, connector).then((placeOf) => store.getRecord(table, placeOf('customers'), reference.id)),
        recordsOf(connector, reference.id),
      ]);
      const customer = stored && stored.deletedAt === undefined ? readCustomers([stored], log)[0] : undefined;
      if (customer) return { customers: [customer], records };
      return records.length > 0 ? { customers: [{ connector, customerId: reference.id }], records } : { customers: [], records: [] };
    }),
  );
  return { customers: perConnector.flatMap((found) => found.customers), records: perConnector.flatMap((found) => found.records) };
}

function readCustomers(records: readonly SyncedRecord[], log: Logger | undefined): FoundCustomer[] {
  const { read, unreadableIds } = readBodies(records, NormalisedCustomer);
  if (unreadableIds.length > 0) log?.warn('synced customer records do not have the normalised shape', { ids: unreadableIds });
  return read.map((customer) => ({ connector: customer.connector, customerId: customer.body.id, customer }));
}
