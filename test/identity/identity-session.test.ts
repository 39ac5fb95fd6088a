import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import { authorizationCodeGrant, authorizeAddress, type IdentityEndpoint } from '../../shared/identity/identity-client';
import { identityProblem } from '../../shared/identity/identity-problems';
import { forgetIdentitySessions, identitySession } from '../../shared/identity/identity-session';

describe('identity sessions against the simulated identity service', () => {
  let crm: RunningCrmSimulator;
  let clock = Date.parse('2026-11-24T10:00:00Z');
  const now = () => clock;
  const app = { clientId: `3MVG9${randomBytes(16).toString('hex')}`, clientSecret: randomBytes(20).toString('hex') };
  const username = `integration.${randomBytes(4).toString('hex')}@acme.example`;
  const callbackUrl = 'http://127.0.0.1:9/auth/crmmessaging/callback';
  let endpoint: IdentityEndpoint;
  let refreshToken: string;
  const tokenCalls = () => crm.requests.get('POST /services/oauth2/token') ?? 0;

  beforeAll(async () => {
    crm = await startCrmSimulator({ now, accessTokenLifetimeMs: 2 * 60 * 60_000 });
    crm.identity.registerUser({ username, hasMessagingUserLicense: true });
    crm.identity.registerConnectedApp({ ...app, callbackUrl, scopes: ['api', 'refresh_token', 'offline_access'], approvedUsers: [username] });
    endpoint = { loginUrl: crm.loginUrl, platform: 'messaging', allowInsecure: true, now };

    // The browser part of the flow, by hand: authorize, then exchange the code with the verifier.
    const verifier = randomBytes(48).toString('base64url');
    const authorize = authorizeAddress(crm.loginUrl, {
      clientId: app.clientId,
      redirectUri: callbackUrl,
      state: 'state-for-this-test-0123456789',
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
      scopes: ['api', 'refresh_token'],
    });
    const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location')!).searchParams.get('code')!;
    const granted = await authorizationCodeGrant(endpoint, { ...app, code, codeVerifier: verifier, redirectUri: callbackUrl });
    refreshToken = granted.refreshToken!;
  });
  afterAll(async () => {
    forgetIdentitySessions();
    await crm.stop();
  });

  it('refreshes before the session times out, so no call ever meets an expired token', async () => {
    const credentials = { accountId: 'acct-session', clientId: app.clientId, clientSecret: app.clientSecret, refreshToken };
    const env = { IDENTITY_SESSION_SECONDS: 7_200 };
    const before = tokenCalls();
    const first = await identitySession(endpoint, credentials, env);
    expect(await identitySession(endpoint, credentials, env)).toBe(first);
    expect(tokenCalls() - before).toBe(1);

    // Four minutes before the platform would expire it, the gateway has already renewed.
    clock += 2 * 60 * 60_000 - 4 * 60_000;
    expect(crm.identity.authenticateToken(first.accessToken, 'identity').ok).toBe(true);
    const second = await identitySession(endpoint, credentials, env);
    expect(second.accessToken).not.toBe(first.accessToken);
    expect(tokenCalls() - before).toBe(2);
    clock += 5 * 60_000;
    expect(crm.identity.authenticateToken(first.accessToken, 'identity').ok).toBe(false);
    expect(crm.identity.authenticateToken(second.accessToken, 'identity').ok).toBe(true);
  });

  it('shares one renewal between concurrent callers', async () => {
    forgetIdentitySessions();
    const credentials = { accountId: 'acct-concurrent', clientId: app.clientId, clientSecret: app.clientSecret, refreshToken };
    const before = tokenCalls();
    const tokens = await Promise.all(Array.from({ length: 6 }, () => identitySession(endpoint, credentials, { IDENTITY_SESSION_SECONDS: 7_200 })));
    expect(new Set(tokens.map((token) => token.accessToken)).size).toBe(1);
    expect(tokenCalls() - before).toBe(1);
  });
});

describe('the identity service’s refusals, in the spec’s words', () => {
  const cases: Array<[code: string, description: string, grant: 'jwt_bearer' | 'authorization_code' | 'refresh_token' | undefined, remedy: RegExp]> = [
    ['invalid_grant', "user hasn't approved this consumer", 'jwt_bearer', /Admin approved users are pre-authorized/],
    ['invalid_grant', 'audience is invalid', 'jwt_bearer', /production login URL for a production org/],
    ['invalid_grant', 'expired authorization code', 'jwt_bearer', /future time, at most 10 years/],
    ['invalid_grant', 'invalid assertion', 'jwt_bearer', /private key must match the certificate/],
    ['invalid_grant', 'kid not found', 'jwt_bearer', /Re-upload the certificate/],
    ['invalid_grant', 'certificate not found', 'jwt_bearer', /Attach the certificate/],
    ['invalid_client_id', 'client identifier invalid', 'jwt_bearer', /consumer key into Client ID/],
    ['invalid_client', 'invalid client credentials', 'authorization_code', /consumer secret into Client Secret/],
    ['redirect_uri_mismatch', 'redirect_uri must match configuration', 'authorization_code', /exact callback address/],
    ['invalid_grant', 'expired authorization code', 'authorization_code', /Start Connect Account again/],
    ['invalid_grant', 'invalid code verifier', 'authorization_code', /Start Connect Account again/],
    ['invalid_grant', 'expired access/refresh token', 'refresh_token', /Connect again/],
    ['access_denied', "user hasn't approved this consumer", 'authorization_code', /Admin approved users/],
    ['invalid_scope', 'the requested scope is not allowed', 'authorization_code', /scopes/],
  ];
  it.each(cases)('%s "%s" (%s)', (code, description, grant, remedy) => {
    const problem = identityProblem(code, description, grant ? { grant, callbackUrl: 'https://gw.example/auth/crmdata/callback' } : {});
    expect(problem.health).toBe('needs_reconnect');
    expect(problem.remedy).toMatch(remedy);
  });
});
