import type * as z from 'zod';
import type { Route } from '../api/route';
import type { PlatformClient } from '../http/platform-client';
import type { ConnectorWebhooks } from '../webhooks/connector-webhooks';
import type { ConnectionForm } from './connector-definition';
import type { ClientOptions, CommonSyncSettings, ConnectionProblem } from './connector-platform';
import type { ConnectorSync } from '../sync/sync-source';
import type { ScheduledWork } from '../sync/scheduled-work';
import type { EventReactions } from '../events/reactions';
import type { Connection } from '../store/items';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { AuthorizationCodeSupport } from '../identity/authorization';

/**
 * One connector: everything the gateway's core needs to know about one platform, in one object
 * exported by the connector's folder (`shared/<name>/connector.ts`) and listed once in
 * `shared/connections/registry.ts`. The core (API routes, OpenAPI document, Connect Account,
 * Test Connection, dispatcher, sync jobs, webhook receivers and worker, dashboard data) reads the
 * registry and never imports a connector folder, so a fifth platform is a copied folder plus one
 * registry line.
 *
 * Capabilities are optional parts: a connector that syncs records has `sync`, one whose platform
 * sends webhooks has `webhooks`, one with playbook operations of its own (ingestion, queries,
 * conversations) adds its `routes`, and one that can connect through the browser has `authorization`.
 */
export interface Connector<Settings extends object = object> {
  /** The gateway's neutral word for the platform, used in paths, keys and events: `payment`. */
  name: string;
  /** The platform in the user's words: "payment platform". */
  platform: string;
  /** Connect Account: the form (one schema per authentication method) and how it splits into config and secrets. */
  connection: ConnectionForm;
  /** The connection's settings (the spec's Sync settings table): validated on save, defaults from `parse({})`. */
  settings: z.ZodType<Settings, unknown>;
  /** Test Connection: one cheap authenticated call; throws what `problem` explains. */
  testConnection(options: ClientOptions): Promise<unknown>;
  /** A failure in the user's words, with the spec's remedy and the connection's health. */
  problem(error: unknown): ConnectionProblem;
  /** The platform client of a connection, for syncs and webhook fetches (connectors that sync records). */
  client?(options: ClientOptions): PlatformClient;
  sync?: ConnectorSync<Settings>;
  webhooks?: ConnectorWebhooks;
  /** Ends the platform-side grant when the connection is removed (a refresh token is revoked); best effort. */
  revoke?(options: ClientOptions): Promise<void>;
  /** The browser flow (OAuth authorization code with PKCE) for forms that offer that method. */
  authorization?: AuthorizationCodeSupport;
  /** Operations of this connector's own, added to `/api/v1` and its OpenAPI document. */
  routes?: readonly Route[];
  /** Work on the sync schedules other than record syncs (sending events held for a schedule). */
  scheduled?: ScheduledWork<Settings>;
  /** Called after the connection's settings were saved (e.g. to send at once what a slower frequency held). */
  settingsChanged?(change: { gateway: Gateway; log: Logger; before: Connection; after: Connection }): Promise<void>;
  /** What the connector does when the gateway publishes events of these types (another connector's, too). */
  reactions?: EventReactions;
}

/** A connector that syncs records: what the dispatcher and the sync job need. */
export type SyncingConnector = Connector<CommonSyncSettings> & Required<Pick<Connector<CommonSyncSettings>, 'client' | 'sync'>>;

/** A connector with work on the schedules besides record syncs. */
export type SchedulingConnector = Connector & Required<Pick<Connector, 'scheduled'>>;

/** A connector whose platform sends webhooks. */
export type WebhookConnector = Connector & Required<Pick<Connector, 'webhooks'>>;

/** Helps a connector's folder type its definition with its own settings while the registry holds them all. */
export function defineConnector<Settings extends object>(connector: Connector<Settings>): Connector {
  return connector as unknown as Connector;
}
