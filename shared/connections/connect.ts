import * as z from 'zod/mini';
import type { ConnectorName } from '../connectors';
import type { Gateway } from '../gateway';
import { problems } from '../api/problem';
import { fieldErrors } from '../api/problem';
import type { Logger } from '../log/logger';
import type { Account, Connection } from '../store/items';
import { newConnectionShards } from '../store/record-layout';
import { requireIntegrationsEnabled, takeFromQuota } from '../tenants/account-guard';
import { startAuthorization, type AuthorizationStarted } from '../identity/authorization';
import { maskSecret, type ConnectionParts } from './connector-definition';
import type { Connector } from './connector';
import { connectors } from './registry';
import { sealWebhookSecret } from '../webhooks/webhook-secret';
import { sealWebhookSecretApart } from './webhook-secret-migration';
import type { ConnectionView } from './connection-view';
import { testConnection } from './test-connection';
import { firstSyncJobs } from '../sync/dispatch-syncs';
import { retryAfterSeconds } from '../tenants/quotas';
import * as store from '../store/store';

/** A new connection's settings: the connector's defaults, so its scheduled syncs run. */
function defaultSettings(connector: Pick<Connector, 'settings'>): Record<string, unknown> {
  return { ...z.parse(connector.settings, {}) };
}

export function viewOf(connection: Connection, warnings?: string[]): ConnectionView {
  return {
    accountId: connection.accountId,
    connector: connection.connector,
    config: connection.config as ConnectionView['config'],
    maskedSecrets: connection.maskedSecrets,
    syncSettings: connection.syncSettings,
    health: connection.health,
    ...(warnings && warnings.length ? { warnings } : {}),
    createdAt: connection.createdAt,
    updatedAt: connection.updatedAt,
  };
}

/** What Connect Account answers: the stored connection (with the account it checked), or, for the authorization code, where to send the browser. */
export type ConnectOutcome = { kind: 'connected'; view: ConnectionView; account: Account } | { kind: 'authorizing'; started: AuthorizationStarted; setCookie: string };

/**
 * Connect Account: validate the form, seal the secrets in the vault, store config + ciphertext.
 * Reconnecting replaces the credentials and keeps the sync settings. With the authorization code
 * method nothing is stored as a connection yet: the browser is sent to the platform, and the
 * connection is saved when it comes back (shared/identity/authorization.ts).
 */
export async function connectAccount(
  gateway: Gateway,
  log: Logger,
  accountId: string,
  connector: ConnectorName,
  body: unknown,
  browser: { baseUrl: string; returnTo?: string } = { baseUrl: '' },
): Promise<ConnectOutcome> {
  const definition = connectors.get(connector);
  const account = await requireIntegrationsEnabled(gateway, accountId);
  const form = definition.connection;
  const parsed = z.safeParse(form.input, body);
  if (!parsed.success) throw problems.invalidBody(fieldErrors(parsed.error));

  const existing = await store.getConnection(gateway.table, accountId, connector);
  const kept = existing ? await keptParts(gateway, existing, form.keptOnReconnect ?? []) : { credentials: {}, config: {}, maskedSecrets: {} };
  const parts = form.split(parsed.data, kept.credentials);
  if ((parsed.data as { authenticationMethod?: unknown }).authenticationMethod === 'authorization_code') {
    const { started, setCookie } = await startAuthorization(gateway, log, { accountId, connector: definition, parts, ...browser });
    return { kind: 'authorizing', started, setCookie };
  }
  const connection = await saveConnection(gateway, log, { accountId, connector: definition, existing, kept, parts });
  return { kind: 'connected', view: viewOf(connection, parts.warnings), account };
}

/**
 * Connect Account's Test Connection, on a connection just saved. When it passes and the connector
 * syncs, the first sync starts now instead of at the schedule (daily by default). A reconnect's too:
 * it forgot where the syncs stood, so its next sync is full either way, and the new key's records
 * are better read at once. A failed test starts nothing: the health says what to fix. A first sync
 * is a manual sync: it draws from the account's syncs quota as Sync now does, so reconnecting in a
 * loop cannot start more full syncs than pressing Sync now could (docs/tenants.md).
 */
export async function testNewConnection(gateway: Gateway, log: Logger, saved: ConnectionView, account: Account): Promise<ConnectionView> {
  const tested = await testConnection(gateway, saved.accountId, connectors.get(saved.connector), log);
  const view = { ...saved, health: tested.health };
  const platform = connectors.syncing()[saved.connector];
  if (!tested.ok || !platform) return view;
  const jobs = firstSyncJobs(saved, platform.settings, new Date(gateway.now()).toISOString());
  if (jobs.length === 0) return view;
  const quota = await takeFromQuota(gateway, account, 'syncs');
  if (!quota.allowed) {
    log.info('first sync not started: the account has used its syncs quota', { connector: saved.connector });
    const wait = retryAfterSeconds(quota.retryAfterMs);
    const warning = `The first sync did not start: this account has started as many syncs as its quota allows for now. Press Sync now in ${wait} s, or wait for the schedule.`;
    return { ...view, warnings: [...(view.warnings ?? []), warning] };
  }
  await gateway.queues.syncJobs.send(jobs);
  log.info('first sync started', { connector: saved.connector, jobs: jobs.length });
  return { ...view, firstSync: { enqueued: jobs.length } };
}

/** Seals the credentials and stores the connection (a new one with the connector's default settings). */
export async function saveConnection(
  gateway: Gateway,
  log: Logger,
  input: {
    accountId: string;
    /** What saving reads of the connector (the OAuth callback holds only its browser flow's part). */
    connector: Pick<Connector, 'name' | 'settings' | 'webhooks' | 'sync'>;
    existing: Connection | undefined;
    kept?: { credentials: Record<string, string>; config: Connection['config']; maskedSecrets: Record<string, string> };
    parts: ConnectionParts;
  },
): Promise<Connection> {
  const { accountId, existing, parts } = input;
  const connector = input.connector.name;
  const kept = input.kept ?? { credentials: {}, config: {}, maskedSecrets: {} };
  const credentials = { ...kept.credentials, ...parts.credentials };
  const sealed = await gateway.vault.seal({ accountId, connector }, credentials);
  // The receivers verify with this alone (shared/webhooks/webhook-secret.ts).
  const webhookSecret = await sealWebhookSecret(gateway, { accountId, connector }, credentials, input.connector.webhooks?.secretFields ?? []);
  const now = new Date(gateway.now()).toISOString();
  // A reconnect keeps its record layout (absent: one key, as stored before sharding). A new
  // connection is sharded, unless an earlier one's records still wait for their purge under that one key.
  const recordShards = existing
    ? existing.recordShards
    : newConnectionShards(await store.hasLegacyRecords(gateway.table, accountId, connector, input.connector.sync?.objects ?? []));
  const connection: Connection = {
    accountId,
    connector,
    config: { ...kept.config, ...parts.config },
    credentials: sealed,
    ...(webhookSecret ? { webhookSecret } : {}),
    maskedSecrets: { ...kept.maskedSecrets, ...Object.fromEntries(Object.entries(parts.credentials).map(([field, secret]) => [field, maskSecret(secret)])) },
    // New connections start with the connector's default settings, so their scheduled syncs run.
    syncSettings: existing?.syncSettings ?? defaultSettings(input.connector),
    health: { state: 'unknown' },
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
    ...(recordShards === undefined ? {} : { recordShards }),
    version: existing?.version ?? 0,
  };
  connection.version = await store.putConnection(gateway.table, connection);
  gateway.vault.forget({ accountId, connector });
  // Another key or site may see other data: the next sync is full, and its sweep removes the rest.
  if (existing) await store.deleteSyncCheckpoints(gateway.table, accountId, connector);
  log.info('connection saved', { accountId, connector, reconnect: existing !== undefined, warnings: parts.warnings.length });
  return connection;
}

/** What a reconnect keeps of the existing connection: the gateway-generated fields only. */
async function keptParts(gateway: Gateway, existing: Connection, fields: readonly string[]) {
  if (fields.length === 0) return { credentials: {}, config: {}, maskedSecrets: {} };
  const opened = await gateway.vault.open({ accountId: existing.accountId, connector: existing.connector }, existing.credentials);
  const pick = <T>(from: Record<string, T>) => Object.fromEntries(Object.entries(from).filter(([field]) => fields.includes(field)));
  return { credentials: pick(opened), config: pick(existing.config), maskedSecrets: pick(existing.maskedSecrets) };
}

export async function getConnectionView(gateway: Gateway, accountId: string, connector: ConnectorName, log: Logger): Promise<ConnectionView> {
  const connection = await store.getConnection(gateway.table, accountId, connector);
  if (!connection) throw problems.notFound(`The ${connector} connector is not connected for account ${accountId}.`);
  // A connection stored before webhook secrets were sealed apart is migrated the first time it is viewed.
  await sealWebhookSecretApart(gateway, log, connection);
  return viewOf(connection);
}

/**
 * Disconnect: the credentials go with the connection (so no schedule finds it), where its syncs
 * stood is forgotten, and its synced records are purged by jobs on the sync queue.
 */
export async function disconnectAccount(gateway: Gateway, log: Logger, accountId: string, connector: ConnectorName): Promise<void> {
  const definition = connectors.find(connector);
  const connection = await store.getConnection(gateway.table, accountId, connector);
  if (connection && definition?.revoke) {
    // The platform-side grant goes too (spec general rule 3 works both ways); a failure must not keep the connection.
    try {
      const credentials = await gateway.vault.open({ accountId, connector }, connection.credentials);
      await definition.revoke({ accountId, env: gateway.env, config: connection.config, credentials });
    } catch (error) {
      log.warn('could not revoke the platform grant; the connection is removed anyway', { accountId, connector, error });
    }
  }
  await store.deleteConnection(gateway.table, accountId, connector);
  gateway.vault.forget({ accountId, connector });
  await store.deleteSyncCheckpoints(gateway.table, accountId, connector);
  const objects = definition?.sync?.objects ?? [];
  const requestedAt = new Date(gateway.now()).toISOString();
  await gateway.queues.syncJobs.send(objects.map((object) => ({ accountId, connector, object, trigger: 'purge' as const, requestedAt })));
  log.info('connection deleted', { accountId, connector, purgeJobs: objects.length });
}
