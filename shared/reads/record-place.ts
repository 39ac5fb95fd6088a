import type { ConnectorName } from '../connectors';
import { recordPlace, type RecordPlace } from '../store/record-layout';
import type { Store } from '../store/store';

/**
 * Where a read finds one data object's records: in the layout of the account's connection of that
 * connector (one consistent GetItem). With no connection (disconnected, its purge under way) the
 * single key of connections stored before sharding: what is left there is still read as before,
 * and a sharded connection's leftovers, about to be purged, are not listed.
 */
export async function readPlace(store: Pick<Store, 'getConnection'>, accountId: string, connector: ConnectorName, object: string): Promise<RecordPlace> {
  const connection = await store.getConnection(accountId, connector);
  return connection ? recordPlace(connection, object) : { accountId, connector, object, shards: 1 };
}
