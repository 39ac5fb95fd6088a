import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { forgetDataTokens } from '../../shared/data/auth';
import { dataClient, dataRateLimits, DataSetupError, type DataClientOptions, type DataPlatformSession } from '../../shared/data/client';
import { DATA_QUERY_PATH, testDataConnection } from '../../shared/data/test-connection';
import type { RateBudget } from '../../shared/http/rate-budget';
import { startDataSandbox, type DataSandbox } from './support';

const countQuery = { method: 'POST' as const, path: DATA_QUERY_PATH, body: { sql: 'SELECT COUNT(*) FROM UnifiedIndividual__dlm' }, idempotent: true };

/** A budget that counts what the session draws from it and never waits. */
function countingBudget(): RateBudget & { taken: number } {
  const budget = { taken: 0, take: async (cost = 1) => void (budget.taken += cost), penalize: () => {} };
  return budget;
}

describe('the data platform session', () => {
  let sandbox: DataSandbox;
  const session = (overrides: Partial<DataClientOptions> = {}): DataPlatformSession =>
    dataClient({
      env: sandbox.env,
      accountId: sandbox.accountId,
      config: sandbox.config,
      credentials: sandbox.credentials,
      rateBudget: countingBudget(),
      sleep: async () => {},
      ...overrides,
    });

  beforeAll(async () => {
    sandbox = await startDataSandbox();
    sandbox.sim.data.seedUnifiedIndividuals(7);
  });
  afterEach(() => {
    forgetDataTokens();
    sandbox.sim.faults.clear();
  });
  afterAll(() => sandbox.stop());

  it('runs Test Connection: the whole token flow and one cheap query', async () => {
    const before = sandbox.tokenRequests();
    await expect(testDataConnection(session())).resolves.toEqual({ unifiedIndividuals: 7 });
    expect(sandbox.tokenRequests()).toEqual({ oauth2: before.oauth2 + 1, exchange: before.exchange + 1 });
    expect(sandbox.sim.requests.get(`POST ${DATA_QUERY_PATH}`)).toBeGreaterThanOrEqual(1);
  });

  it('reuses one token for many requests: 10 requests, 1 token flow', async () => {
    const before = sandbox.tokenRequests();
    const s = session();
    for (let i = 0; i < 10; i += 1) await s.request(countQuery);
    // A second session of the same connection (another sync job in the same process) shares the token.
    await session().request(countQuery);
    expect(sandbox.tokenRequests()).toEqual({ oauth2: before.oauth2 + 1, exchange: before.exchange + 1 });
  });

  it('draws every data call from the connection rate budget, not the token calls', async () => {
    const budget = countingBudget();
    const s = session({ rateBudget: budget });
    for (let i = 0; i < 3; i += 1) await s.request(countQuery);
    expect(budget.taken).toBe(3);
  });

  it('renews once when the platform expires the token, and the call succeeds', async () => {
    const s = session();
    await s.request(countQuery);
    const before = sandbox.tokenRequests();
    const queriesBefore = sandbox.sim.requests.get(`POST ${DATA_QUERY_PATH}`) ?? 0;
    sandbox.sim.identity.expireAllTokens();

    const answer = await s.request(countQuery);
    expect(answer.status).toBe(200);
    expect(sandbox.tokenRequests()).toEqual({ oauth2: before.oauth2 + 1, exchange: before.exchange + 1 });
    // The refused attempt and the one after renewal.
    expect((sandbox.sim.requests.get(`POST ${DATA_QUERY_PATH}`) ?? 0) - queriesBefore).toBe(2);
  });

  it('shares one renewal between concurrent callers hit by the same expiry', async () => {
    const s = session();
    await s.request(countQuery);
    sandbox.sim.identity.expireAllTokens();
    const before = sandbox.tokenRequests();
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.request(countQuery)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(sandbox.tokenRequests()).toEqual({ oauth2: before.oauth2 + 1, exchange: before.exchange + 1 });
  });

  it('renews before expiry without waiting for a 401', async () => {
    let now = Date.now();
    const s = session({ now: () => now });
    await s.request(countQuery);
    const before = sandbox.tokenRequests();
    const queriesBefore = sandbox.sim.requests.get(`POST ${DATA_QUERY_PATH}`) ?? 0;
    // The simulator's tokens live 2 h; renewal starts 5 minutes before.
    now += 2 * 60 * 60_000 - 4 * 60_000;
    await s.request(countQuery);
    expect(sandbox.tokenRequests()).toEqual({ oauth2: before.oauth2 + 1, exchange: before.exchange + 1 });
    expect((sandbox.sim.requests.get(`POST ${DATA_QUERY_PATH}`) ?? 0) - queriesBefore).toBe(1);
  });

  it('gives up after one renewal when the new token is refused too', async () => {
    const s = session();
    await s.request(countQuery);
    const before = sandbox.tokenRequests();
    sandbox.sim.faults.inject({ fault: { kind: 'expired-token' }, times: 2, pathPrefix: DATA_QUERY_PATH });
    await expect(s.request(countQuery)).rejects.toMatchObject({ name: 'PlatformError', status: 401 });
    expect(sandbox.tokenRequests().oauth2 - before.oauth2).toBe(1);
  });

  it('reports the tenant address from the exchange, normalised', async () => {
    await expect(session().tenantUrl()).resolves.toBe(sandbox.sim.url);
  });

  it('refuses an unusable stored connection before any call, naming no secret', () => {
    const before = sandbox.tokenRequests();
    expect(() => session({ credentials: {} })).toThrow(DataSetupError);
    expect(() => session({ credentials: { privateKey: 'garbage' } })).toThrow(/private key is not usable/);
    expect(() => session({ config: { ...sandbox.config, loginUrl: 'https://elsewhere.example' } })).toThrow(DataSetupError);
    expect(sandbox.tokenRequests()).toEqual(before);
  });
});

describe('dataRateLimits', () => {
  it('defaults to a conservative 10 a second and honours a configured rate within bounds', () => {
    expect(dataRateLimits({})).toEqual({ ratePerSecond: 10, burst: 10 });
    expect(dataRateLimits({ requestsPerSecond: 2 }).ratePerSecond).toBe(2);
    expect(dataRateLimits({ requestsPerSecond: 10_000 }).ratePerSecond).toBe(100);
    expect(dataRateLimits({ requestsPerSecond: 0 }).ratePerSecond).toBe(1);
  });
});
