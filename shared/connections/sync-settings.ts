import * as z from 'zod/mini';
import type { ConnectorName } from '../connectors';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { fieldErrors, problems } from '../api/problem';
import { VersionConflictError } from '../store/store';
import { viewOf } from './connect';
import { connectors } from './registry';
import type { ConnectionView } from './connection-view';
import * as store from '../store/store';

/** Whether two settings select the same records: everything but when (frequency) and how (method). */
function sameSelection(before: Record<string, unknown>, after: Record<string, unknown>): boolean {
  const selection = ({ frequency: _frequency, method: _method, ...rest }: Record<string, unknown>) => JSON.stringify(rest, Object.keys(rest).sort());
  return selection(before) === selection(after);
}

/**
 * Saves a connection's sync settings, validated by its connector's schema. The new frequency and
 * method take effect at the next schedule (the schedule index is written with the connection).
 */
export async function saveSyncSettings(gateway: Gateway, accountId: string, connector: ConnectorName, body: unknown, log: Logger): Promise<ConnectionView> {
  const schema = connectors.get(connector).settings;
  const parsed = z.safeParse(schema, body);
  if (!parsed.success) throw problems.invalidBody(fieldErrors(parsed.error));
  const connection = await store.getConnection(gateway.table, accountId, connector);
  if (!connection) throw problems.notFound(`The ${connector} connector is not connected for account ${accountId}.`);
  const updated = { ...connection, syncSettings: { ...parsed.data }, updatedAt: new Date(gateway.now()).toISOString() };
  try {
    updated.version = await store.putConnection(gateway.table, updated);
  } catch (error) {
    if (error instanceof VersionConflictError) {
      throw problems.conflict('The connection changed while the settings were being saved.', 'Reload the connection and save the settings again.');
    }
    throw error;
  }
  // Other objects or wider filters bring records no incremental window would: start over with a full sync.
  if (!sameSelection(connection.syncSettings, updated.syncSettings)) await store.deleteSyncCheckpoints(gateway.table, accountId, connector);
  await connectors.get(connector).settingsChanged?.({ gateway, log, before: connection, after: updated });
  log.info('sync settings saved', { connector, settings: parsed.data });
  return viewOf(updated);
}
