import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';
import { createPlatformClient, type PlatformCall } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { unlimitedRateBudget } from '../http/rate-budget';
import type { RetryPolicy } from '../http/retry-policy';
import { IdentitySetupError, instanceOrigin, jwtBearerGrant, refreshTokenGrant, type IdentityEndpoint } from '../identity/identity-client';
import { renewTime, TokenCache } from '../identity/token-cache';
import { registerSecret } from '../log/redaction';
import { normalisePem, type DataLoginChoice } from './config';

import { IDENTITY_TOKEN_PATH } from '../identity/identity-client';

export { ASSERTION_LIFETIME_SECONDS, IDENTITY_TOKEN_PATH, instanceOrigin as tenantUrlFrom, signBearerAssertion } from '../identity/identity-client';
export { renewTime } from '../identity/token-cache';

/**
 * The data connector's two-step token flow (spec Authentication, Data connector 7-9; the Data 360 token exchange, docs/platform-contracts.md):
 * 1. the identity service (shared/identity/) gives an identity access token and the org's instance
 *    URL: by JWT bearer (an RS256 assertion), or, for a connection made with the authorization
 *    code, by the refresh token kept in the vault;
 * 2. a360 exchange: that token posted as `subject_token` to `{instance}/services/a360/token` gives
 *    the data-platform token and the data tenant's host, which the data APIs take.
 *
 * The identity service finds the org's pod from the login host, so the API Region picks no host.
 *
 * Tokens are cached per connection and renewed before they expire, or at once when a data API
 * answers 401. Concurrent callers share one renewal (single flight). A refresh token the platform
 * refuses (revoked on the platform side) is not asked again in a loop: the connection needs
 * reconnecting, and its health says so.
 */

export const DATA_TOKEN_EXCHANGE_GRANT = 'urn:salesforce:grant-type:external:cdp';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const DATA_TOKEN_EXCHANGE_PATH = '/services/a360/token';

/** When the exchange does not say how long its token lives, assume this little. */
const DEFAULT_DATA_TOKEN_LIFETIME_SECONDS = 15 * 60;

/** A stored connection that cannot sign in as it is (no key, an unreadable key): the user must reconnect. */
export class DataSetupError extends IdentitySetupError {
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

/**
 * Everything the token flow needs for one connection: `username` and `privateKey` for JWT bearer,
 * or `clientSecret` and `refreshToken` for a connection made with the authorization code.
 */
export interface DataAuthSettings {
  accountId: string;
  clientId: string;
  username?: string;
  /** The resolved login URL: the token endpoint's host and the JWT `aud`. */
  loginUrl: string;
  /** PEM, PKCS#8 or PKCS#1. */
  privateKey?: string;
  clientSecret?: string;
  refreshToken?: string;
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

const DataTokenAnswer = z.looseObject({
  access_token: z.string().check(z.minLength(1)),
  instance_url: z.string().check(z.minLength(1)),
  expires_in: z.optional(z.coerce.number().check(z.positive())),
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

  const identity = await identityToken(settings);
  const identityAccessToken = identity.accessToken;

  const instance = createPlatformClient({ ...transport, baseUrl: instanceOrigin(identity.instanceUrl, settings.allowInsecure), auth: { kind: 'none' } });
  const exchanged = await instance.request({
    method: 'POST',
    path: DATA_TOKEN_EXCHANGE_PATH,
    form: { grant_type: DATA_TOKEN_EXCHANGE_GRANT, subject_token: identityAccessToken, subject_token_type: ACCESS_TOKEN_TYPE },
    schema: DataTokenAnswer,
    idempotent: true,
  });
  registerSecret(exchanged.body.access_token);

  const fetchedAt = now();
  const expiresAt = fetchedAt + (exchanged.body.expires_in ?? DEFAULT_DATA_TOKEN_LIFETIME_SECONDS) * 1000;
  return {
    accessToken: exchanged.body.access_token,
    tenantUrl: instanceOrigin(exchanged.body.instance_url, settings.allowInsecure),
    expiresAt,
    renewAt: renewTime(fetchedAt, expiresAt),
  };
}

/** Step 1, by the connection's method: a new assertion, or the refresh token. */
function identityToken(settings: DataAuthSettings) {
  const endpoint: IdentityEndpoint = {
    loginUrl: settings.loginUrl,
    platform: 'data',
    allowInsecure: settings.allowInsecure,
    ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
    ...(settings.retry ? { retry: settings.retry } : {}),
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
    ...(settings.sleep ? { sleep: settings.sleep } : {}),
    ...(settings.random ? { random: settings.random } : {}),
    ...(settings.now ? { now: settings.now } : {}),
    ...(settings.onCall ? { onCall: settings.onCall } : {}),
  };
  if (settings.refreshToken) {
    if (!settings.clientSecret) throw new DataSetupError('no client secret is stored for it');
    return refreshTokenGrant(endpoint, { clientId: settings.clientId, clientSecret: settings.clientSecret, refreshToken: settings.refreshToken });
  }
  if (!settings.username || !settings.privateKey) throw new DataSetupError('no username or private key is stored for it');
  return jwtBearerGrant(endpoint, { clientId: settings.clientId, username: settings.username, privateKey: settings.privateKey });
}

// ---- the per-connection cache, single flight ----

/**
 * A refused refresh token stays refused until the user reconnects (which makes a new key):
 * remembered, not asked again in a loop. A refused JWT is not remembered: the user may fix the
 * OAuth client and test again at once.
 */
const cache = new TokenCache<DataTokens>(
  (error, key) =>
    (JSON.parse(key) as string[])[5] === 'refresh' &&
    error instanceof PlatformError &&
    error.path === IDENTITY_TOKEN_PATH &&
    error.platformCode === 'invalid_grant',
);

/**
 * One cache entry per connection identity. The fingerprint changes with the private key or the
 * refresh token, so reconnecting never reuses a token got with the old credentials.
 */
export function tokenCacheKey(settings: Pick<DataAuthSettings, 'accountId' | 'clientId' | 'username' | 'loginUrl' | 'privateKey' | 'refreshToken'>): string {
  const credential = settings.refreshToken ?? normalisePem(settings.privateKey ?? '');
  const fingerprint = createHash('sha256').update(credential).digest('base64url').slice(0, 16);
  return JSON.stringify([
    settings.accountId,
    settings.clientId,
    settings.username ?? '',
    settings.loginUrl,
    fingerprint,
    settings.refreshToken ? 'refresh' : 'jwt',
  ]);
}

/** A data-platform token good for a while yet: the cached one, or a new one (shared by concurrent callers). */
export function dataTokens(settings: DataAuthSettings): Promise<DataTokens> {
  return cache.get(tokenCacheKey(settings), () => requestDataTokens(settings), (settings.now ?? Date.now)());
}

/**
 * A data API refused `rejected` (401): renew, unless another caller already replaced it, in which
 * case that newer token is returned. Concurrent 401s therefore cost one renewal.
 */
export function renewDataTokens(settings: DataAuthSettings, rejected: DataTokens): Promise<DataTokens> {
  return cache.replace(tokenCacheKey(settings), rejected, () => requestDataTokens(settings), (settings.now ?? Date.now)());
}

/** Drops cached tokens: one account's (Disconnect, reconnect) or all (tests). */
export function forgetDataTokens(accountId?: string): void {
  cache.forget((key) => accountId === undefined || (JSON.parse(key) as string[])[0] === accountId);
}
