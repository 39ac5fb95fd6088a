import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillingSimulator } from '../../sandbox/billing-simulator';
import { handler as syncDispatcher } from '../../functions/sync-dispatcher';
import { forgetRateBudgets } from '../../shared/http/rate-budget';
import type { ConnectionView } from '../../shared/connections/connection-view';
import type { SyncStatus } from '../../shared/sync/sync-status';
import { startBillingGateway, type BillingGateway } from '../support/billing-gateway';
import { generatedKey, type TestGateway } from '../support/local-runtime';
import { recordsAt } from '../support/stored-connection';
import { RECORD_SHARDS } from '../../shared/store/record-layout';
import * as store from '../../shared/store/store';

/**
 * Test Connection, sync settings, manual and scheduled syncs through the API, end to end: the
 * local gateway, its in-process sync queue and the billing simulator over HTTP.
 */
describe('connection and sync routes', () => {
  let sim: BillingSimulator;
  let gateway: TestGateway;
  let token: string;
  let apiKey: string;
  let world: BillingGateway;

  beforeAll(async () => {
    world = await startBillingGateway({ seed: 5, customers: 120 });
    ({ sim, gateway, token, apiKey } = world);
    sim.addSite('other-test');
  });
  afterAll(() => world?.stop());

  // Without Connect Account's own test, so no first sync starts behind the story these tests tell; the last test is about that sync.
  const connect = (siteName: string, key: string, { test = false } = {}) =>
    gateway.call('PUT', `/api/v1/accounts/acme/connections/billing${test ? '' : '?test=false'}`, { token, body: { siteName, apiKey: key, environment: 'test' } });
  const test = async () => (await gateway.call('POST', '/api/v1/accounts/acme/connections/billing/test', { token })).json();
  const connection = async () => (await (await gateway.call('GET', '/api/v1/accounts/acme/connections/billing', { token })).json()) as ConnectionView;
  const syncs = async () => ((await (await gateway.call('GET', '/api/v1/accounts/acme/connections/billing/syncs', { token })).json()) as { syncs: SyncStatus[] }).syncs;

  it('Test Connection: healthy with a good key; each failure with the spec’s remedy and the health it sets', async () => {
    expect((await connect('acme-test', apiKey)).status).toBe(200);
    expect(await test()).toMatchObject({ ok: true, health: { state: 'healthy' } });

    await connect('acme-test', generatedKey('test_'));
    const badKey = await test();
    expect(badKey).toMatchObject({ ok: false, health: { state: 'needs_reconnect', remedy: expect.stringMatching(/verify the API key, or recreate it/i) } });

    await connect('nowhere-test', apiKey);
    expect(await test()).toMatchObject({ ok: false, health: { state: 'needs_reconnect', remedy: expect.stringMatching(/subdomain/i) } });

    const publishable = generatedKey('test_');
    sim.addApiKey('acme-test', publishable, { type: 'publishable' });
    await connect('acme-test', publishable);
    expect(await test()).toMatchObject({ ok: false, health: { state: 'needs_reconnect', remedy: expect.stringMatching(/read-only key \(preferred\) or a full-access key/i) } });

    await connect('acme-test', apiKey);
    // The client's attempts, all rate limited.
    sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 4 });
    expect(await test()).toMatchObject({ ok: false, health: { state: 'degraded', remedy: expect.stringMatching(/reduce the sync frequency/i) } });
    sim.faults.clear();
    forgetRateBudgets(); // the storm slowed this connection's shared budget; later tests start afresh
    const shown = await connection();
    expect(shown.health.state).toBe('degraded');
    expect(JSON.stringify(shown)).not.toContain(apiKey);
  });

  it('sync settings: defaults on connect, validated changes, bad values refused with nothing changed', async () => {
    await connect('acme-test', apiKey);
    const view = await connection();
    expect(view.syncSettings).toEqual({ dataObjects: ['customers', 'subscriptions', 'invoices', 'payments'], frequency: 'daily', method: 'api', subscriptionStatus: 'all' });

    const bad = [
      { dataObjects: ['customers', 'faxes'] },
      { frequency: 'every-minute' },
      { method: 'carrier-pigeon' },
      { subscriptionStatus: 'paused' },
      { dataObjects: [] },
      { pageSize: 500 },
    ];
    for (const body of bad) {
      const response = await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing/sync-settings', { token, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    }
    const unchanged = await connection();
    expect(unchanged.syncSettings).toEqual(view.syncSettings);

    const saved = await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing/sync-settings', {
      token,
      body: { dataObjects: ['customers'], frequency: 'hourly', method: 'both', subscriptionStatus: 'active' },
    });
    expect(saved.status).toBe(200);
    expect(((await saved.json()) as ConnectionView).syncSettings).toMatchObject({ dataObjects: ['customers'], frequency: 'hourly', method: 'both' });
  });

  it('the hourly schedule enqueues the connection’s jobs; the sync runs and its status is readable', async () => {
    const result = await syncDispatcher({ frequency: 'hourly' });
    expect(result.enqueued).toBe(1);
    expect(await syncDispatcher({ frequency: 'daily' })).toMatchObject({ enqueued: 0 });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect(await syncs()).toEqual([expect.objectContaining({ object: 'customers', state: 'idle', mode: 'full', counts: expect.objectContaining({ created: 120 }) })]);
  });

  it('manual sync: unknown objects refused; a full resync of chosen objects enqueued and run', async () => {
    const refused = await gateway.call('POST', '/api/v1/accounts/acme/connections/billing/syncs', { token, body: { objects: ['faxes'] } });
    expect(refused.status).toBe(400);
    const started = await gateway.call('POST', '/api/v1/accounts/acme/connections/billing/syncs', { token, body: { objects: ['customers'], full: true } });
    expect(started.status).toBe(202);
    expect(await started.json()).toEqual({ enqueued: 1 });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect((await syncs())[0]).toMatchObject({ mode: 'full', counts: { created: 0, unchanged: 120 } });
  });

  it('reconnecting forgets where the syncs stood: the next sync is full', async () => {
    expect((await syncs()).length).toBe(1);
    const table = gateway.runtime.local.gateway.table;
    // A connection made through the API spreads its records over shard keys, and a reconnect keeps that layout.
    expect((await store.getConnection(table, 'acme', 'billing'))?.recordShards).toBe(RECORD_SHARDS);
    expect((await connect('acme-test', apiKey)).status).toBe(200);
    expect((await store.getConnection(table, 'acme', 'billing'))?.recordShards).toBe(RECORD_SHARDS);
    expect(await syncs()).toEqual([]);
    await gateway.call('POST', '/api/v1/accounts/acme/connections/billing/syncs', { token, body: { objects: ['customers'] } });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect((await syncs())[0]).toMatchObject({ mode: 'full', counts: { unchanged: 120 } });
  });

  it('disconnect stops the schedule and purges what was synced', async () => {
    const table = gateway.runtime.local.gateway.table;
    expect((await store.listRecords(table, recordsAt('acme', 'billing', 'customers'))).records.length).toBeGreaterThan(0);
    expect((await gateway.call('DELETE', '/api/v1/accounts/acme/connections/billing', { token })).status).toBe(204);
    expect(await syncDispatcher({ frequency: 'hourly' })).toMatchObject({ enqueued: 0 });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect((await store.listRecords(table, recordsAt('acme', 'billing', 'customers'), { includeDeleted: true })).records).toEqual([]);
    expect(await store.listSyncCheckpoints(table, 'acme')).toEqual([]);

    // Records an earlier connection left under the single key of the layout before sharding (its
    // purge not done): a new connection keeps that key, so they are never stored twice.
    await store.putRecordIfChanged(table, recordsAt('acme', 'billing', 'customers', 'legacy'), { id: 'cus_left', hash: 'h', body: { id: 'cus_left' } });
    expect((await connect('acme-test', apiKey)).status).toBe(200);
    expect((await store.getConnection(table, 'acme', 'billing'))?.recordShards).toBe(1);
  });

  it('a Connect Account whose test passes starts the first sync at once; a failed test or Webhooks only starts none', async () => {
    const table = gateway.runtime.local.gateway.table;
    expect((await gateway.call('DELETE', '/api/v1/accounts/acme/connections/billing', { token })).status).toBe(204);
    await gateway.runtime.local.queues.syncJobs.idle();

    const connected = await connect('acme-test', apiKey, { test: true });
    expect(await connected.json()).toMatchObject({ health: { state: 'healthy' }, firstSync: { enqueued: 4 } });
    await gateway.runtime.local.queues.syncJobs.idle();
    const first = await syncs();
    expect(first.map((sync) => sync.object).sort()).toEqual(['customers', 'invoices', 'payments', 'subscriptions']);
    for (const sync of first) {
      expect(sync, sync.object).toMatchObject({ state: 'idle', mode: 'full' });
      expect(sync.lastError, sync.object).toBeUndefined();
    }
    expect(first.find((sync) => sync.object === 'customers')?.counts.created).toBe(120);
    expect((await store.listRecords(table, recordsAt('acme', 'billing', 'customers'), { limit: 200 })).records).toHaveLength(120);

    // A reconnect whose test fails saves the key (the health says what to fix) and starts nothing.
    const refused = await connect('acme-test', generatedKey('test_'), { test: true });
    const refusedView = (await refused.json()) as ConnectionView;
    expect(refusedView.health.state).toBe('needs_reconnect');
    expect(refusedView.firstSync).toBeUndefined();
    await gateway.runtime.local.queues.syncJobs.idle();
    expect(await syncs()).toEqual([]);

    // Webhooks only: no schedule syncs it, and neither does connecting.
    const webhooksOnly = { dataObjects: ['customers'], frequency: 'daily', method: 'webhooks', subscriptionStatus: 'all' };
    expect((await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing/sync-settings', { token, body: webhooksOnly })).status).toBe(200);
    const viaWebhooks = (await (await connect('acme-test', apiKey, { test: true })).json()) as ConnectionView;
    expect(viaWebhooks.health.state).toBe('healthy');
    expect(viaWebhooks.firstSync).toBeUndefined();
    await gateway.runtime.local.queues.syncJobs.idle();
    expect(await syncs()).toEqual([]);
  });

  it('a first sync draws from the account\'s syncs quota: past it, the connection is saved with a warning and starts nothing', async () => {
    const operator = await gateway.operatorToken();
    const quotas = { syncs: { ratePerSecond: 0.01, burst: 1 } };
    expect((await gateway.call('PUT', '/api/v1/accounts/frugal', { token: operator, body: { name: 'Frugal', integrationsEnabled: true, quotas } })).status).toBe(200);
    const frugal = await gateway.userToken('frugal');
    const connectFrugal = async () =>
      (await (await gateway.call('PUT', '/api/v1/accounts/frugal/connections/billing', { token: frugal, body: { siteName: 'acme-test', apiKey, environment: 'test' } })).json()) as ConnectionView;

    expect((await connectFrugal()).firstSync).toEqual({ enqueued: 4 });
    const second = await connectFrugal();
    expect(second.health.state).toBe('healthy');
    expect(second.firstSync).toBeUndefined();
    expect(second.warnings).toEqual([expect.stringMatching(/The first sync did not start: .*quota.* Press Sync now in \d+ s, or wait for the schedule\./)]);
    // Sync now meets the same spent quota.
    expect((await gateway.call('POST', '/api/v1/accounts/frugal/connections/billing/syncs', { token: frugal, body: {} })).status).toBe(429);
    await gateway.runtime.local.queues.syncJobs.idle();
  });
});
