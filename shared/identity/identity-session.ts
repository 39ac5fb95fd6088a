import { createHash } from 'node:crypto';
import type { GatewayEnvironment } from '../config';
import { PlatformError } from '../http/platform-error';
import { IDENTITY_TOKEN_PATH, IdentitySetupError, jwtBearerGrant, refreshTokenGrant, revokeToken, type IdentityEndpoint, type IdentityToken } from './identity-client';
import { TokenCache, type CachedToken } from './token-cache';

/**
 * An identity access token for one connection, kept in memory: by JWT bearer (client id,
 * username, private key) or by the refresh token from the vault (authorization code). The
 * identity service does not say when its tokens expire (the org's session timeout decides, 2 hours
 * by default): the gateway renews at IDENTITY_SESSION_SECONDS less five minutes, and at once on a 401.
 */

export interface IdentityCredentials {
  accountId: string;
  clientId: string;
  /** JWT bearer. */
  username?: string;
  privateKey?: string;
  /** Authorization code: the refresh token the callback sealed in the vault. */
  clientSecret?: string;
  refreshToken?: string;
}

export interface IdentitySessionToken extends CachedToken, IdentityToken {}

const RENEW_BEFORE_MS = 5 * 60 * 1000;

/** A refused refresh token is remembered until the user reconnects (a new refresh token, a new key). */
const sessions = new TokenCache<IdentitySessionToken>(
  (error, key) => key.endsWith('|refresh') && error instanceof PlatformError && error.path === IDENTITY_TOKEN_PATH && error.platformCode === 'invalid_grant',
);

function sessionKey(endpoint: IdentityEndpoint, credentials: IdentityCredentials): string {
  const secret = credentials.refreshToken ?? credentials.privateKey ?? '';
  const fingerprint = createHash('sha256').update(secret).digest('base64url').slice(0, 16);
  return [endpoint.platform, credentials.accountId, credentials.clientId, credentials.username ?? '', endpoint.loginUrl, fingerprint, credentials.refreshToken ? 'refresh' : 'jwt'].join('|');
}

async function signIn(endpoint: IdentityEndpoint, credentials: IdentityCredentials, env: Pick<GatewayEnvironment, 'IDENTITY_SESSION_SECONDS'>): Promise<IdentitySessionToken> {
  const now = endpoint.now ?? Date.now;
  let token: IdentityToken;
  if (credentials.refreshToken) {
    if (!credentials.clientSecret) throw new IdentitySetupError('no client secret is stored for it');
    token = await refreshTokenGrant(endpoint, { clientId: credentials.clientId, clientSecret: credentials.clientSecret, refreshToken: credentials.refreshToken });
  } else {
    if (!credentials.username || !credentials.privateKey) throw new IdentitySetupError('no username or private key is stored for it');
    token = await jwtBearerGrant(endpoint, { clientId: credentials.clientId, username: credentials.username, privateKey: credentials.privateKey });
  }
  const lifetimeMs = env.IDENTITY_SESSION_SECONDS * 1000;
  return { ...token, renewAt: now() + Math.max(lifetimeMs / 2, lifetimeMs - RENEW_BEFORE_MS) };
}

/** The connection's identity token: cached, renewed before the session times out, one renewal at a time. */
export function identitySession(endpoint: IdentityEndpoint, credentials: IdentityCredentials, env: Pick<GatewayEnvironment, 'IDENTITY_SESSION_SECONDS'>): Promise<IdentitySessionToken> {
  return sessions.get(sessionKey(endpoint, credentials), () => signIn(endpoint, credentials, env), (endpoint.now ?? Date.now)());
}

/** An API answered 401 with `rejected`: a new token (one renewal for all callers that saw it). */
export function renewIdentitySession(
  endpoint: IdentityEndpoint,
  credentials: IdentityCredentials,
  env: Pick<GatewayEnvironment, 'IDENTITY_SESSION_SECONDS'>,
  rejected: IdentitySessionToken,
): Promise<IdentitySessionToken> {
  return sessions.replace(sessionKey(endpoint, credentials), rejected, () => signIn(endpoint, credentials, env), (endpoint.now ?? Date.now)());
}

/** Drops cached identity tokens: one account's, or all (tests). */
export function forgetIdentitySessions(accountId?: string): void {
  sessions.forget((key) => accountId === undefined || key.split('|')[1] === accountId);
}

/** Revokes a connection's refresh token at the identity service (a JWT bearer connection has none). */
export async function revokeIdentityGrant(endpoint: IdentityEndpoint, credentials: IdentityCredentials): Promise<void> {
  forgetIdentitySessions(credentials.accountId);
  if (credentials.refreshToken) await revokeToken(endpoint, credentials.refreshToken);
}
