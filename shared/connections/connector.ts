import type * as z from 'zod/mini';
import type { Route } from '../api/route';
import type { PlatformClient } from '../http/platform-client';
import type { ConnectorWebhooks, WebhookReceiver } from '../webhooks/connector-webhooks';
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
 * registry and never imports a connector folder, so a fifth platform is a copied folder plus its
 * lines in the registry (and, if its platform sends webhooks, a receiver function of its own:
 * docs/architecture.md, "Connectors are plug-ins").
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
  settings: z.core.$ZodType<Settings, unknown>;
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

/** The parts of a syncing connector the sync engine uses. */
export type ConnectorPlatform = Pick<SyncingConnector, 'settings' | 'client' | 'sync' | 'problem'>;

/** A connector with work on the schedules besides record syncs. */
export type SchedulingConnector = Connector & Required<Pick<Connector, 'scheduled'>>;

/** A connector whose platform sends webhooks. */
export type WebhookConnector = Connector & Required<Pick<Connector, 'webhooks'>>;

/**
 * The capabilities a function may load without the rest of the connector (bundles by capability:
 * a webhook receiver holds its connector's signature check and envelope, the sync job the sync
 * sources). Each is a module of the connector's folder, the same one its full definition is made
 * of, listed in the registry beside the connector (shared/connections/registry.ts).
 */
export type ConnectorNaming = Pick<Connector, 'name' | 'platform'>;
/** What a webhook receiver runs (`<connector>/webhook-receiver.ts`). */
export interface ReceivingConnector extends ConnectorNaming {
  webhooks: WebhookReceiver;
}
/** What the sync dispatcher reads of a connector that syncs records: its settings, which say what to sync and how often (`<connector>/sync-schedule.ts`). */
export type SyncSchedule = ConnectorNaming & Pick<SyncingConnector, 'settings'>;
/** What the sync job runs of a connector that syncs records (`<connector>/sync-platform.ts`). */
export type SyncPlatform = ConnectorNaming & ConnectorPlatform;
/** What the event worker runs of a connector whose platform sends webhooks (`<connector>/webhook-endpoint.ts`). */
export type ApplyingConnector = ConnectorNaming & Required<Pick<Connector, 'webhooks' | 'client'>>;
/** Scheduled work besides record syncs (`<connector>/scheduling.ts`). */
export type SchedulingPlatform = ConnectorNaming & Pick<SchedulingConnector, 'settings' | 'scheduled'>;
/** Reactions to published events (`<connector>/reactions.ts`). */
export type ReactingConnector = ConnectorNaming & Required<Pick<Connector, 'reactions'>>;
/**
 * What the OAuth callback runs of a connector that connects through the browser
 * (`<connector>/authorization-code.ts`): the flow, the settings a new connection starts with, and
 * Test Connection; and, for a connector that has them, the webhooks and sync whose secret fields and
 * objects saving a connection reads (the data and messaging connectors have neither).
 */
export type AuthorizingConnector = ConnectorNaming &
  Pick<Connector, 'settings' | 'testConnection' | 'problem' | 'webhooks' | 'sync'> &
  Required<Pick<Connector, 'authorization'>>;

/** Types a sync platform with the connector's own settings while the registry holds them all (as `defineConnector`). */
export function defineSyncPlatform<Settings extends CommonSyncSettings>(
  part: ConnectorNaming & Pick<Connector<Settings>, 'settings' | 'problem'> & Required<Pick<Connector<Settings>, 'client' | 'sync'>>,
): SyncPlatform {
  return part as unknown as SyncPlatform;
}

/** Types scheduled work with the connector's own settings (as `defineConnector`). */
export function defineScheduling<Settings extends object>(
  part: ConnectorNaming & Pick<Connector<Settings>, 'settings'> & Required<Pick<Connector<Settings>, 'scheduled'>>,
): SchedulingPlatform {
  return part as unknown as SchedulingPlatform;
}

/** Types the browser flow's part with the connector's own settings (as `defineConnector`). */
export function defineAuthorizing<Settings extends object>(
  part: ConnectorNaming &
    Pick<Connector<Settings>, 'settings' | 'testConnection' | 'problem' | 'webhooks' | 'sync'> &
    Required<Pick<Connector<Settings>, 'authorization'>>,
): AuthorizingConnector {
  return part as unknown as AuthorizingConnector;
}

/** Helps a connector's folder type its definition with its own settings while the registry holds them all. */
export function defineConnector<Settings extends object>(connector: Connector<Settings>): Connector {
  return connector as unknown as Connector;
}
