import type * as z from 'zod';
import type { GatewayEnvironment } from '../config';
import type { PlatformClient } from '../http/platform-client';
import type { RateBuckets } from '../http/rate-budget';
import type { Connection } from '../store/items';
import type { ConnectorSync } from '../sync/sync-source';
import type { SyncFrequency, SyncMethod } from '../sync/sync-settings';
import type { Credentials } from '../vault/sealed-credentials';

/** A failure in the user's words: the connection's health, what went wrong, and what to do. */
export interface ConnectionProblem {
  health: 'degraded' | 'needs_reconnect';
  reason: string;
  remedy: string;
  platformMessage?: string;
}

/** What a connector's client is built from: the connection's config and opened credentials. */
export interface ClientOptions {
  accountId: string;
  env: GatewayEnvironment;
  config: Connection['config'];
  credentials: Credentials;
  /** Where the connection's shared rate budget lives (the gateway's store), so every Lambda draws from one. */
  rateBuckets?: RateBuckets;
}

/** Test Connection for one connector: one cheap authenticated call, and how its failures read. */
export interface ConnectionCheck {
  test(options: ClientOptions): Promise<unknown>;
  problem(error: unknown): ConnectionProblem;
}

/** Every connector's sync settings share these three (the spec's Sync settings tables). */
export interface CommonSyncSettings {
  dataObjects: readonly string[];
  frequency: SyncFrequency;
  method: SyncMethod;
}

/**
 * What a connector brings beyond its connection form: its platform client, Test Connection, its
 * sync sources and sync settings, and how its failures read. Each connector folder has the same
 * shape (config, client, objects, sync, test-connection, errors), so learning one teaches all.
 */
export interface ConnectorPlatform<Settings extends CommonSyncSettings = CommonSyncSettings> {
  settings: z.ZodType<Settings, unknown>;
  client(options: ClientOptions): PlatformClient;
  testConnection(client: PlatformClient): Promise<void>;
  sync: ConnectorSync<Settings>;
  problem(error: unknown): ConnectionProblem;
}
