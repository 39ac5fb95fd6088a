import type { ConnectorName } from '../../shared/connectors';
import type { Gateway } from '../../shared/gateway';
import { sealWebhookSecret } from '../../shared/webhooks/webhook-secret';
import { connectors } from '../../shared/connections/registry';
import { RECORD_SHARDS, type RecordPlace } from '../../shared/store/record-layout';
import * as store from '../../shared/store/store';

/**
 * Stores a connection as Connect Account would (credentials sealed by the vault), without going
 * through the API: for tests and benchmarks that start at the sync engine or the webhook worker.
 */
export async function storeConnection(
  gateway: Pick<Gateway, 'table' | 'vault'>,
  connection: {
    accountId: string;
    connector: ConnectorName;
    credentials: Record<string, string>;
    config?: Record<string, string | number | boolean>;
    syncSettings?: Record<string, unknown>;
    /** 'legacy': a connection stored before records were sharded (no `recordShards`, one key an object). */
    layout?: 'sharded' | 'legacy';
  },
): Promise<void> {
  const { accountId, connector } = connection;
  const at = new Date().toISOString();
  // As Connect Account stores it: the webhook secret sealed apart too (shared/webhooks/webhook-secret.ts).
  const webhookSecret = await sealWebhookSecret(gateway, { accountId, connector }, connection.credentials, connectors.find(connector)?.webhooks?.secretFields ?? []);
  await store.putConnection(gateway.table, {
    accountId,
    connector,
    config: connection.config ?? {},
    credentials: await gateway.vault.seal({ accountId, connector }, connection.credentials),
    ...(webhookSecret ? { webhookSecret } : {}),
    maskedSecrets: {},
    syncSettings: connection.syncSettings ?? {},
    health: { state: 'unknown' },
    createdAt: at,
    updatedAt: at,
    ...(connection.layout === 'legacy' ? {} : { recordShards: RECORD_SHARDS }),
    version: 0,
  });
}

/** A data object's records as a connection stored by `storeConnection` lays them out (sharded unless 'legacy'). */
export function recordsAt(accountId: string, connector: ConnectorName, object: string, layout: 'sharded' | 'legacy' = 'sharded'): RecordPlace {
  return { accountId, connector, object, shards: layout === 'legacy' ? 1 : RECORD_SHARDS };
}

/** Whether a table key is one of this data object's records, under the single key or one of its shard keys. */
export function isRecordKey(accountId: string, connector: ConnectorName, object: string): (key: { pk: string }) => boolean {
  const base = `ACCOUNT#${accountId}#${connector}#${object}`;
  return (key) => key.pk === base || key.pk.startsWith(`${base}#`);
}

/** Every stored record id of one data object, all pages (deleted ones left out), in the store's order. */
export async function storedRecordIds(table: Gateway['table'], place: RecordPlace): Promise<string[]> {
  const ids: string[] = [];
  let startKey: string | undefined;
  do {
    const page = await store.listRecords(table, place, { limit: 1000, ...(startKey ? { startKey } : {}) });
    ids.push(...page.records.map((record) => record.id));
    startKey = page.nextStartKey;
  } while (startKey);
  return ids;
}
