import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerOf } from '../../shared/api/caller';
import { ProblemError } from '../../shared/api/problem';
import { allApiRoutes } from '../../shared/api/routes/index';
import { isAccountRoute, needsIntegrations } from '../../shared/tenants/account-guard';
import { DEFAULT_QUOTAS, quotaDecision } from '../../shared/tenants/quotas';
import { startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * Tenants cannot reach past what the operator allows: every route of an account answers 403 while
 * its Integrations are off (one table over the whole route list, so a new route cannot slip by), and
 * each quota refuses with 429 problem+json and Retry-After, for that account only.
 */
let gateway: TestGateway;
let operator: string;
beforeAll(async () => {
  gateway = await startTestGateway();
  operator = await gateway.operatorToken();
});
afterAll(() => gateway.stop());

const putAccount = (accountId: string, body: Record<string, unknown>) => gateway.call('PUT', `/api/v1/accounts/${accountId}`, { token: operator, body: { name: accountId, ...body } });

async function apiKey(accountId: string): Promise<string> {
  const created = await gateway.call('POST', `/api/v1/accounts/${accountId}/api-keys`, { token: await gateway.userToken(accountId), body: { name: 'playbook' } });
  expect(created.status).toBe(201);
  return ((await created.json()) as { key: string }).key;
}

/** A concrete address for a route template (values that pass each parameter's schema). */
function pathOf(template: string, accountId: string): string {
  const values: Record<string, string> = { accountId, connector: 'payment', customer: 'cus_1', conversationId: 'cv_abc', email: 'a@example.com', keyId: 'abcdefghijkl' };
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => values[name] ?? 'x');
}

describe('the Integrations switch, on every account route', () => {
  it('guards every route of an account but the account itself; every playbook route draws from a quota', async () => {
    const routes = await allApiRoutes();
    const exempt = routes.filter((route) => isAccountRoute(route) && !needsIntegrations(route)).map((route) => route.operationId);
    expect(exempt).toEqual(['putAccount', 'getAccount']);
    expect(routes.filter((route) => route.access === 'playbook' && !route.quota).map((route) => route.operationId)).toEqual([]);
  });

  it('refuses each one with 403 integrations-disabled while the switch is off, for the user, the operator and a playbook key', async () => {
    expect((await putAccount('switched', { integrationsEnabled: true })).status).toBe(200);
    const key = await apiKey('switched');
    expect((await putAccount('switched', { integrationsEnabled: false })).status).toBe(200);
    const user = await gateway.userToken('switched');
    const guarded = (await allApiRoutes()).filter(needsIntegrations);
    expect(guarded.length).toBeGreaterThan(35);
    for (const route of guarded) {
      const tokens = route.access === 'playbook' ? [key] : [user, operator];
      for (const token of tokens) {
        const response = await gateway.call(route.method, pathOf(route.path, 'switched'), { token, ...(route.body ? { body: {} } : {}) });
        expect(response.status, `${route.method} ${route.path}`).toBe(403);
        expect(response.headers.get('content-type')).toBe('application/problem+json');
        expect(((await response.json()) as { type: string }).type).toBe('urn:integration-gateway:problem:integrations-disabled');
      }
    }
    // Nothing was minted or changed while off.
    expect((await store.listApiKeys(gateway.runtime.local.gateway.table, 'switched')).length).toBe(1);
    // Switched on, the same routes answer again (here: a read of the account's connections).
    expect((await putAccount('switched', { integrationsEnabled: true })).status).toBe(200);
    expect((await gateway.call('GET', '/api/v1/accounts/switched/connections', { token: user })).status).toBe(200);
  });

  it("another account's user still gets 404 first: whether it is switched on is not told", async () => {
    const response = await gateway.call('GET', '/api/v1/accounts/switched/connections', { token: await gateway.userToken('someone-else') });
    expect(response.status).toBe(404);
  });
});

describe('per-account quotas', () => {
  it('an operator sets them; the account shows what is in force; a bad value changes nothing', async () => {
    expect((await putAccount('tiny', { integrationsEnabled: true, quotas: { reads: { ratePerSecond: 0.5, burst: 2 }, syncs: { ratePerSecond: 0.01, burst: 1 } } })).status).toBe(200);
    const shown = (await (await gateway.call('GET', '/api/v1/accounts/tiny', { token: operator })).json()) as { quotas: Record<string, unknown> };
    expect(shown.quotas).toEqual({ ...DEFAULT_QUOTAS, reads: { ratePerSecond: 0.5, burst: 2 }, syncs: { ratePerSecond: 0.01, burst: 1 } });
    const bad = await putAccount('tiny', { quotas: { events: { ratePerSecond: 10, burst: 100 } } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('quotas.events');
    const after = (await (await gateway.call('GET', '/api/v1/accounts/tiny', { token: operator })).json()) as { quotas: Record<string, unknown> };
    expect(after.quotas).toEqual(shown.quotas);
  });

  it('refuses reads past the quota with 429 problem+json and Retry-After, for that account and that quota only', async () => {
    const key = await apiKey('tiny');
    expect((await putAccount('roomy', { integrationsEnabled: true })).status).toBe(200);
    const roomyKey = await apiKey('roomy');
    const read = (token: string) => gateway.call('GET', '/api/v1/playbook/payments/failed?connector=payment', { token });
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await read(key));
    const refused = answers.filter((response) => response.status === 429);
    // A burst of 2 at one every 2 s: the first two pass the quota (and are answered whatever they find).
    expect(answers.slice(0, 2).map((response) => response.status)).not.toContain(429);
    expect(refused.length).toBe(2);
    const problem = (await refused[0]!.json()) as { type: string; status: number; remedy: string };
    expect(refused[0]!.headers.get('content-type')).toBe('application/problem+json');
    expect(problem).toMatchObject({ type: 'urn:integration-gateway:problem:over-quota', status: 429 });
    expect(problem.remedy).toMatch(/Retry-After/);
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    // Another account is not touched by this one's quota.
    for (let i = 0; i < 4; i += 1) expect((await read(roomyKey)).status).not.toBe(429);
  });

  it('past its quota an account costs the table nothing: refusals come from memory, and the guard reads the account once while kept', async () => {
    expect((await putAccount('hammer', { integrationsEnabled: true, quotas: { reads: { ratePerSecond: 0.1, burst: 1 } } })).status).toBe(200);
    const commands: Array<{ name: string; key: string }> = [];
    gateway.runtime.local.dynamo.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: Record<string, { S?: string }> };
        commands.push({ name: context.commandName ?? '?', key: Object.values(input.Key ?? {}).map((value) => value.S).join('|') });
        return next(args);
      },
      { step: 'initialize', name: 'countTenantReads' },
    );
    try {
      const key = await apiKey('hammer');
      const read = () => gateway.call('GET', '/api/v1/playbook/payments/failed?connector=payment', { token: key });
      expect((await read()).status).not.toBe(429);
      expect((await read()).status).toBe(429);
      const beforeHammering = commands.length;
      for (let i = 0; i < 10; i += 1) expect((await read()).status).toBe(429);
      expect(commands.slice(beforeHammering)).toEqual([]);
      // The account (its switch and quotas) was read once for the key's minting and the twelve reads: kept ACCOUNT_KEPT_MS.
      expect(commands.filter((command) => command.name === 'GetItemCommand' && command.key === 'ACCOUNT#hammer|ACCOUNT')).toHaveLength(1);
    } finally {
      gateway.runtime.local.dynamo.client.middlewareStack.remove('countTenantReads');
    }
  });

  it('refuses a second Sync Now from its own quota, whatever the reads quota holds', async () => {
    const token = await gateway.userToken('tiny');
    const start = () => gateway.call('POST', '/api/v1/accounts/tiny/connections/payment/syncs', { token, body: {} });
    expect((await start()).status).not.toBe(429);
    const second = await start();
    expect(second.status).toBe(429);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(60);
  });

  it('the decision: a burst passes back to back, the next waits one interval; a cost above the burst never passes', () => {
    const rate = { ratePerSecond: 10, burst: 3 };
    let tat = 0;
    for (let i = 0; i < 3; i += 1) {
      const decision = quotaDecision(tat, 1_000, 1, rate);
      expect(decision.allowed).toBe(true);
      tat = decision.allowed ? decision.tat! : tat;
    }
    expect(quotaDecision(tat, 1_000, 1, rate)).toEqual({ allowed: false, retryAfterMs: 100 });
    expect(quotaDecision(tat, 1_100, 1, rate).allowed).toBe(true);
    expect(quotaDecision(0, 1_000, 4, rate)).toMatchObject({ allowed: false, retryAfterMs: Number.POSITIVE_INFINITY });
  });
});

describe('sign-in tokens', () => {
  it('only an ID token is accepted (token_use id): an access token of the same pool is refused', () => {
    const request = (claims: Record<string, unknown>) => ({ method: 'GET', path: '/', headers: {}, query: {}, rawBody: Buffer.alloc(0), requestId: 'r', claims });
    expect(callerOf(request({ sub: 'u', token_use: 'id', 'custom:account_id': 'acme' })).accountId).toBe('acme');
    for (const claims of [{ sub: 'u', token_use: 'access' }, { sub: 'u' }]) {
      expect(() => callerOf(request(claims))).toThrow(ProblemError);
    }
  });
});
