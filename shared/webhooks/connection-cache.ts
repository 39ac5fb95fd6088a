import type { Gateway } from '../gateway';
import type { Connection } from '../store/items';
import type { Credentials } from '../vault/sealed-credentials';
import { openWebhookSecret } from './webhook-secret';
import * as store from '../store/store';

/** A connection with its webhook secret opened, as a receiver verifies against it. */
export interface OpenedConnection {
  connection: Connection;
  /** The webhook secret alone: a receiver never opens the connection's other credentials. */
  credentials: Credentials;
  /** When it was read from the table (gateway clock, ms). */
  loadedAt: number;
}

/** How long a warm receiver trusts its copy: a reconnect or new credentials show within this. */
export const CONNECTION_CACHE_MS = 60_000;

/**
 * The receivers' memory of each account's connection and opened secret, so a warm function
 * verifies a delivery with no DynamoDB read and no KMS call: its only AWS call is the SendMessage.
 * Kept per gateway (tests run several in one process); unknown accounts are not remembered, so a
 * connection made a moment ago works at once.
 */
const cached = new WeakMap<Gateway, Map<string, OpenedConnection>>();
/** Receivers serve many accounts; bound the memory, oldest first. */
const MAX_CACHED = 1000;

/** The copy held for this account's connection while it is fresh, without I/O: a warm receiver's usual case, answered without awaiting. */
export function heldConnection(gateway: Gateway, accountId: string, connector: string, maxAgeMs = CONNECTION_CACHE_MS): OpenedConnection | undefined {
  const held = cached.get(gateway)?.get(`${accountId}\n${connector}`);
  return held && gateway.now() - held.loadedAt < maxAgeMs ? held : undefined;
}

export async function openedConnection(
  gateway: Gateway,
  accountId: string,
  connector: string,
  options: { maxAgeMs?: number } = {},
): Promise<OpenedConnection | undefined> {
  const held = heldConnection(gateway, accountId, connector, options.maxAgeMs);
  if (held) return held;
  let entries = cached.get(gateway);
  if (!entries) cached.set(gateway, (entries = new Map()));
  const cacheKey = `${accountId}\n${connector}`;
  const now = gateway.now();

  entries.delete(cacheKey);
  const connection = await store.getConnection(gateway.table, accountId, connector);
  if (!connection) return undefined;
  const credentials = await openWebhookSecret(gateway, connection);
  const opened = { connection, credentials, loadedAt: now };
  entries.set(cacheKey, opened);
  for (const oldest of entries.keys()) {
    if (entries.size <= MAX_CACHED) break;
    entries.delete(oldest);
  }
  return opened;
}

/** Tests and benchmarks start cold. */
export function forgetOpenedConnections(gateway: Gateway): void {
  cached.delete(gateway);
}
