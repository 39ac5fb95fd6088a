import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import { setLogSink } from '../../shared/log/logger';
import { startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * The authorization code flow end to end, over real HTTP: the gateway (local runtime), a browser
 * played by fetch with manual redirects, and the CRM simulator's identity service (authorize page,
 * code exchange with PKCE, refresh, revocation). Both connectors that sign in to it, every bad
 * callback refused with nothing stored, and no secret in any log line, address or answer.
 */
describe('authorization code flow', () => {
  let crm: RunningCrmSimulator;
  let gateway: TestGateway;
  let token: string;
  const logLines: string[] = [];
  let restoreSink: ReturnType<typeof setLogSink>;
  const apps = {
    data: { clientId: `3MVG9${randomBytes(16).toString('hex')}`, clientSecret: randomBytes(20).toString('hex') },
    messaging: { clientId: `3MVG9${randomBytes(16).toString('hex')}`, clientSecret: randomBytes(20).toString('hex') },
  };
  const username = `integration.${randomBytes(4).toString('hex')}@acme.example`;
  const dataForm = { authenticationMethod: 'authorization_code', clientId: apps.data.clientId, clientSecret: apps.data.clientSecret, loginUrl: 'production', apiRegion: 'US' };
  const messagingForm = { authenticationMethod: 'authorization_code', clientId: apps.messaging.clientId, clientSecret: apps.messaging.clientSecret, messagingPlatformKey: `mpk-${randomBytes(6).toString('hex')}` };
  const seen: string[] = [];
  /** The browser's cookie jar: the binding cookie each start set, by the state it goes with. */
  const jar = new Map<string, string>();

  /** Connect Account with the authorization code method: the gateway answers where to send the browser. */
  async function start(connector: 'data' | 'messaging', form: Record<string, unknown>, account = 'acme'): Promise<{ authorizationUrl: string; callbackUrl: string }> {
    const response = await gateway.call('PUT', `/api/v1/accounts/${account}/connections/${connector}?returnTo=/`, { token: await gateway.userToken(account), body: form });
    const text = await response.text();
    seen.push(text);
    expect(response.status).toBe(202);
    const started = JSON.parse(text) as { authorizationUrl: string; callbackUrl: string };
    // The state is single use and belongs in the browser's address, nowhere else.
    const state = new URL(started.authorizationUrl).searchParams.get('state') ?? '';
    seen.push(state);
    const setCookie = response.headers.get('set-cookie') ?? '';
    jar.set(state, setCookie.split(';')[0]!);
    seen.push(setCookie.split(';')[0]!.split('=')[1] ?? '');
    return started;
  }

  /** The browser at the platform's sign-in page: it approves (sandbox auto-approval) and is sent to the callback. */
  async function approve(authorizationUrl: string): Promise<string> {
    const response = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = response.headers.get('location')!;
    seen.push(new URL(location).searchParams.get('code') ?? '');
    return location;
  }

  /** The browser at the gateway's callback, with the cookie its start set (or `cookie`: another browser's, or none). */
  const callback = (address: string, cookie?: string) => {
    const sent = cookie ?? jar.get(new URL(address).searchParams.get('state') ?? '');
    return fetch(address, { redirect: 'manual', ...(sent ? { headers: { cookie: sent } } : {}) });
  };

  function outcomeOf(response: Response): URLSearchParams {
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location')!);
    return new URLSearchParams(location.hash.slice(1));
  }

  beforeAll(async () => {
    restoreSink = setLogSink((line) => logLines.push(line));
    crm = await startCrmSimulator();
    gateway = await startTestGateway({ DATA_LOGIN_URL: crm.loginUrl, DATA_SANDBOX_LOGIN_URL: crm.loginUrl, ALLOW_INSECURE_PLATFORM_URLS: 'true' });
    crm.identity.registerUser({ username, hasDataPlatformPermissionSet: true, hasMessagingUserLicense: true });
    for (const [connector, app] of Object.entries(apps)) {
      crm.identity.registerConnectedApp({
        ...app,
        callbackUrl: `${gateway.url}/auth/crm${connector}/callback`,
        scopes: ['api', 'refresh_token', 'offline_access', 'cdp_query_api', 'cdp_profile_api', 'cdp_ingest_api'],
        approvedUsers: [username],
      });
    }
    await gateway.enableAccount('acme');
    await gateway.enableAccount('globex');
    token = await gateway.userToken('acme');
  });
  afterAll(async () => {
    setLogSink(restoreSink);
    await gateway.stop();
    await crm.stop();
  });

  it('answers the platform address with every parameter: state, S256 challenge, exact callback, the spec scopes', async () => {
    const started = await start('data', dataForm);
    const url = new URL(started.authorizationUrl);
    expect(url.origin + url.pathname).toBe(`${crm.loginUrl}/services/oauth2/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: apps.data.clientId,
      redirect_uri: `${gateway.url}/auth/crmdata/callback`,
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge_method: 'S256',
      scope: 'api refresh_token offline_access cdp_query_api cdp_profile_api cdp_ingest_api',
    });
    expect(started.callbackUrl).toBe(`${gateway.url}/auth/crmdata/callback`);
    expect(started.authorizationUrl).not.toContain(apps.data.clientSecret);
    // Nothing is a connection until the browser comes back.
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'data')).toBeUndefined();

    const messagingUrl = new URL((await start('messaging', messagingForm)).authorizationUrl);
    expect(messagingUrl.searchParams.get('redirect_uri')).toBe(`${gateway.url}/auth/crmmessaging/callback`);
    expect(messagingUrl.searchParams.get('scope')).toBe('api refresh_token offline_access');
  });

  it('completes the data connection: code exchanged with the verifier, refresh token sealed, Test Connection healthy', async () => {
    const back = await callback(await approve((await start('data', dataForm)).authorizationUrl));
    const outcome = outcomeOf(back);
    expect(Object.fromEntries(outcome)).toMatchObject({ connector: 'data', outcome: 'connected' });
    const location = back.headers.get('location')!;
    expect(location).not.toMatch(/code=|state=|token/i);

    const view = (await (await gateway.call('GET', '/api/v1/accounts/acme/connections/data', { token })).json()) as {
      config: Record<string, unknown>;
      maskedSecrets: Record<string, string>;
      health: { state: string };
    };
    expect(view.config).toMatchObject({ authenticationMethod: 'authorization_code', clientId: apps.data.clientId });
    expect(Object.keys(view.maskedSecrets).sort()).toEqual(['clientSecret', 'refreshToken']);
    expect(view.health.state).toBe('healthy');

    // Queries work as with JWT bearer: the data-platform token came through the a360 exchange.
    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/data/test', { token })).json()) as { ok: boolean };
    expect(tested.ok).toBe(true);
    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'data');
    const credentials = await gateway.runtime.local.gateway.vault.open({ accountId: 'acme', connector: 'data' }, stored!.credentials);
    expect(Object.keys(credentials).sort()).toEqual(['clientSecret', 'refreshToken']);
    seen.push(credentials.refreshToken!);
  });

  it('completes the messaging connection the same way', async () => {
    const outcome = outcomeOf(await callback(await approve((await start('messaging', messagingForm)).authorizationUrl)));
    expect(Object.fromEntries(outcome)).toMatchObject({ connector: 'messaging', outcome: 'connected' });
    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/messaging/test', { token })).json()) as { ok: boolean };
    expect(tested.ok).toBe(true);
    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'messaging');
    const credentials = await gateway.runtime.local.gateway.vault.open({ accountId: 'acme', connector: 'messaging' }, stored!.credentials);
    expect(credentials.refreshToken).toBeTruthy();
    seen.push(credentials.refreshToken!);
  });

  it('refuses a callback with no state, a forged state and a replayed one, with a page that says what to do', async () => {
    const address = await approve((await start('data', dataForm, 'globex')).authorizationUrl);
    const forged = new URL(address);
    forged.searchParams.set('state', randomBytes(32).toString('base64url'));
    const noState = new URL(address);
    noState.searchParams.delete('state');
    for (const bad of [noState, forged]) {
      const response = await callback(bad.toString());
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('text/html');
      expect(await response.text()).toMatch(/start Connect Account for the data platform again/);
    }
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'data')).toBeUndefined();

    // The real callback still works once, and only once.
    expect(outcomeOf(await callback(address)).get('outcome')).toBe('connected');
    const replay = await callback(address);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toMatch(/already finished/);
  });

  it('binds the sign-in to the browser that started it: an HttpOnly, SameSite=Lax cookie on the callback path, required there', async () => {
    const response = await gateway.call('PUT', '/api/v1/accounts/globex/connections/data?returnTo=/', { token: await gateway.userToken('globex'), body: dataForm });
    expect(response.status).toBe(202);
    const setCookie = response.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^ig_oauth_binding=[A-Za-z0-9_-]{43}; Path=\/auth\/crmdata\/callback; Max-Age=600; HttpOnly; SameSite=Lax$/);
    // The local gateway is served over http: Secure would make the browser drop it (https adds it).
    expect(setCookie).not.toMatch(/Secure/);
    const started = (await response.json()) as { authorizationUrl: string };
    expect(JSON.stringify(started)).not.toContain(setCookie.split(';')[0]!.split('=')[1]);

    const before = await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'data');
    // The link followed in someone else's browser: no cookie, or the cookie of that browser's own sign-in.
    const other = await start('data', dataForm, 'globex');
    const otherCookie = jar.get(new URL(other.authorizationUrl).searchParams.get('state') ?? '')!;
    for (const [address, cookie] of [[await approve(started.authorizationUrl), ''], [await approve((await start('data', dataForm, 'globex')).authorizationUrl), otherCookie]] as const) {
      const refused = await callback(address, cookie);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('set-cookie')).toMatch(/^ig_oauth_binding=; Path=\/auth\/crmdata\/callback; Max-Age=0/);
      expect(await refused.text()).toMatch(/finished in the browser that started it/);
    }
    expect((await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'data'))?.updatedAt).toBe(before?.updatedAt);
  });

  it('refuses the callback of an account whose Integrations were switched off after it started, storing nothing', async () => {
    await gateway.enableAccount('umbrella');
    const address = await approve((await start('data', dataForm, 'umbrella')).authorizationUrl);
    const off = await gateway.call('PUT', '/api/v1/accounts/umbrella', { token: await gateway.operatorToken(), body: { name: 'umbrella', integrationsEnabled: false } });
    expect(off.status).toBe(200);
    const refused = await callback(address);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/Integrations is not enabled|Integrations are not enabled/);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'umbrella', 'data')).toBeUndefined();
  });

  it('refuses another connector’s state at this callback without using it up', async () => {
    const address = new URL(await approve((await start('messaging', messagingForm, 'globex')).authorizationUrl));
    const atDataCallback = new URL(address);
    atDataCallback.pathname = '/auth/crmdata/callback';
    const refused = await callback(atDataCallback.toString());
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/started for another connector/);
    expect(outcomeOf(await callback(address.toString())).get('outcome')).toBe('connected');
  });

  it('lands in the account that started it, never in the one whose user follows the link', async () => {
    const before = await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'data');
    const address = await approve((await start('data', dataForm, 'globex')).authorizationUrl);
    expect(outcomeOf(await callback(address)).get('outcome')).toBe('connected');
    expect((await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'data'))?.updatedAt).toBe(before?.updatedAt);
  });

  it('tells the user what to do when the platform declines (access_denied), and stores nothing', async () => {
    await gateway.enableAccount('initech');
    const started = await start('data', dataForm, 'initech');
    const url = new URL(started.authorizationUrl);
    url.searchParams.set('login_hint', 'someone.else@acme.example');
    const declined = await approve(url.toString());
    expect(new URL(declined).searchParams.get('error')).toBe('access_denied');
    const outcome = outcomeOf(await callback(declined));
    expect(outcome.get('outcome')).toBe('failed');
    expect(outcome.get('message')).toMatch(/Admin approved users are pre-authorized/);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'initech', 'data')).toBeUndefined();
  });

  it('refuses a code already used, changing nothing', async () => {
    await gateway.enableAccount('hooli');
    const first = await approve((await start('data', dataForm, 'hooli')).authorizationUrl);
    expect(outcomeOf(await callback(first)).get('outcome')).toBe('connected');
    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'hooli', 'data');

    const second = new URL(await approve((await start('data', dataForm, 'hooli')).authorizationUrl));
    second.searchParams.set('code', new URL(first).searchParams.get('code')!);
    const outcome = outcomeOf(await callback(second.toString()));
    expect(outcome.get('outcome')).toBe('failed');
    expect(outcome.get('message')).toMatch(/Start Connect Account again/);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'hooli', 'data')).toEqual(stored);
  });

  it('Disconnect revokes the refresh token on the platform, so it opens nothing afterwards', async () => {
    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'hooli', 'data');
    const { refreshToken } = await gateway.runtime.local.gateway.vault.open({ accountId: 'hooli', connector: 'data' }, stored!.credentials);
    seen.push(refreshToken!);
    const refresh = () =>
      fetch(`${crm.loginUrl}/services/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken!, client_id: apps.data.clientId, client_secret: apps.data.clientSecret }),
      });
    expect((await refresh()).status).toBe(200);
    const revocations = () => crm.requests.get('POST /services/oauth2/revoke') ?? 0;
    const before = revocations();

    const disconnected = await gateway.call('DELETE', '/api/v1/accounts/hooli/connections/data', { token: await gateway.userToken('hooli') });
    expect(disconnected.status).toBeLessThan(300);
    expect(revocations()).toBe(before + 1);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'hooli', 'data')).toBeUndefined();
    const afterwards = await refresh();
    expect(afterwards.status).toBe(400);
    expect(await afterwards.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('the platform itself refuses a callback address the OAuth client does not have', async () => {
    const stranger = { clientId: `3MVG9${randomBytes(16).toString('hex')}`, clientSecret: randomBytes(20).toString('hex') };
    crm.identity.registerConnectedApp({ ...stranger, callbackUrl: 'https://elsewhere.example/auth/crmdata/callback', scopes: ['api', 'refresh_token'], approvedUsers: [username] });
    const { authorizationUrl } = await start('data', { ...dataForm, ...stranger });
    const response = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'redirect_uri_mismatch' });
  });

  it('a refresh token revoked on the platform sets needs reconnect with the remedy, and is not asked again', async () => {
    crm.identity.revokeRefreshTokens(username);
    crm.identity.expireAllTokens();
    const tokenCalls = () => crm.requests.get('POST /services/oauth2/token') ?? 0;
    // A new process has no token in memory: it must refresh.
    const { forgetDataTokens } = await import('../../shared/data/auth');
    forgetDataTokens();
    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/data/test', { token })).json()) as { ok: boolean; health: { state: string; remedy: string } };
    expect(tested.ok).toBe(false);
    expect(tested.health.state).toBe('needs_reconnect');
    expect(tested.health.remedy).toMatch(/Connect again/);
    const after = tokenCalls();
    await gateway.call('POST', '/api/v1/accounts/acme/connections/data/test', { token });
    expect(tokenCalls()).toBe(after);
  });

  it('never logs or answers a secret: client secrets, codes, states, refresh tokens', () => {
    const logs = logLines.join('\n');
    expect(logs).toContain('authorization finished');
    const verifiers = crm.identity.codeVerifiers;
    expect(verifiers.length).toBeGreaterThan(3);
    const secrets = [apps.data.clientSecret, apps.messaging.clientSecret, ...verifiers, ...seen.filter((value) => value.length > 20 && !value.startsWith('{'))];
    expect(secrets.length).toBeGreaterThan(12);
    for (const secret of secrets) expect(logs).not.toContain(secret);
    for (const answer of seen.filter((value) => value.startsWith('{'))) {
      expect(answer).not.toContain(apps.data.clientSecret);
      expect(answer).not.toContain(apps.messaging.clientSecret);
    }
  });
});
