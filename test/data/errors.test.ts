import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DATA_TOKEN_EXCHANGE_PATH, DataSetupError, forgetDataTokens, IDENTITY_TOKEN_PATH } from '../../shared/data/auth';
import { dataClient, type DataClientOptions } from '../../shared/data/client';
import { dataProblem } from '../../shared/data/errors';
import { DATA_QUERY_PATH, testDataConnection } from '../../shared/data/test-connection';
import { PlatformError, type PlatformErrorDetails } from '../../shared/http/platform-error';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import { rsaKeyPem, startDataSandbox, type DataSandbox, type DataSandboxOptions } from './support';

const sandboxes: DataSandbox[] = [];
afterEach(() => forgetDataTokens());
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.stop()));
});

async function sandboxWith(options: DataSandboxOptions = {}): Promise<DataSandbox> {
  const sandbox = await startDataSandbox(options);
  sandboxes.push(sandbox);
  return sandbox;
}

/** Runs Test Connection over real HTTP and returns the problem it reports (fails the test if it passes). */
async function testConnectionProblem(sandbox: DataSandbox, overrides: Partial<DataClientOptions> = {}): Promise<ReturnType<typeof dataProblem>> {
  const session = dataClient({
    env: sandbox.env,
    accountId: sandbox.accountId,
    config: sandbox.config,
    credentials: sandbox.credentials,
    rateBudget: unlimitedRateBudget,
    sleep: async () => {},
    ...overrides,
  });
  try {
    await testDataConnection(session);
  } catch (error) {
    const problem = dataProblem(error);
    // Nothing secret ever leaves: not the key, not a token.
    const shown = JSON.stringify(problem);
    expect(shown).not.toContain('PRIVATE KEY');
    expect(shown).not.toMatch(/Bearer\s+\S{8,}/);
    return problem;
  }
  throw new Error('Test Connection passed, a failure was expected');
}

describe('dataProblem over real HTTP (the spec Errors table)', () => {
  it('wrong private key: invalid assertion, the key must match the uploaded certificate', async () => {
    const sandbox = await sandboxWith();
    const problem = await testConnectionProblem(sandbox, { credentials: { privateKey: rsaKeyPem().privateKeyPem } });
    expect(problem).toMatchObject({ health: 'needs_reconnect', platformMessage: 'invalid assertion' });
    expect(problem.remedy).toMatch(/private key must match the certificate uploaded/);
  });

  it("unapproved user: set permitted users to admin-approved", async () => {
    const problem = await testConnectionProblem(await sandboxWith({ approved: false }));
    expect(problem.health).toBe('needs_reconnect');
    expect(problem.platformMessage).toBe("user hasn't approved this consumer");
    expect(problem.remedy).toMatch(/Admin approved users are pre-authorized/);
  });

  it('wrong login (audience): use the production login URL for production', async () => {
    const sandbox = await sandboxWith();
    const problem = await testConnectionProblem(sandbox, { config: { ...sandbox.config, loginUrl: 'sandbox' } });
    expect(problem.health).toBe('needs_reconnect');
    expect(problem.platformMessage).toBe('audience is invalid');
    expect(problem.remedy).toMatch(/production login URL for a production org/);
  });

  it('user without the data platform permission set: the exchange fails, assign the permission set', async () => {
    const sandbox = await sandboxWith({ permissionSet: false });
    const problem = await testConnectionProblem(sandbox);
    expect(problem.health).toBe('needs_reconnect');
    expect(problem.reason).toMatch(/token exchange failed/);
    expect(problem.remedy).toMatch(/Assign the data platform admin permission set/);
    // The JWT step worked; the exchange is what failed.
    expect(sandbox.tokenRequests()).toEqual({ oauth2: 1, exchange: 1 });
  });

  it('app without the cdp_query_api scope: add the scope to the OAuth client', async () => {
    const problem = await testConnectionProblem(await sandboxWith({ scopes: ['api', 'cdp_ingest_api'] }));
    expect(problem.health).toBe('needs_reconnect');
    expect(problem.remedy).toBe("Add the cdp_query_api scope to the OAuth client's selected OAuth scopes, then test again.");
  });

  it('429: degraded, reduce the sync frequency or move to a higher tier', async () => {
    const sandbox = await sandboxWith();
    sandbox.sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 10, pathPrefix: DATA_QUERY_PATH });
    const problem = await testConnectionProblem(sandbox, { retry: { maxAttempts: 2 } });
    expect(problem.health).toBe('degraded');
    expect(problem.remedy).toMatch(/reduce the sync frequency or move to a higher data platform tier/);
  });

  it('wrong object name: degraded, verify object names', async () => {
    const sandbox = await sandboxWith();
    const session = dataClient({ env: sandbox.env, accountId: sandbox.accountId, config: sandbox.config, credentials: sandbox.credentials });
    const failure = await session.request({ method: 'POST', path: DATA_QUERY_PATH, body: { sql: 'SELECT COUNT(*) FROM Nope__dlm' }, idempotent: true }).catch((e: unknown) => e);
    const problem = dataProblem(failure);
    expect(problem.health).toBe('degraded');
    expect(problem.remedy).toMatch(/Verify the object names/);
    expect(problem.platformMessage).toMatch(/Nope__dlm/);
  });
});

const platformError = (details: Partial<PlatformErrorDetails>): PlatformError =>
  new PlatformError({ platform: 'data', kind: 'invalid_request', status: 400, attempts: 1, method: 'POST', path: IDENTITY_TOKEN_PATH, retryable: false, ...details });

describe('dataProblem for the refusals the simulator does not produce', () => {
  it('maps each identity description to its remedy', () => {
    const cases: Array<[string, string | undefined, RegExp]> = [
      ['kid not found', 'invalid_grant', /Re-upload the certificate/],
      ['certificate not found for this client', 'invalid_grant', /Attach the certificate .* digital signatures/],
      ['expired authorization code', 'invalid_grant', /future time, at most 10 years/],
      ['JWT expiration claim invalid', 'invalid_grant', /future time, at most 10 years/],
      ['client identifier invalid', 'invalid_client_id', /consumer key/],
      ['invalid assertion', 'invalid_grant', /private key must match/],
    ];
    for (const [description, code, remedy] of cases) {
      const problem = dataProblem(platformError({ platformMessage: description, platformCode: code }));
      expect(problem.health, description).toBe('needs_reconnect');
      expect(problem.remedy, description).toMatch(remedy);
    }
  });

  it('makes outages, timeouts and unreadable answers degraded at every step', () => {
    for (const path of [IDENTITY_TOKEN_PATH, DATA_TOKEN_EXCHANGE_PATH, DATA_QUERY_PATH]) {
      for (const details of [{ kind: 'unavailable', status: 503 }, { kind: 'timeout', status: undefined }, { kind: 'network', status: undefined }, { kind: 'invalid_response', status: 200 }] as const) {
        expect(dataProblem(platformError({ ...details, path })).health, `${path} ${details.kind}`).toBe('degraded');
      }
    }
  });

  it('makes a data API 401 after renewal, a setup error, and other 403s need a reconnect', () => {
    expect(dataProblem(platformError({ kind: 'auth', status: 401, path: DATA_QUERY_PATH })).health).toBe('needs_reconnect');
    expect(dataProblem(platformError({ kind: 'permission', status: 403, path: '/api/v1/ingest/sources/gw/events' })).health).toBe('needs_reconnect');
    const setup = dataProblem(new DataSetupError('no private key is stored for it'));
    expect(setup).toMatchObject({ health: 'needs_reconnect' });
    expect(setup.reason).toContain('no private key is stored');
  });

  it('masks anything secret-shaped the platform echoed, and hides unexpected errors', () => {
    // An identity token (`<org id>!<opaque>`), and a PEM block.
    const token = `00D5g000004XyZ1!${'AQ4AQ'.repeat(10)}`;
    const problem = dataProblem(platformError({ platformMessage: `bad token Bearer ${token} or ${token}` }));
    expect(problem.platformMessage).toBe('bad token Bearer [redacted] or [redacted]');
    const pem = rsaKeyPem().privateKeyPem;
    expect(dataProblem(platformError({ platformMessage: `key ${pem.trim()}` })).platformMessage).toBe('key [redacted]');
    const unexpected = dataProblem(new Error('secret row data'));
    expect(unexpected.health).toBe('degraded');
    expect(JSON.stringify(unexpected)).not.toContain('secret row data');
  });
});
