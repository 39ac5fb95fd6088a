import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillingSimulator } from '../../sandbox/billing-simulator';
import type { ConnectionView } from '../../shared/connections/connection-view';
import { forgetRateBudgets } from '../../shared/http/rate-budget';
import { startBillingGateway, type BillingGateway } from '../support/billing-gateway';
import { generatedKey, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * Connect Account checks the credentials: one Test Connection right after saving, unless the
 * caller asks with `?test=false`, and the health found is stored with the connection.
 */
describe('Connect Account checks the connection', () => {
  let sim: BillingSimulator;
  let gateway: TestGateway;
  let token: string;
  let apiKey: string;
  let world: BillingGateway;

  beforeAll(async () => {
    world = await startBillingGateway({ seed: 11, customers: 3 });
    ({ sim, gateway, token, apiKey } = world);
  });
  afterAll(() => world?.stop());

  const platformCalls = () => sim.requests.get('GET /sites/acme-test/api/v2/customers') ?? 0;
  const connect = async (key: string, query = '') => {
    const response = await gateway.call('PUT', `/api/v1/accounts/acme/connections/billing${query}`, { token, body: { siteName: 'acme-test', apiKey: key, environment: 'test' } });
    return { status: response.status, body: (await response.json()) as ConnectionView };
  };
  const stored = async () => (await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'billing'))!.health;

  it('a good key: one cheap read, and the connection answers and is stored healthy; its first sync follows', async () => {
    const limits: Array<string | null> = [];
    const stopWatching = sim.onRequest((request) => void limits.push(request.query.get('limit')));
    try {
      const answer = await connect(apiKey);
      expect(answer.status).toBe(200);
      expect(answer.body.health).toMatchObject({ state: 'healthy', checkedAt: expect.any(String) });
      expect((await stored()).state).toBe('healthy');
      // The first sync the passing test started runs on the sync queue: its listings ask for pages of 100.
      await gateway.runtime.local.queues.syncJobs.idle();
      expect(limits.filter((limit) => limit === '1')).toHaveLength(1);
      expect(limits.filter((limit) => limit === '100').length).toBeGreaterThanOrEqual(4);
    } finally {
      stopWatching();
    }
  });

  it('a wrong key is saved with the health and remedy its test found, never echoed', async () => {
    const wrongKey = generatedKey('test_');
    const answer = await connect(wrongKey);
    expect(answer.status).toBe(200);
    expect(answer.body.health).toMatchObject({ state: 'needs_reconnect', remedy: expect.stringMatching(/verify the API key, or recreate it/i) });
    expect(JSON.stringify(answer.body)).not.toContain(wrongKey);
    expect(await stored()).toMatchObject({ state: 'needs_reconnect' });
  });

  it('a platform outage while connecting: saved, degraded, with the transient remedy', async () => {
    sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 10 });
    try {
      const answer = await connect(apiKey);
      expect(answer.status).toBe(200);
      expect(answer.body.health.state).toBe('degraded');
    } finally {
      sim.faults.clear();
      forgetRateBudgets();
    }
  });

  it('?test=false saves without calling the platform; health stays unknown until a Test Connection', async () => {
    const before = platformCalls();
    const answer = await connect(apiKey, '?test=false');
    expect(answer.status).toBe(200);
    expect(answer.body.health).toEqual({ state: 'unknown' });
    expect(platformCalls()).toBe(before);
    expect(await stored()).toEqual({ state: 'unknown' });
  });

  it('a bad test flag is refused and saves nothing new', async () => {
    const response = await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing?test=maybe', { token, body: { siteName: 'acme-test', apiKey: generatedKey('test_'), environment: 'test' } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: Array<{ path: string }> }).errors.map((e) => e.path)).toEqual(['test']);
    expect(await stored()).toEqual({ state: 'unknown' });
  });

  it('the OpenAPI document describes the flag', async () => {
    const document = (await (await gateway.call('GET', '/api/v1/openapi.json')).json()) as {
      paths: Record<string, { put: { parameters: Array<{ name: string; in: string; required: boolean; schema: { enum?: string[]; default?: string } }> } }>;
    };
    const parameter = document.paths['/api/v1/accounts/{accountId}/connections/{connector}']!.put.parameters.find((p) => p.name === 'test');
    expect(parameter).toMatchObject({ in: 'query', required: false, schema: { enum: ['true', 'false'], default: 'true' } });
  });
});
