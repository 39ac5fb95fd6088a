import { billing } from '../billing/connector';
import { billingSyncSchedule } from '../billing/sync-schedule';
import { billingSyncing } from '../billing/sync-platform';
import { billingApplying } from '../billing/webhook-endpoint';
import { billingReceiving } from '../billing/webhook-receiver';
import { dataAuthorizing } from '../data/authorization-code';
import { data } from '../data/connector';
import { dataReacting } from '../data/reactions';
import { dataScheduling } from '../data/scheduling';
import { messagingAuthorizing } from '../messaging/authorization-code';
import { messaging } from '../messaging/connector';
import { payment } from '../payment/connector';
import { paymentSyncSchedule } from '../payment/sync-schedule';
import { paymentSyncing } from '../payment/sync-platform';
import { paymentApplying } from '../payment/webhook-endpoint';
import { paymentReceiving } from '../payment/webhook-receiver';
import type { EventReaction } from '../events/reactions';
import type { ApplyingConnector, AuthorizingConnector, Connector, ReactingConnector, ReceivingConnector, SchedulingPlatform, SyncPlatform, SyncSchedule } from './connector';
import { ConnectorRegistry } from './connector-registry';

/** The connectors this gateway offers: one line each. The core reads them from here only. */
export const connectors = /* @__PURE__ */ new ConnectorRegistry([payment, billing, data, messaging]);

/*
 * The same connectors by capability, for functions that run only that capability: each import
 * below is the module the connector's definition is made of, and a function that imports one list
 * bundles those modules alone (no side effects at load, `sideEffects: false`). A connector with a
 * capability is listed under it too (test/connections/registry-capabilities.test.ts checks it).
 */

/** Whose platforms send webhooks, the receive side only: what the webhook receivers run. */
export const webhookReceivers: ReceivingConnector[] = [paymentReceiving, billingReceiving];

/** Whose webhooks the event worker applies, with the client that fetches records. */
export const webhookAppliers: Record<string, ApplyingConnector> = /* @__PURE__ */ byName([paymentApplying, billingApplying]);

/** Who syncs records, as the sync dispatcher reads them: their settings (what to sync, how often). */
export const syncSchedules: Record<string, SyncSchedule> = /* @__PURE__ */ byName([paymentSyncSchedule, billingSyncSchedule]);

/** Who syncs records: what the sync job runs. */
export const syncPlatforms: Record<string, SyncPlatform> = /* @__PURE__ */ byName([paymentSyncing, billingSyncing]);

/** Who has work on the sync schedules besides record syncs. */
export const schedulingPlatforms: Record<string, SchedulingPlatform> = /* @__PURE__ */ byName([dataScheduling]);

/** Who connects through the browser (OAuth authorization code): what the OAuth callback runs. */
export const authorizers: AuthorizingConnector[] = [dataAuthorizing, messagingAuthorizing];

/** Who reacts to events the gateway publishes. */
const reacting: ReactingConnector[] = [dataReacting];

/** Every connector's reaction to a published event of this type: what functions that publish events run after publishing. */
export function reactionsTo(eventType: string): EventReaction[] {
  return reacting.flatMap(({ reactions }) => (reactions[eventType] ? [reactions[eventType]] : []));
}

/**
 * One more connector, under each capability it has: what a registry line does, at run time (tests
 * add a fake connector this way). The capability lists take its parts as they are.
 */
export function addConnector(connector: Connector): void {
  connectors.add(connector);
  const { name, platform, webhooks, client, sync, scheduled, reactions, authorization } = connector;
  if (webhooks) webhookReceivers.push({ name, platform, webhooks });
  if (webhooks && client) webhookAppliers[name] = { name, platform, webhooks, client };
  if (sync && client) syncSchedules[name] = { name, platform, settings: connector.settings } as SyncSchedule;
  if (sync && client) syncPlatforms[name] = { name, platform, settings: connector.settings, client, sync, problem: connector.problem } as SyncPlatform;
  if (scheduled) schedulingPlatforms[name] = { name, platform, settings: connector.settings, scheduled };
  if (reactions) reacting.push({ name, platform, reactions });
  if (authorization) authorizers.push({ name, platform, settings: connector.settings, testConnection: connector.testConnection, problem: connector.problem, webhooks, sync, authorization });
}

/** The receive side of the connector whose webhooks arrive at this path (`/webhooks/payments`), if any. */
export function receiverAt(path: string): ReceivingConnector | undefined {
  return webhookReceivers.find((candidate) => candidate.webhooks.path === path);
}

/** The connector whose OAuth callback is at this path (`/auth/crmdata/callback`), if any. */
export function authorizerAt(callbackPath: string): AuthorizingConnector | undefined {
  return authorizers.find((candidate) => candidate.authorization.callbackPath === callbackPath);
}

function byName<Part extends { name: string }>(parts: readonly Part[]): Record<string, Part> {
  return Object.fromEntries(parts.map((part) => [part.name, part]));
}
