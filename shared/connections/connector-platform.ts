import type { GatewayEnvironment } from '../config';
import type { RateBuckets } from '../http/rate-budget';
import type { Connection } from '../store/items';
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

/** Every syncing connector's settings share these three (the spec's Sync settings tables). */
export interface CommonSyncSettings {
  dataObjects: readonly string[];
  frequency: SyncFrequency;
  method: SyncMethod;
}
