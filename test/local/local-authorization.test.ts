import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_DASHBOARD_CLIENT_ID } from '../../local/local-authorization';
import { startTestGateway, type TestGateway } from '../support/local-runtime';

/**
 * The local stand-in for Cognito managed login refuses what Cognito refuses: unknown clients, foreign
 * callback addresses, no PKCE, a wrong verifier, a code used twice, a refresh token after the session ended.
 */
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway.stop());

const verifier = () => randomBytes(32).toString('base64url');
const challenge = (v: string) => createHash('sha256').update(v).digest('base64url');

function authorizeQuery(overrides: Record<string, string> = {}, codeVerifier = verifier()) {
  return new URLSearchParams({
    response_type: 'code',
    client_id: LOCAL_DASHBOARD_CLIENT_ID,
    redirect_uri: `${gateway.url}/`,
    state: 'state-1',
    code_challenge: challenge(codeVerifier),
    code_challenge_method: 'S256',
    scope: 'openid',
    ...overrides,
  });
}

async function signIn(form: Record<string, string>, codeVerifier: string): Promise<{ location: URL; cookie: string }> {
  const response = await fetch(`${gateway.url}/local/oauth2/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...Object.fromEntries(authorizeQuery({}, codeVerifier)), ...form }).toString(),
    redirect: 'manual',
  });
  expect(response.status).toBe(302);
  return { location: new URL(response.headers.get('location')!), cookie: response.headers.get('set-cookie')!.split(';')[0]! };
}

function token(form: Record<string, string>): Promise<Response> {
  return fetch(`${gateway.url}/local/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: LOCAL_DASHBOARD_CLIENT_ID, ...form }).toString(),
  });
}

describe('local sign-in (authorization code with PKCE)', () => {
  it('serves the dashboard config pointing at itself', async () => {
    const config = (await (await fetch(`${gateway.url}/config.json`)).json()) as Record<string, string>;
    expect(config).toEqual({ authority: `${gateway.url}/local`, clientId: LOCAL_DASHBOARD_CLIENT_ID, scopes: 'openid email profile', apiBase: '', signIn: 'local' });
  });

  it.each([
    ['an unknown client', { client_id: 'other' }],
    ['a callback on another site', { redirect_uri: 'https://evil.example/' }],
    ['a callback elsewhere on this site', { redirect_uri: `http://localhost:1/` }],
    ['no PKCE', { code_challenge: '' }],
    ['PKCE with plain', { code_challenge_method: 'plain' }],
    ['the implicit flow', { response_type: 'token' }],
  ])('refuses %s with a page, and no redirect', async (_case, overrides) => {
    const response = await fetch(`${gateway.url}/local/oauth2/authorize?${authorizeQuery(overrides)}`, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('shows the form, and refuses a bad account id beside the field', async () => {
    const form = await fetch(`${gateway.url}/local/oauth2/authorize?${authorizeQuery()}`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('<label for="accountId">Account id</label>');
    const refused = await fetch(`${gateway.url}/local/oauth2/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...Object.fromEntries(authorizeQuery()), accountId: 'Not An Id' }).toString(),
      redirect: 'manual',
    });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    expect(page).toContain('id="accountId-error" role="alert"');
    expect(page).toContain('aria-invalid="true"');
  });

  it('exchanges a code once, with the right verifier only; the tokens carry the claims and open the API', async () => {
    const codeVerifier = verifier();
    const { location } = await signIn({ accountId: 'acme' }, codeVerifier);
    expect(location.origin + location.pathname).toBe(`${gateway.url}/`);
    expect(location.searchParams.get('state')).toBe('state-1');
    const code = location.searchParams.get('code')!;

    const wrongVerifier = await token({ grant_type: 'authorization_code', code, redirect_uri: `${gateway.url}/`, code_verifier: verifier() });
    expect(wrongVerifier.status).toBe(400);
    // The failed attempt used the code up, as Cognito does.
    const { location: again } = await signIn({ accountId: 'acme' }, codeVerifier);
    const fresh = again.searchParams.get('code')!;
    const exchanged = await token({ grant_type: 'authorization_code', code: fresh, redirect_uri: `${gateway.url}/`, code_verifier: codeVerifier });
    expect(exchanged.status).toBe(200);
    const tokens = (await exchanged.json()) as { id_token: string; refresh_token: string; expires_in: number };
    expect(tokens.expires_in).toBe(3600);
    const claims = JSON.parse(Buffer.from(tokens.id_token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(claims).toMatchObject({ 'custom:account_id': 'acme', 'cognito:groups': [] });
    const reused = await token({ grant_type: 'authorization_code', code: fresh, redirect_uri: `${gateway.url}/`, code_verifier: codeVerifier });
    expect(reused.status).toBe(400);

    expect((await gateway.call('GET', '/api/v1/accounts/acme/connections', { token: tokens.id_token })).status).not.toBe(401);
  });

  it('the session cookie signs in again without the form; refresh works until the session ends', async () => {
    const codeVerifier = verifier();
    const { location, cookie } = await signIn({ operator: 'yes' }, codeVerifier);
    const tokens = (await (await token({ grant_type: 'authorization_code', code: location.searchParams.get('code')!, redirect_uri: `${gateway.url}/`, code_verifier: codeVerifier })).json()) as {
      id_token: string;
      refresh_token: string;
    };
    const silent = await fetch(`${gateway.url}/local/oauth2/authorize?${authorizeQuery()}`, { headers: { cookie }, redirect: 'manual' });
    expect(silent.status).toBe(302);
    expect(new URL(silent.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    // prompt=login asks again, session or not.
    expect((await fetch(`${gateway.url}/local/oauth2/authorize?${authorizeQuery({ prompt: 'login' })}`, { headers: { cookie }, redirect: 'manual' })).status).toBe(200);

    gateway.runtime.local.signIn.expireTokens();
    expect((await gateway.call('GET', '/api/v1/accounts', { token: tokens.id_token })).status).toBe(401);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(refreshed.status).toBe(200);
    const { id_token } = (await refreshed.json()) as { id_token: string };
    expect((await gateway.call('GET', '/api/v1/accounts', { token: id_token })).status).toBe(200);

    gateway.runtime.local.signIn.expireSessions();
    expect((await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).status).toBe(400);
    expect((await fetch(`${gateway.url}/local/oauth2/authorize?${authorizeQuery()}`, { headers: { cookie }, redirect: 'manual' })).status).toBe(200);
  });

  it('revokes a refresh token, and signs out only back to the dashboard', async () => {
    const codeVerifier = verifier();
    const { location } = await signIn({ accountId: 'acme' }, codeVerifier);
    const { refresh_token } = (await (await token({ grant_type: 'authorization_code', code: location.searchParams.get('code')!, redirect_uri: `${gateway.url}/`, code_verifier: codeVerifier })).json()) as {
      refresh_token: string;
    };
    await fetch(`${gateway.url}/local/oauth2/revoke`, { method: 'POST', body: new URLSearchParams({ token: refresh_token, client_id: LOCAL_DASHBOARD_CLIENT_ID }) });
    expect((await token({ grant_type: 'refresh_token', refresh_token })).status).toBe(400);

    const out = await fetch(`${gateway.url}/local/logout?${new URLSearchParams({ client_id: LOCAL_DASHBOARD_CLIENT_ID, logout_uri: `${gateway.url}/` })}`, { redirect: 'manual' });
    expect(out.status).toBe(302);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    const elsewhere = await fetch(`${gateway.url}/local/logout?${new URLSearchParams({ client_id: LOCAL_DASHBOARD_CLIENT_ID, logout_uri: 'https://evil.example/' })}`, { redirect: 'manual' });
    expect(elsewhere.status).toBe(400);
  });
});
