import { createHash, createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import * as z from 'zod';
import type { GatewayEnvironment } from '../config';
import { createPlatformClient, type PlatformCall } from '../http/platform-client';
import { unlimitedRateBudget } from '../http/rate-budget';
import type { RetryPolicy } from '../http/retry-policy';
import { registerSecret } from '../log/redaction';
import { normalisePem, type DataLoginChoice } from './config';

/**
 * The data connector's two-step token flow (spec Authentication, Data connector 7-9; platforms.md):
 * 1. JWT bearer: an RS256 assertion (iss = client id, sub = username, aud = login URL) posted to
 *    `{login}/services/oauth2/token` gives an identity access token and the org's instance URL;
 * 2. a360 exchange: that token posted as `subject_token` to `{instance}/services/a360/token` gives
 *    the data-platform token and the data tenant's host, which the data APIs take.
 *
 * The identity service finds the org's pod from the login host, so the API Region picks no host.
 *
 * Tokens are cached per connection and renewed before they expire, or at once when a data API
 * answers 401. Concurrent callers share one renewal (single flight). No refresh token exists in
 * this flow: renewing is signing a new assertion.
 */

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const DATA_TOKEN_EXCHANGE_GRANT = 'urn:salesforce:grant-type:external:cdp';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const IDENTITY_TOKEN_PATH = '/services/oauth2/token';
export const DATA_TOKEN_EXCHANGE_PATH = '/services/a360/token';

/** The assertion is used once, at once: 3 minutes covers clock skew (the spec allows up to 10 years). */
export const ASSERTION_LIFETIME_SECONDS = 180;
/** When the exchange does not say how long its token lives, assume this little. */
const DEFAULT_DATA_TOKEN_LIFETIME_SECONDS = 15 * 60;
/** Renew this long before expiry (at most half the lifetime), so no call goes out with a dying token. */
const RENEW_BEFORE_EXPIRY_MS = 5 * 60 * 1000;

/** A stored connection that cannot sign in as it is (no key, an unreadable key): the user must reconnect. */
export class DataSetupError extends Error {
  override readonly name = 'DataSetupError';
}

export interface DataTokens {
  /** The data-platform token: the Bearer value for queries and ingestion. */
  accessToken: string;
  /** The data tenant's base URL, with its scheme (`https://<tenant host>`). */
  tenantUrl: string;
  expiresAt: number;
  /** When callers stop using it and a renewal starts. */
  renewAt: number;
}

/** Everything the token flow needs for one connection. */
export interface DataAuthSettings {
  accountId: string;
  clientId: string;
  username: string;
  /** The resolved login URL: the token endpoint's host and the JWT `aud`. */
  loginUrl: string;
  /** PEM, PKCS#8 or PKCS#1. */
  privateKey: string;
  allowInsecure: boolean;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
  onCall?: (call: PlatformCall) => void;
}

// ---- pure pieces ----

/** The configured login URL for the user's choice, without a trailing slash (it is the JWT `aud`). */
export function loginUrlFor(env: Pick<GatewayEnvironment, 'DATA_LOGIN_URL' | 'DATA_SANDBOX_LOGIN_URL'>, choice: DataLoginChoice): string {
  const url = choice === 'sandbox' ? env.DATA_SANDBOX_LOGIN_URL : env.DATA_LOGIN_URL;
  return url.replace(/\/+$/, '');
}

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/i;

/**
 * The data tenant's base URL from the exchange's `instance_url`, which may be a bare host.
 * A bare host gets https, or http for a loopback simulator when insecure URLs are allowed;
 * an explicit http:// is refused unless they are allowed. Only the origin is kept.
 */
export function tenantUrlFrom(instanceUrl: string, allowInsecure: boolean): string {
  const text = instanceUrl.trim();
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
  const withScheme = hasScheme ? text : `${allowInsecure && LOOPBACK_HOST.test(text.split('/')[0] ?? '') ? 'http' : 'https'}://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new DataSetupError('the data platform answered the token exchange with an instance_url that is not a host or URL');
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    throw new DataSetupError(`the data platform's tenant address must use https (got ${url.protocol}//${url.host})`);
  }
  return url.origin;
}

/** The signing key; a key the form accepted always loads, but a stored one may have been damaged. */
function signingKey(pem: string): KeyObject {
  try {
    const key = createPrivateKey({ key: normalisePem(pem), format: 'pem' });
    if (key.asymmetricKeyType !== 'rsa') throw new TypeError('not RSA');
    return key;
  } catch {
    throw new DataSetupError('its private key could not be read as an RSA private key');
  }
}

/** The JWT bearer assertion: RS256, iss = client id, sub = username, aud = login URL, exp = now + 3 min. */
export async function signBearerAssertion(
  settings: Pick<DataAuthSettings, 'clientId' | 'username' | 'loginUrl' | 'privateKey'>,
  nowMs: number,
): Promise<string> {
  const issuedAt = Math.floor(nowMs / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(settings.clientId)
    .setSubject(settings.username)
    .setAudience(settings.loginUrl)
    .setExpirationTime(issuedAt + ASSERTION_LIFETIME_SECONDS)
    .sign(signingKey(settings.privateKey));
}

/** When to stop using a token that expires at `expiresAt`, fetched at `nowMs`. */
export function renewTime(nowMs: number, expiresAt: number): number {
  const lifetime = Math.max(0, expiresAt - nowMs);
  return expiresAt - Math.min(RENEW_BEFORE_EXPIRY_MS, lifetime / 2);
}

const IdentityTokenAnswer = z.looseObject({ access_token: z.string().min(1), instance_url: z.string().min(1) });
const DataTokenAnswer = z.looseObject({
  access_token: z.string().min(1),
  instance_url: z.string().min(1),
  expires_in: z.coerce.number().positive().optional(),
});

// ---- the two calls ----

/** Runs both steps and returns a fresh data-platform token. Failures are PlatformErrors (or DataSetupError). */
export async function requestDataTokens(settings: DataAuthSettings): Promise<DataTokens> {
  const now = settings.now ?? Date.now;
  const transport = {
    platform: 'data' as const,
    // Token calls are rare by construction (cached, single flight); the data APIs' budget is for data calls.
    rateBudget: unlimitedRateBudget,
    allowInsecure: settings.allowInsecure,
    timeoutMs: settings.timeoutMs,
    retry: settings.retry,
    fetch: settings.fetch,
    sleep: settings.sleep,
    random: settings.random,
    now: settings.now,
    onCall: settings.onCall,
  };

  const assertion = await signBearerAssertion(settings, now());
  const login = createPlatformClient({ ...transport, baseUrl: settings.loginUrl, auth: { kind: 'none' } });
  const identity = await login.request({
    method: 'POST',
    path: IDENTITY_TOKEN_PATH,
    form: { grant_type: JWT_BEARER_GRANT, assertion },
    schema: IdentityTokenAnswer,
    // A second token is harmless: safe to retry after a timeout.
    idempotent: true,
  });
  const identityToken = identity.body.access_token;
  registerSecret(identityToken);

  const instance = createPlatformClient({ ...transport, baseUrl: tenantUrlFrom(identity.body.instance_url, settings.allowInsecure), auth: { kind: 'none' } });
  const exchanged = await instance.request({
    method: 'POST',
    path: DATA_TOKEN_EXCHANGE_PATH,
    form: { grant_type: DATA_TOKEN_EXCHANGE_GRANT, subject_token: identityToken, subject_token_type: ACCESS_TOKEN_TYPE },
    schema: DataTokenAnswer,
    idempotent: true,
  });
  registerSecret(exchanged.body.access_token);

  const fetchedAt = now();
  const expiresAt = fetchedAt + (exchanged.body.expires_in ?? DEFAULT_DATA_TOKEN_LIFETIME_SECONDS) * 1000;
  return {
    accessToken: exchanged.body.access_token,
    tenantUrl: tenantUrlFrom(exchanged.body.instance_url, settings.allowInsecure),
    expiresAt,
    renewAt: renewTime(fetchedAt, expiresAt),
  };
}

// ---- the per-connection cache, single flight ----

interface CachedTokens {
  tokens?: DataTokens;
  /** The renewal in progress: every caller that needs a token meanwhile waits for this one. */
  renewal?: Promise<DataTokens>;
}

const cache = new Map<string, CachedTokens>();

/**
 * One cache entry per connection identity. The key's fingerprint changes with the private key, so
 * reconnecting with a new key never reuses a token signed for the old one.
 */
export function tokenCacheKey(settings: Pick<DataAuthSettings, 'accountId' | 'clientId' | 'username' | 'loginUrl' | 'privateKey'>): string {
  const keyFingerprint = createHash('sha256').update(normalisePem(settings.privateKey)).digest('base64url').slice(0, 16);
  return JSON.stringify([settings.accountId, settings.clientId, settings.username, settings.loginUrl, keyFingerprint]);
}

function renew(key: string, entry: CachedTokens, settings: DataAuthSettings): Promise<DataTokens> {
  entry.renewal ??= requestDataTokens(settings)
    .then((tokens) => {
      entry.tokens = tokens;
      return tokens;
    })
    .finally(() => {
      entry.renewal = undefined;
    });
  cache.set(key, entry);
  return entry.renewal;
}

/** A data-platform token good for a while yet: the cached one, or a new one (shared by concurrent callers). */
export async function dataTokens(settings: DataAuthSettings): Promise<DataTokens> {
  const key = tokenCacheKey(settings);
  const entry = cache.get(key) ?? {};
  const now = (settings.now ?? Date.now)();
  if (entry.tokens && now < entry.tokens.renewAt) return entry.tokens;
  return renew(key, entry, settings);
}

/**
 * A data API refused `rejected` (401): renew, unless another caller already replaced it, in which
 * case that newer token is returned. Concurrent 401s therefore cost one renewal.
 */
export async function renewDataTokens(settings: DataAuthSettings, rejected: DataTokens): Promise<DataTokens> {
  const key = tokenCacheKey(settings);
  const entry = cache.get(key) ?? {};
  if (entry.renewal) return entry.renewal;
  if (entry.tokens && entry.tokens.accessToken !== rejected.accessToken) return entry.tokens;
  entry.tokens = undefined;
  return renew(key, entry, settings);
}

/** Drops cached tokens: one account's (Disconnect, reconnect) or all (tests). */
export function forgetDataTokens(accountId?: string): void {
  for (const key of [...cache.keys()]) {
    if (accountId === undefined || (JSON.parse(key) as string[])[0] === accountId) cache.delete(key);
  }
}
