import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ASSERTION_LIFETIME_SECONDS,
  dataTokens,
  forgetDataTokens,
  loginUrlFor,
  renewTime,
  requestDataTokens,
  signBearerAssertion,
  tenantUrlFrom,
  type DataAuthSettings,
} from '../../shared/data/auth';
import { DataConnectionInput, DataJwtBearerInput, dataConnectionForm, looksLikeSandboxUsername } from '../../shared/data/config';
import { redactText } from '../../shared/log/redaction';
import { rsaKeyPem, startDataSandbox, type DataSandbox } from './support';

const pkcs8 = rsaKeyPem(2048, 'pkcs8').privateKeyPem;
const pkcs1 = rsaKeyPem(2048, 'pkcs1').privateKeyPem;
const validForm = { clientId: '3MVG9abcdefghijklmnop', privateKey: pkcs8, username: 'integration@acme.example', loginUrl: 'production', apiRegion: 'US' };

/** The body of the key (between its armour lines), which no error may contain. */
const keyBody = (pem: string): string => pem.split('\n').slice(1, -2).join('');

describe('the data connection form', () => {
  it('accepts PKCS#8 and PKCS#1 RSA keys and splits the key off as the only credential', () => {
    for (const privateKey of [pkcs8, pkcs1]) {
      const input = DataConnectionInput.parse({ ...validForm, privateKey });
      const parts = dataConnectionForm.split(input, {});
      expect(parts.credentials).toEqual({ privateKey: privateKey.trim() });
      expect(parts.config).toEqual({ clientId: validForm.clientId, username: validForm.username, loginUrl: 'production', apiRegion: 'US' });
      expect(JSON.stringify(parts.config)).not.toContain('PRIVATE KEY');
    }
  });

  it('accepts a key pasted as one line with literal \\n and CRLF line ends', () => {
    const oneLine = pkcs8.trim().replace(/\n/g, '\\n');
    expect(DataJwtBearerInput.parse({ ...validForm, privateKey: oneLine }).privateKey).toBe(pkcs8.trim());
    expect(DataJwtBearerInput.parse({ ...validForm, privateKey: pkcs8.replace(/\n/g, '\r\n') }).privateKey).toBe(pkcs8.trim());
  });

  it('refuses bad keys with a clear message that never echoes the key', () => {
    const short = rsaKeyPem(1024).privateKeyPem;
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const encrypted = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'correct horse battery' })
      .toString();
    const damaged = pkcs8.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!');
    const cases: Array<[string, RegExp]> = [
      ['not a key at all', /whole PEM text/],
      [short, /1024 bits.*at least 2048/],
      [ec, /must be an RSA key/],
      [encrypted, /encrypted with a passphrase/],
      [damaged, /could not be read|whole PEM text/],
    ];
    for (const [privateKey, message] of cases) {
      const result = DataConnectionInput.safeParse({ ...validForm, privateKey });
      expect(result.success).toBe(false);
      const issues = result.error?.issues ?? [];
      expect(issues.map((issue) => issue.path.join('.'))).toEqual(['privateKey']);
      expect(issues[0]?.message).toMatch(message);
      const everything = JSON.stringify(result.error) + String(result.error);
      expect(everything).not.toContain('PRIVATE KEY-----\n');
      if (privateKey.includes('KEY')) expect(everything).not.toContain(keyBody(privateKey).slice(0, 40));
    }
  });

  it('takes the login as production or sandbox, never a URL, and the region as US or EU', () => {
    for (const loginUrl of ['https://login.salesforce.com', 'https://evil.example', 'Production']) {
      const result = DataConnectionInput.safeParse({ ...validForm, loginUrl });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.path).toEqual(['loginUrl']);
      expect(JSON.stringify(result.error)).not.toContain(keyBody(pkcs8).slice(0, 40));
    }
    expect(DataConnectionInput.safeParse({ ...validForm, apiRegion: 'APAC' }).success).toBe(false);
    expect(DataConnectionInput.safeParse({ ...validForm, loginUrl: 'sandbox', apiRegion: 'EU' }).success).toBe(true);
    // Unknown fields are refused (a stray clientSecret must not be stored anywhere by accident).
    expect(DataConnectionInput.safeParse({ ...validForm, clientSecret: 'x' }).success).toBe(false);
  });

  it('warns when a sandbox-looking username is sent to the production login', () => {
    expect(looksLikeSandboxUsername('ann@acme.com.uat')).toBe(true);
    expect(looksLikeSandboxUsername('ann@acme.com')).toBe(false);
    expect(looksLikeSandboxUsername('ann@acme.com.au')).toBe(false);
    const warned = dataConnectionForm.split(DataConnectionInput.parse({ ...validForm, username: 'ann@acme.com.uat' }), {});
    expect(warned.warnings).toHaveLength(1);
    expect(dataConnectionForm.split(DataConnectionInput.parse(validForm), {}).warnings).toEqual([]);
  });
});

describe('token flow pieces', () => {
  it('signs an RS256 assertion with iss, sub, aud and a 3-minute exp', async () => {
    const { privateKeyPem, publicKey } = rsaKeyPem(2048, 'pkcs1');
    const nowMs = Date.now();
    const jwt = await signBearerAssertion({ clientId: 'client-1', username: 'u@acme.example', loginUrl: 'https://login.example', privateKey: privateKeyPem }, nowMs);
    expect(decodeProtectedHeader(jwt).alg).toBe('RS256');
    const { payload } = await jwtVerify(jwt, publicKey, { algorithms: ['RS256'], audience: 'https://login.example', issuer: 'client-1' });
    expect(payload.sub).toBe('u@acme.example');
    expect(payload.exp).toBe(Math.floor(nowMs / 1000) + ASSERTION_LIFETIME_SECONDS);
    expect(decodeJwt(jwt).exp! - Math.floor(nowMs / 1000)).toBeLessThanOrEqual(180);
  });

  it('maps the login choice to the configured URLs, never to anything typed', () => {
    const env = { DATA_LOGIN_URL: 'https://login.example/', DATA_SANDBOX_LOGIN_URL: 'https://test.example' };
    expect(loginUrlFor(env, 'production')).toBe('https://login.example');
    expect(loginUrlFor(env, 'sandbox')).toBe('https://test.example');
  });

  it('normalises the tenant address: a bare host gets https, http only for loopback when allowed', () => {
    expect(tenantUrlFrom('abc123.c360a.salesforce.com', false)).toBe('https://abc123.c360a.salesforce.com');
    expect(tenantUrlFrom('https://abc123.c360a.salesforce.com/', false)).toBe('https://abc123.c360a.salesforce.com');
    expect(tenantUrlFrom('127.0.0.1:4123', true)).toBe('http://127.0.0.1:4123');
    expect(tenantUrlFrom('127.0.0.1:4123', false)).toBe('https://127.0.0.1:4123');
    expect(tenantUrlFrom('abc.example', true)).toBe('https://abc.example');
    expect(tenantUrlFrom('http://127.0.0.1:4123', true)).toBe('http://127.0.0.1:4123');
    expect(() => tenantUrlFrom('http://abc.example', false)).toThrow(/must use https/);
    expect(() => tenantUrlFrom('ftp://abc.example', true)).toThrow(/must use https/);
  });

  it('renews five minutes early, or at half the lifetime for short tokens', () => {
    expect(renewTime(0, 2 * 60 * 60_000)).toBe(2 * 60 * 60_000 - 5 * 60_000);
    expect(renewTime(0, 60_000)).toBe(30_000);
  });
});

describe('the two-step token flow against the simulator', () => {
  let sandbox: DataSandbox;
  let settings: DataAuthSettings;

  beforeAll(async () => {
    sandbox = await startDataSandbox();
    settings = {
      accountId: sandbox.accountId,
      clientId: sandbox.config.clientId,
      username: sandbox.config.username,
      loginUrl: loginUrlFor(sandbox.env, 'production'),
      privateKey: sandbox.credentials.privateKey,
      allowInsecure: true,
      timeoutMs: 5_000,
    };
  });
  afterAll(async () => {
    forgetDataTokens();
    await sandbox.stop();
  });

  it('gets an identity token by JWT bearer, exchanges it, and registers both tokens for redaction', async () => {
    const calls: string[] = [];
    const tokens = await requestDataTokens({ ...settings, onCall: (call) => calls.push(`${call.method} ${call.path} ${call.status}`) });
    expect(calls).toEqual(['POST /services/oauth2/token 200', 'POST /services/a360/token 200']);
    // The simulator's exchange answers a bare host; it is reached over http only because it is loopback.
    expect(tokens.tenantUrl).toBe(sandbox.sim.url);
    expect(tokens.expiresAt).toBeGreaterThan(tokens.renewAt);
    // It opens the data APIs (the identity token would not).
    expect(sandbox.sim.identity.authenticateToken(tokens.accessToken, 'data-platform').ok).toBe(true);
    expect(redactText(`token ${tokens.accessToken}`)).toBe('token [redacted]');
  });

  it('caches per connection and shares one flow between concurrent callers', async () => {
    forgetDataTokens();
    const before = sandbox.tokenRequests();
    const all = await Promise.all(Array.from({ length: 8 }, () => dataTokens(settings)));
    expect(new Set(all.map((t) => t.accessToken)).size).toBe(1);
    expect(await dataTokens(settings)).toBe(all[0]);
    const after = sandbox.tokenRequests();
    expect(after.oauth2 - before.oauth2).toBe(1);
    expect(after.exchange - before.exchange).toBe(1);

    // Another account with the same app and user has its own token.
    const other = await dataTokens({ ...settings, accountId: `${settings.accountId}-2` });
    expect(other.accessToken).not.toBe(all[0]?.accessToken);
    expect(sandbox.tokenRequests().oauth2 - before.oauth2).toBe(2);
  });

  it('lets a failed flow fail every waiting caller, then tries afresh', async () => {
    forgetDataTokens();
    const wrongKey = { ...settings, privateKey: rsaKeyPem().privateKeyPem };
    const results = await Promise.allSettled([dataTokens(wrongKey), dataTokens(wrongKey)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const reason = results[0]?.status === 'rejected' ? String(results[0].reason) : '';
    expect(reason).toContain('invalid assertion');
    expect(reason).not.toContain('PRIVATE KEY');
    // The right key works at once: failures are not cached.
    await expect(dataTokens(settings)).resolves.toHaveProperty('accessToken');
  });
});
