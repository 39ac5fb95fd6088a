import { createHash, randomBytes } from 'node:crypto';
import { exportSPKI } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import { bearer, inMinutes, jwtBearerToken, postForm, rsaKeyPair, signAssertion, type KeyPair } from './crm-fixtures';

const JWT_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const CALLBACK = 'https://gateway.example/auth/crmdata/callback';

let crm: RunningCrmSimulator;
let appKeys: KeyPair;
let strangerKeys: KeyPair;
let clientSecret: string;
/** A clock the tests move to make tokens expire. */
let clockOffsetMs = 0;

beforeAll(async () => {
  crm = await startCrmSimulator({ now: () => Date.now() + clockOffsetMs, accessTokenLifetimeMs: 60_000 });
  [appKeys, strangerKeys] = await Promise.all([rsaKeyPair(), rsaKeyPair()]);
  clientSecret = randomBytes(24).toString('hex');
  crm.identity.registerUser({ username: 'integration@example.com' });
  crm.identity.registerUser({ username: 'not-approved@example.com' });
  crm.identity.registerConnectedApp({
    clientId: 'jwt-app',
    clientSecret,
    publicKey: appKeys.publicKey,
    callbackUrl: CALLBACK,
    scopes: ['api', 'refresh_token', 'cdp_query_api'],
    approvedUsers: ['integration@example.com'],
  });
  // The same key uploaded as PEM text, the way a person pastes it.
  crm.identity.registerConnectedApp({
    clientId: 'pem-app',
    clientSecret,
    certificatePem: await exportSPKI(appKeys.publicKey),
    callbackUrl: CALLBACK,
    scopes: ['api'],
    approvedUsers: ['integration@example.com'],
  });
});

afterAll(async () => {
  await crm.stop();
});

async function jwtBearer(claims: { iss?: string; sub?: string; aud?: string; exp?: number }, key = appKeys.privateKey) {
  const assertion = await signAssertion(key, {
    iss: claims.iss ?? 'jwt-app',
    sub: claims.sub ?? 'integration@example.com',
    aud: claims.aud ?? crm.loginUrl,
    exp: 'exp' in claims ? claims.exp : inMinutes(3),
  });
  const response = await postForm(`${crm.url}/services/oauth2/token`, { grant_type: JWT_GRANT, assertion });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

describe('JWT bearer flow', () => {
  it('issues an access token that opens the APIs, with no refresh token', async () => {
    const { status, body } = await jwtBearer({});
    expect(status).toBe(200);
    expect(body).toMatchObject({ instance_url: crm.url, token_type: 'Bearer', scope: 'api refresh_token cdp_query_api' });
    expect(body.access_token).toMatch(/^00D\w+!/);
    expect(body.id).toContain(`/id/${crm.identity.orgId}/005`);
    expect(Number(body.issued_at)).toBeGreaterThan(0);
    expect(body).not.toHaveProperty('refresh_token');

    const me = await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(body.access_token ?? '') });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ preferred_username: 'integration@example.com', organization_id: crm.identity.orgId });
  });

  it('accepts a key registered as PEM text', async () => {
    expect((await jwtBearer({ iss: 'pem-app' })).status).toBe(200);
  });

  it.each([
    ['a key that does not match the uploaded certificate', { key: 'stranger' }, 'invalid_grant', 'invalid assertion'],
    ['an unknown client id', { iss: 'nobody' }, 'invalid_client_id', 'client identifier invalid'],
    ['the wrong audience', { aud: 'https://login.salesforce.com' }, 'invalid_grant', 'audience is invalid'],
    ['a user who has not approved the app', { sub: 'not-approved@example.com' }, 'invalid_grant', "user hasn't approved this consumer"],
    ['an unknown user', { sub: 'ghost@example.com' }, 'invalid_grant', "user hasn't approved this consumer"],
    ['exp more than 10 years ahead', { exp: inMinutes(11 * 366 * 24 * 60) }, 'invalid_grant', 'invalid assertion'],
    ['exp in the past', { exp: inMinutes(-5) }, 'invalid_grant', 'expired authorization code'],
    ['no exp', { exp: undefined }, 'invalid_grant', 'expired authorization code'],
  ] as const)('refuses %s', async (_case, claims, error, description) => {
    const key = 'key' in claims ? strangerKeys.privateKey : appKeys.privateKey;
    const { status, body } = await jwtBearer(claims as Parameters<typeof jwtBearer>[0], key);
    expect(status).toBe(400);
    expect(body).toEqual({ error, error_description: description });
  });

  it('refuses a garbled assertion and an unknown grant type', async () => {
    const garbled = await postForm(`${crm.url}/services/oauth2/token`, { grant_type: JWT_GRANT, assertion: 'not.a.jwt' });
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toEqual({ error: 'invalid_grant', error_description: 'invalid assertion' });
    const password = await postForm(`${crm.url}/services/oauth2/token`, { grant_type: 'password' });
    expect((await password.json()) as unknown).toMatchObject({ error: 'unsupported_grant_type' });
  });
});

describe('token lifetime', () => {
  it('answers an expired token with 401 INVALID_SESSION_ID, by clock and by expireAllTokens', async () => {
    const first = await jwtBearerToken(crm, appKeys.privateKey, 'jwt-app', 'integration@example.com');
    clockOffsetMs = 61_000;
    try {
      const expired = await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(first.access_token) });
      expect(expired.status).toBe(401);
      expect(await expired.json()).toEqual([{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
    } finally {
      clockOffsetMs = 0;
    }

    const second = await jwtBearerToken(crm, appKeys.privateKey, 'jwt-app', 'integration@example.com');
    expect((await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(second.access_token) })).status).toBe(200);
    crm.identity.expireAllTokens();
    expect((await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(second.access_token) })).status).toBe(401);
  });
});

describe('web server flow with PKCE', () => {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  async function authorize(params: Record<string, string>): Promise<Response> {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'jwt-app',
      redirect_uri: CALLBACK,
      state: 'state-123',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'api refresh_token',
      ...params,
    });
    return fetch(`${crm.url}/services/oauth2/authorize?${query}`, { redirect: 'manual' });
  }

  async function authorizationCode(): Promise<string> {
    const response = await authorize({});
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
    expect(location.searchParams.get('state')).toBe('state-123');
    return location.searchParams.get('code') ?? '';
  }

  function exchange(code: string, overrides: Record<string, string> = {}): Promise<Response> {
    return postForm(`${crm.url}/services/oauth2/token`, {
      grant_type: 'authorization_code',
      code,
      client_id: 'jwt-app',
      client_secret: clientSecret,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
      ...overrides,
    });
  }

  it('redirects with a code, exchanges it once for access and refresh tokens, and refreshes', async () => {
    const code = await authorizationCode();
    const response = await exchange(code);
    expect(response.status).toBe(200);
    const tokens = (await response.json()) as Record<string, string>;
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'api refresh_token', instance_url: crm.url });
    expect(tokens.refresh_token).toBeTruthy();

    const reused = await exchange(code);
    expect(reused.status).toBe(400);
    expect(await reused.json()).toMatchObject({ error: 'invalid_grant' });

    const refreshed = await postForm(`${crm.url}/services/oauth2/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token ?? '',
      client_id: 'jwt-app',
      client_secret: clientSecret,
    });
    expect(refreshed.status).toBe(200);
    const renewed = (await refreshed.json()) as Record<string, string>;
    expect(renewed.access_token).not.toBe(tokens.access_token);
    expect((await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(renewed.access_token ?? '') })).status).toBe(200);

    const bogus = await postForm(`${crm.url}/services/oauth2/token`, { grant_type: 'refresh_token', refresh_token: 'nope', client_id: 'jwt-app' });
    expect(await bogus.json()).toEqual({ error: 'invalid_grant', error_description: 'expired access/refresh token' });
  });

  it('refuses a wrong code verifier', async () => {
    const response = await exchange(await authorizationCode(), { code_verifier: randomBytes(32).toString('base64url') });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'invalid_grant', error_description: 'invalid code verifier' });
  });

  it('refuses a wrong client secret', async () => {
    const response = await exchange(await authorizationCode(), { client_secret: 'wrong' });
    expect(await response.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('refuses a redirect_uri other than the registered callback, at authorize and at exchange', async () => {
    const wrong = await authorize({ redirect_uri: 'https://gateway.example/auth/crmdata/callback/' });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get('location')).toBeNull();
    expect(await wrong.json()).toMatchObject({ error: 'redirect_uri_mismatch' });

    const exchanged = await exchange(await authorizationCode(), { redirect_uri: 'https://elsewhere.example/callback' });
    expect(exchanged.status).toBe(400);
    expect(await exchanged.json()).toMatchObject({ error: 'redirect_uri_mismatch' });
  });

  it('redirects with an error when PKCE is missing or a scope is not granted to the app', async () => {
    const noChallenge = await authorize({ code_challenge: '' });
    const noChallengeLocation = new URL(noChallenge.headers.get('location') ?? '');
    expect(noChallengeLocation.searchParams.get('error')).toBe('invalid_request');
    expect(noChallengeLocation.searchParams.get('code')).toBeNull();

    const badScope = await authorize({ scope: 'api cdp_ingest_api' });
    expect(new URL(badScope.headers.get('location') ?? '').searchParams.get('error')).toBe('invalid_scope');
  });

  it('gives no refresh token when the grant lacks refresh_token and offline_access', async () => {
    const response = await authorize({ scope: 'api' });
    const code = new URL(response.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const tokens = (await (await exchange(code)).json()) as Record<string, string>;
    expect(tokens.access_token).toBeTruthy();
    expect(tokens).not.toHaveProperty('refresh_token');
  });
});
