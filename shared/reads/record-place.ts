import type { ConnectorName } from '../connectors';
import { recordPlace, type RecordPlace } from '../store/record-layout';
import type { Table } from '../store/table-access';
import * as store from '../store/store';

/** Where a read finds a data object's records, for each object of one connection. */
export type PlaceOf = (object: string) => RecordPlace;

/**
 * Where a read finds the records of a connection's data objects: in the layout of the account's
 * connection of that connector (one consistent GetItem, read once per request for every object it
 * reads). With no connection (disconnected, its purge under way) the single key of connections
 * stored before sharding: what is left there is still read as before, and a sharded connection's
 * leftovers, about to be purged, are not listed.
 */
export async function readPlaces(table: Table, accountId: string, connector: ConnectorName): Promise<PlaceOf> {
  const connection = await store.getConnection(table, accountId, connector);
  return (object) => (connection ? recordPlace(connection, object) : { accountId, connector, object, shards: 1 });
}

/** Where a read finds one data object's records (`readPlaces` for one object). */
export async function readPlace(table: Table, accountId: string, connector: ConnectorName, object: string): Promise<RecordPlace> {
  return (await readPlaces(table, accountId, connector))(object);
}
