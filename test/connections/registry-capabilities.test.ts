import { describe, expect, it } from 'vitest';
import { authorizerAt, authorizers, connectors, reactionsTo, receiverAt, schedulingPlatforms, syncPlatforms, syncSchedules, webhookAppliers, webhookReceivers } from '../../shared/connections/registry';

/**
 * Functions load connectors by capability (bundles by capability: docs/cold-starts.md). The
 * capability lists must say what the full connectors say: every connector with a capability is
 * listed under it, with the very parts its definition is made of.
 */
describe('the registry by capability', () => {
  const all = connectors.all().filter((connector) => ['payment', 'billing', 'data', 'messaging'].includes(connector.name));

  it('lists each webhook receiver with the receive side of its connector', () => {
    const withWebhooks = all.filter((connector) => connector.webhooks);
    expect(webhookReceivers.map(({ name }) => name).sort()).toEqual(withWebhooks.map(({ name }) => name).sort());
    for (const connector of withWebhooks) {
      const receiving = receiverAt(connector.webhooks!.path)!;
      expect(receiving.name).toBe(connector.name);
      expect(receiving.platform).toBe(connector.platform);
      for (const part of ['precheck', 'verify', 'readEnvelope', 'forQueue'] as const) expect(receiving.webhooks[part]).toBe(connector.webhooks![part]);
    }
    expect(receiverAt('/webhooks/nowhere')).toBeUndefined();
  });

  it('lists each applier with its connector webhooks and client', () => {
    const withWebhooks = all.filter((connector) => connector.webhooks);
    expect(Object.keys(webhookAppliers).sort()).toEqual(withWebhooks.map(({ name }) => name).sort());
    for (const connector of withWebhooks) {
      expect(webhookAppliers[connector.name]!.webhooks).toBe(connector.webhooks);
      expect(webhookAppliers[connector.name]!.client).toBe(connector.client);
    }
  });

  it('lists each syncing and scheduling connector with the parts the sync engine runs', () => {
    const syncing = connectors.syncing();
    expect(Object.keys(syncPlatforms).sort()).toEqual(Object.keys(syncing).filter((name) => all.some((c) => c.name === name)).sort());
    for (const [name, platform] of Object.entries(syncPlatforms)) {
      for (const part of ['settings', 'client', 'sync', 'problem'] as const) expect(platform[part]).toBe(syncing[name]![part]);
    }
    // The dispatcher's view: the same connectors, with the same settings schema.
    expect(Object.keys(syncSchedules).sort()).toEqual(Object.keys(syncPlatforms).sort());
    for (const [name, schedule] of Object.entries(syncSchedules)) expect(schedule.settings).toBe(syncing[name]!.settings);
    const scheduling = all.filter((connector) => connector.scheduled);
    expect(Object.keys(schedulingPlatforms).sort()).toEqual(scheduling.map(({ name }) => name).sort());
    for (const connector of scheduling) expect(schedulingPlatforms[connector.name]!.scheduled).toBe(connector.scheduled);
  });

  it('lists each connector that connects through the browser with the parts the OAuth callback runs', () => {
    const authorizing = all.filter((connector) => connector.authorization);
    expect(authorizing.length).toBeGreaterThan(0);
    expect(authorizers.map(({ name }) => name).sort()).toEqual(authorizing.map(({ name }) => name).sort());
    for (const connector of authorizing) {
      const part = authorizerAt(connector.authorization!.callbackPath);
      expect(part?.name).toBe(connector.name);
      expect(part?.platform).toBe(connector.platform);
      for (const piece of ['settings', 'testConnection', 'problem', 'webhooks', 'sync', 'authorization'] as const) expect(part?.[piece]).toBe(connector[piece]);
    }
    expect(authorizerAt('/auth/nowhere/callback')).toBeUndefined();
  });

  it('gives the reactions every connector has to an event type', () => {
    const types = new Set(all.flatMap((connector) => Object.keys(connector.reactions ?? {})));
    expect(types.size).toBeGreaterThan(0);
    for (const type of [...types, 'no.such.event']) {
      expect(reactionsTo(type)).toEqual(all.flatMap((connector) => (connector.reactions?.[type] ? [connector.reactions[type]] : [])));
    }
  });
});
