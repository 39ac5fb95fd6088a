import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import * as z from 'zod/mini';
import { createPlatformClient, type PlatformTransportOptions } from '../http/platform-client';
import { unlimitedRateBudget } from '../http/rate-budget';
import { registerSecret } from '../log/redaction';
import { LOOPBACK_HOST } from '../http/loopback';

/**
 * The CRM's identity service, as the messaging and data connectors both sign in to it
 * (the OAuth 2.0 endpoints guide, docs/platform-contracts.md "Customer data platform"; spec Authentication, messaging 1-6 and data 1-9):
 * - JWT bearer: an RS256 assertion (iss = client id, sub = username, aud = login URL);
 * - authorization code with PKCE: the browser is sent to `/services/oauth2/authorize`, the code
 *   comes back to the gateway's callback and is exchanged with the verifier;
 * - refresh token: a new access token for a connection made with the authorization code;
 * - revocation, when a connection is removed.
 *
 * Every call is one HTTP request through the gateway's platform client (TLS, timeouts, retries of
 * what is safe to retry). Failures are PlatformErrors: `identityProblem` reads them. Tokens that
 * come back are registered with the log redaction at once.
 */

export const IDENTITY_TOKEN_PATH = '/services/oauth2/token';
export const IDENTITY_AUTHORIZE_PATH = '/services/oauth2/authorize';
export const IDENTITY_REVOKE_PATH = '/services/oauth2/revoke';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** The assertion is used once, at once: 3 minutes covers clock skew (the spec allows up to 10 years). */
export const ASSERTION_LIFETIME_SECONDS = 180;

/** A stored connection that cannot sign in as it is (no key, an unreadable key): the user must reconnect. */
export class IdentitySetupError extends Error {
  override readonly name: string = 'IdentitySetupError';
}

/** Where the identity service is, and how to reach it. */
export interface IdentityEndpoint extends PlatformTransportOptions {
  /** The login URL (production or sandbox): the token endpoint's host and the JWT `aud`. */
  loginUrl: string;
  /** The connector on whose behalf the call is made, as errors name it. */
  platform: string;
  allowInsecure: boolean;
}

/**
 * An instance's base URL from an identity or token-exchange answer's `instance_url`, which may
 * be a bare host (the data platform's exchange answers one).
 * A bare host gets https, or http for a loopback simulator when insecure URLs are allowed;
 * an explicit http:// is refused unless they are allowed. Only the origin is kept.
 */
export function instanceOrigin(instanceUrl: string, allowInsecure: boolean): string {
  const text = instanceUrl.trim();
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
  const withScheme = hasScheme ? text : `${allowInsecure && LOOPBACK_HOST.test(text.split('/')[0] ?? '') ? 'http' : 'https'}://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new IdentitySetupError('the data platform answered the token exchange with an instance_url that is not a host or URL');
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    throw new IdentitySetupError(`the data platform's tenant address must use https (got ${url.protocol}//${url.host})`);
  }
  return url.origin;
}

/** What a grant gives: the identity access token, the org's instance, and (authorization code) a refresh token. */
export interface IdentityToken {
  accessToken: string;
  /** The org's instance URL, as the service answered it. */
  instanceUrl: string;
  refreshToken?: string;
  /** Granted scopes, space-separated, when the service says. */
  scope?: string;
}

const TokenAnswer = z.looseObject({
  access_token: z.string().check(z.minLength(1)),
  instance_url: z.string().check(z.minLength(1)),
  refresh_token: z.optional(z.string().check(z.minLength(1))),
  scope: z.optional(z.string()),
});

/** The signing key; a key the form accepted always loads, but a stored one may have been damaged. */
function signingKey(pem: string): KeyObject {
  try {
    const key = createPrivateKey({ key: pem.replace(/\\n/g, '\n').replace(/\r\n?/g, '\n').trim(), format: 'pem' });
    if (key.asymmetricKeyType !== 'rsa') throw new TypeError('not RSA');
    return key;
  } catch {
    throw new IdentitySetupError('its private key could not be read as an RSA private key');
  }
}

/** The JWT bearer assertion: RS256, iss = client id, sub = username, aud = login URL, exp = now + 3 min. */
export async function signBearerAssertion(
  claims: { clientId: string; username: string; loginUrl: string; privateKey: string },
  nowMs: number,
): Promise<string> {
  const issuedAt = Math.floor(nowMs / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(claims.clientId)
    .setSubject(claims.username)
    .setAudience(claims.loginUrl)
    .setExpirationTime(issuedAt + ASSERTION_LIFETIME_SECONDS)
    .sign(signingKey(claims.privateKey));
}

async function tokenRequest(endpoint: IdentityEndpoint, form: Record<string, string>): Promise<IdentityToken> {
  const { loginUrl, platform, allowInsecure, ...transport } = endpoint;
  // Token calls are rare by construction (cached, single flight): they do not spend the data APIs' budget.
  const login = createPlatformClient({ ...transport, baseUrl: loginUrl, platform, auth: { kind: 'none' }, rateBudget: unlimitedRateBudget, allowInsecure });
  // A retried grant is harmless except for a code, which is single use: the service answers
  // invalid_grant to the second try, and the user starts again.
  const answer = await login.request({
    method: 'POST',
    path: IDENTITY_TOKEN_PATH,
    form,
    schema: TokenAnswer,
    idempotent: form.grant_type !== 'authorization_code',
  });
  registerSecret(answer.body.access_token);
  if (answer.body.refresh_token) registerSecret(answer.body.refresh_token);
  return {
    accessToken: answer.body.access_token,
    instanceUrl: answer.body.instance_url,
    ...(answer.body.refresh_token ? { refreshToken: answer.body.refresh_token } : {}),
    ...(answer.body.scope ? { scope: answer.body.scope } : {}),
  };
}

/** JWT bearer: no refresh token in this flow; renewing is signing a new assertion. */
export async function jwtBearerGrant(endpoint: IdentityEndpoint, claims: { clientId: string; username: string; privateKey: string }): Promise<IdentityToken> {
  const assertion = await signBearerAssertion({ ...claims, loginUrl: endpoint.loginUrl }, (endpoint.now ?? Date.now)());
  return tokenRequest(endpoint, { grant_type: JWT_BEARER_GRANT, assertion });
}

/** Authorization code with PKCE: the code from the callback, the verifier kept with the state. */
export function authorizationCodeGrant(
  endpoint: IdentityEndpoint,
  grant: { clientId: string; clientSecret: string; code: string; codeVerifier: string; redirectUri: string },
): Promise<IdentityToken> {
  return tokenRequest(endpoint, {
    grant_type: 'authorization_code',
    code: grant.code,
    client_id: grant.clientId,
    client_secret: grant.clientSecret,
    redirect_uri: grant.redirectUri,
    code_verifier: grant.codeVerifier,
  });
}

export function refreshTokenGrant(endpoint: IdentityEndpoint, grant: { clientId: string; clientSecret: string; refreshToken: string }): Promise<IdentityToken> {
  return tokenRequest(endpoint, {
    grant_type: 'refresh_token',
    refresh_token: grant.refreshToken,
    client_id: grant.clientId,
    client_secret: grant.clientSecret,
  });
}

/** Revokes a refresh (or access) token; the connection's access ends on the platform side too. */
export async function revokeToken(endpoint: IdentityEndpoint, token: string): Promise<void> {
  const { loginUrl, platform, allowInsecure, ...transport } = endpoint;
  const login = createPlatformClient({ ...transport, baseUrl: loginUrl, platform, auth: { kind: 'none' }, rateBudget: unlimitedRateBudget, allowInsecure });
  await login.request({ method: 'POST', path: IDENTITY_REVOKE_PATH, form: { token }, idempotent: true });
}

/** Where the browser signs in and approves: the authorize address with a PKCE challenge and the state. */
export function authorizeAddress(
  loginUrl: string,
  request: { clientId: string; redirectUri: string; state: string; codeChallenge: string; scopes: readonly string[] },
): string {
  const url = new URL(IDENTITY_AUTHORIZE_PATH, `${loginUrl.replace(/\/+$/, '')}/`);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', request.clientId);
  url.searchParams.set('redirect_uri', request.redirectUri);
  url.searchParams.set('state', request.state);
  url.searchParams.set('code_challenge', request.codeChallenge);
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('scope', request.scopes.join(' '));
  return url.toString();
}
