import { createHash, createPublicKey, KeyObject, randomBytes, timingSafeEqual, X509Certificate, type webcrypto } from 'node:crypto';
import { compactVerify, decodeJwt, decodeProtectedHeader, type JWK, type JWTPayload } from 'jose';
import type { SimulatorRequest, SimulatorResponse } from './simulator-server';

/**
 * Sandbox stand-in for the CRM's identity service (the `/services/oauth2/*` endpoints of the
 * login host), shared by the data platform and the messaging platform simulators.
 *
 * Flows served, as the OAuth 2.0 endpoints guide describes them (docs/platform-contracts.md):
 * - JWT bearer: a signed RS256 assertion becomes an access token (no refresh token);
 * - web server flow with PKCE: `/authorize` auto-approves (sandbox) and redirects with a code,
 *   which `/token` exchanges for an access token and, when the app has the scope for it, a
 *   refresh token;
 * - refresh token grant, token revocation, and `userinfo` (a cheap authenticated read).
 *
 * Access tokens expire (default 2 h). An expired or unknown token on any API is answered with
 * the platform's 401 `INVALID_SESSION_ID`.
 */

const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const TEN_YEARS_SECONDS = 10 * 366 * 24 * 60 * 60;
const DEFAULT_ACCESS_TOKEN_LIFETIME_MS = 2 * 60 * 60 * 1000;
/** The platform keeps authorization codes for 15 minutes. */
const DEFAULT_AUTHORIZATION_CODE_LIFETIME_MS = 15 * 60 * 1000;

export interface ConnectedAppRegistration {
  clientId: string;
  clientSecret: string;
  /** The certificate uploaded to the app (X.509 PEM); an SPKI public key PEM is accepted too. */
  certificatePem?: string;
  /** Or the public key itself (tests generate key pairs at run time). */
  publicKey?: webcrypto.CryptoKey | KeyObject | JWK;
  /** The one callback address registered on the app; `redirect_uri` must equal it exactly. */
  callbackUrl: string;
  /** OAuth scopes the app was given, e.g. `api`, `refresh_token`, `cdp_query_api`. */
  scopes: string[];
  /** Usernames pre-authorized by an admin ("Admin approved users are pre-authorized"). */
  approvedUsers: string[];
  /** Refuse authorization-code requests that carry no PKCE challenge. Default true. */
  requirePkce?: boolean;
}

export interface UserRegistration {
  username: string;
  /** The data platform permission set: without it the a360 token exchange fails. */
  hasDataPlatformPermissionSet?: boolean;
  /** The Messaging User permission set license: without it conversation creation fails. */
  hasMessagingUserLicense?: boolean;
}

interface ConnectedApp {
  clientId: string;
  clientSecret: string;
  publicKey: KeyObject | undefined;
  callbackUrl: string;
  scopes: Set<string>;
  approvedUsers: Set<string>;
  requirePkce: boolean;
}

export interface IntegrationUser {
  username: string;
  userId: string;
  hasDataPlatformPermissionSet: boolean;
  hasMessagingUserLicense: boolean;
}

/** Which APIs a token opens: identity tokens the CRM APIs, data-platform tokens the data APIs. */
export type TokenAudience = 'identity' | 'data-platform';

export interface AccessGrant {
  audience: TokenAudience;
  clientId: string;
  username: string;
  scopes: string[];
  issuedAt: number;
  expiresAt: number;
  /** Data-platform tokens only: the data space named in the exchange. */
  dataspace?: string;
}

interface AuthorizationCode {
  clientId: string;
  redirectUri: string;
  codeChallenge: string | undefined;
  username: string;
  scopes: string[];
  expiresAt: number;
}

interface RefreshGrant {
  clientId: string;
  username: string;
  scopes: string[];
}

export type Authentication = { ok: true; grant: AccessGrant } | { ok: false; response: SimulatorResponse };

export interface IdentityOptions {
  /** The simulator's own base URL: the login URL (JWT `aud`) and the instance URL. Read lazily. */
  baseUrl: () => string;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
  accessTokenLifetimeMs?: number;
  authorizationCodeLifetimeMs?: number;
}

export class IdentityService {
  /** The simulated org, as it appears in token ids and `id` URLs. */
  readonly orgId = `00D${randomId(15)}`;
  readonly now: () => number;
  readonly accessTokenLifetimeMs: number;
  private readonly authorizationCodeLifetimeMs: number;
  private readonly baseUrl: () => string;
  private readonly apps = new Map<string, ConnectedApp>();
  private readonly users = new Map<string, IntegrationUser>();
  private readonly accessTokens = new Map<string, AccessGrant>();
  private readonly refreshTokens = new Map<string, RefreshGrant>();
  /** PKCE verifiers received at the code exchange, so a test can look for them where they must not be. */
  readonly codeVerifiers: string[] = [];
  private readonly authorizationCodes = new Map<string, AuthorizationCode>();

  constructor(options: IdentityOptions) {
    this.baseUrl = options.baseUrl;
    this.now = options.now ?? Date.now;
    this.accessTokenLifetimeMs = options.accessTokenLifetimeMs ?? DEFAULT_ACCESS_TOKEN_LIFETIME_MS;
    this.authorizationCodeLifetimeMs = options.authorizationCodeLifetimeMs ?? DEFAULT_AUTHORIZATION_CODE_LIFETIME_MS;
  }

  /** The login URL: what a JWT's `aud` must name. Same server as the instance here. */
  get loginUrl(): string {
    return this.baseUrl();
  }

  get instanceUrl(): string {
    return this.baseUrl();
  }

  registerConnectedApp(registration: ConnectedAppRegistration): void {
    this.apps.set(registration.clientId, {
      clientId: registration.clientId,
      clientSecret: registration.clientSecret,
      publicKey: toPublicKey(registration),
      callbackUrl: registration.callbackUrl,
      scopes: new Set(registration.scopes),
      approvedUsers: new Set(registration.approvedUsers),
      requirePkce: registration.requirePkce ?? true,
    });
  }

  registerUser(registration: UserRegistration): IntegrationUser {
    const user: IntegrationUser = {
      username: registration.username,
      userId: `005${randomId(15)}`,
      hasDataPlatformPermissionSet: registration.hasDataPlatformPermissionSet ?? false,
      hasMessagingUserLicense: registration.hasMessagingUserLicense ?? false,
    };
    this.users.set(user.username, user);
    return user;
  }

  user(username: string): IntegrationUser | undefined {
    return this.users.get(username);
  }

  userById(userId: string): IntegrationUser | undefined {
    return [...this.users.values()].find((user) => user.userId === userId);
  }

  /** An admin assigns or removes the Messaging User permission set license. */
  setMessagingUserLicense(username: string, assigned: boolean): void {
    const user = this.users.get(username);
    if (!user) throw new Error(`no user ${username} in the identity simulator`);
    user.hasMessagingUserLicense = assigned;
  }

  /** Every access token (identity and data-platform) stops working now; refresh tokens survive. */
  expireAllTokens(): void {
    const now = this.now();
    for (const grant of this.accessTokens.values()) grant.expiresAt = Math.min(grant.expiresAt, now);
  }

  /**
   * Revokes every refresh token (of one user, or all), as an admin revoking the app's access on the
   * platform does (spec general rule 3): a refresh then answers invalid_grant.
   */
  revokeRefreshTokens(username?: string): number {
    let revoked = 0;
    for (const [token, grant] of this.refreshTokens) {
      if (username === undefined || grant.username === username) {
        this.refreshTokens.delete(token);
        revoked += 1;
      }
    }
    return revoked;
  }

  /** Issues an access token; the data simulator uses it for the a360 exchange. */
  issueAccessToken(grant: Omit<AccessGrant, 'issuedAt' | 'expiresAt'>): { token: string; grant: AccessGrant } {
    const issuedAt = this.now();
    const full: AccessGrant = { ...grant, issuedAt, expiresAt: issuedAt + this.accessTokenLifetimeMs };
    // Identity tokens look like the platform's (`<org id>!<opaque>`); data-platform tokens are opaque.
    const token =
      grant.audience === 'identity' ? `${this.orgId}!${randomBytes(48).toString('base64url')}` : randomBytes(64).toString('base64url');
    this.accessTokens.set(token, full);
    return { token, grant: full };
  }

  /** Checks the request's `Authorization: Bearer` token against the audience an API accepts. */
  authenticate(request: SimulatorRequest, audience: TokenAudience): Authentication {
    return this.authenticateToken(bearerToken(request), audience);
  }

  authenticateToken(token: string | undefined, audience: TokenAudience): Authentication {
    const grant = token === undefined ? undefined : this.accessTokens.get(token);
    if (!grant || grant.audience !== audience || grant.expiresAt <= this.now()) return { ok: false, response: invalidSession() };
    return { ok: true, grant };
  }

  /** The identity service's HTTP routes; undefined when the path is not one of them. */
  route(request: SimulatorRequest): Promise<SimulatorResponse | undefined> | SimulatorResponse | undefined {
    const { method, path } = request;
    if (method === 'POST' && path === '/services/oauth2/token') return this.token(readForm(request));
    if (method === 'GET' && path === '/services/oauth2/authorize') return this.authorize(request.query);
    if (method === 'POST' && path === '/services/oauth2/revoke') return this.revoke(readForm(request));
    if (method === 'GET' && path === '/services/oauth2/userinfo') return this.userInfo(request);
    if (method === 'GET' && path.startsWith('/id/')) return this.userInfo(request);
    return undefined;
  }

  private async token(form: URLSearchParams): Promise<SimulatorResponse> {
    switch (form.get('grant_type')) {
      case JWT_BEARER_GRANT:
        return this.jwtBearer(form.get('assertion') ?? '');
      case 'authorization_code':
        return this.authorizationCodeGrant(form);
      case 'refresh_token':
        return this.refreshTokenGrant(form);
      default:
        return oauthError(400, 'unsupported_grant_type', 'grant type not supported');
    }
  }

  private async jwtBearer(assertion: string): Promise<SimulatorResponse> {
    let claims: JWTPayload;
    try {
      if (decodeProtectedHeader(assertion).alg !== 'RS256') return invalidAssertion();
      claims = decodeJwt(assertion);
    } catch {
      return invalidAssertion();
    }

    const app = typeof claims.iss === 'string' ? this.apps.get(claims.iss) : undefined;
    if (!app) return oauthError(400, 'invalid_client_id', 'client identifier invalid');
    if (!app.publicKey) return invalidAssertion();
    try {
      await compactVerify(assertion, app.publicKey, { algorithms: ['RS256'] });
    } catch {
      return invalidAssertion();
    }

    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(this.loginUrl)) return oauthError(400, 'invalid_grant', 'audience is invalid');

    // The platform answers a past `exp` with "expired authorization code" (seen in the wild);
    // for an `exp` beyond its 10-year limit no message is documented, so the generic one.
    const nowSeconds = Math.floor(this.now() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) {
      return oauthError(400, 'invalid_grant', 'expired authorization code');
    }
    if (claims.exp > nowSeconds + TEN_YEARS_SECONDS) return invalidAssertion();

    const username = typeof claims.sub === 'string' ? claims.sub : '';
    if (!this.users.has(username) || !app.approvedUsers.has(username)) {
      return oauthError(400, 'invalid_grant', "user hasn't approved this consumer");
    }
    return this.tokenResponse(app, username, [...app.scopes], { withRefreshToken: false });
  }

  private authorize(query: URLSearchParams): SimulatorResponse {
    const app = this.apps.get(query.get('client_id') ?? '');
    if (!app) return oauthError(400, 'invalid_client_id', 'client identifier invalid');
    // Never redirect to an address the app did not register: answer the browser directly.
    const redirectUri = query.get('redirect_uri') ?? '';
    if (redirectUri !== app.callbackUrl) return oauthError(400, 'redirect_uri_mismatch', 'redirect_uri must match configuration');

    const state = query.get('state');
    const redirect = (params: Record<string, string>): SimulatorResponse => {
      const location = new URL(redirectUri);
      for (const [name, value] of Object.entries(params)) location.searchParams.set(name, value);
      if (state !== null) location.searchParams.set('state', state);
      return { status: 302, headers: { location: location.toString() }, raw: '' };
    };

    if (query.get('response_type') !== 'code') {
      return redirect({ error: 'unsupported_response_type', error_description: 'response type not supported' });
    }
    const requested = (query.get('scope') ?? '').split(/\s+/).filter(Boolean);
    const scopes = requested.length > 0 ? requested : [...app.scopes];
    if (scopes.some((scope) => !app.scopes.has(scope))) {
      return redirect({ error: 'invalid_scope', error_description: 'the requested scope is not allowed' });
    }

    const codeChallenge = query.get('code_challenge') ?? undefined;
    const method = query.get('code_challenge_method') ?? 'S256';
    if (codeChallenge && method !== 'S256') {
      return redirect({ error: 'invalid_request', error_description: 'unsupported code challenge method' });
    }
    if (!codeChallenge && app.requirePkce) {
      return redirect({ error: 'invalid_request', error_description: 'missing required code challenge' });
    }

    // Sandbox auto-approval: the signed-in user is `login_hint`, else the app's first approved user.
    const username = query.get('login_hint') ?? [...app.approvedUsers][0] ?? '';
    if (!this.users.has(username) || !app.approvedUsers.has(username)) {
      return redirect({ error: 'access_denied', error_description: "user hasn't approved this consumer" });
    }

    const code = randomBytes(32).toString('base64url');
    this.authorizationCodes.set(code, {
      clientId: app.clientId,
      redirectUri,
      codeChallenge,
      username,
      scopes,
      expiresAt: this.now() + this.authorizationCodeLifetimeMs,
    });
    return redirect({ code });
  }

  private authorizationCodeGrant(form: URLSearchParams): SimulatorResponse {
    const app = this.apps.get(form.get('client_id') ?? '');
    if (!app) return oauthError(400, 'invalid_client_id', 'client identifier invalid');
    if (!sameSecret(form.get('client_secret') ?? '', app.clientSecret)) {
      return oauthError(400, 'invalid_client', 'invalid client credentials');
    }

    const codeValue = form.get('code') ?? '';
    const code = this.authorizationCodes.get(codeValue);
    // Codes are single use, whatever the outcome of this attempt.
    this.authorizationCodes.delete(codeValue);
    if (!code || code.clientId !== app.clientId) return oauthError(400, 'invalid_grant', 'invalid authorization code');
    if (code.expiresAt <= this.now()) return oauthError(400, 'invalid_grant', 'expired authorization code');
    if ((form.get('redirect_uri') ?? '') !== code.redirectUri) {
      return oauthError(400, 'redirect_uri_mismatch', 'redirect_uri must match configuration');
    }
    const verifier = form.get('code_verifier');
    if (verifier) this.codeVerifiers.push(verifier);
    if (code.codeChallenge !== undefined && pkceChallenge(verifier ?? '') !== code.codeChallenge) {
      return oauthError(400, 'invalid_grant', 'invalid code verifier');
    }
    return this.tokenResponse(app, code.username, code.scopes, { withRefreshToken: true });
  }

  private refreshTokenGrant(form: URLSearchParams): SimulatorResponse {
    const app = this.apps.get(form.get('client_id') ?? '');
    if (!app) return oauthError(400, 'invalid_client_id', 'client identifier invalid');
    const secret = form.get('client_secret');
    if (secret !== null && !sameSecret(secret, app.clientSecret)) {
      return oauthError(400, 'invalid_client', 'invalid client credentials');
    }
    const refresh = this.refreshTokens.get(form.get('refresh_token') ?? '');
    if (!refresh || refresh.clientId !== app.clientId) return oauthError(400, 'invalid_grant', 'expired access/refresh token');
    return this.tokenResponse(app, refresh.username, refresh.scopes, { withRefreshToken: false });
  }

  private tokenResponse(app: ConnectedApp, username: string, scopes: string[], options: { withRefreshToken: boolean }): SimulatorResponse {
    const { token, grant } = this.issueAccessToken({ audience: 'identity', clientId: app.clientId, username, scopes });
    const body: Record<string, string> = {
      access_token: token,
      instance_url: this.instanceUrl,
      id: this.idUrl(username),
      token_type: 'Bearer',
      scope: scopes.join(' '),
      issued_at: String(grant.issuedAt),
    };
    // Like the platform, a refresh token only when the grant includes refresh_token or offline_access.
    if (options.withRefreshToken && scopes.some((scope) => scope === 'refresh_token' || scope === 'offline_access')) {
      const refreshToken = `${this.orgId}!${randomBytes(48).toString('base64url')}`;
      this.refreshTokens.set(refreshToken, { clientId: app.clientId, username, scopes });
      body.refresh_token = refreshToken;
    }
    return { status: 200, body };
  }

  private revoke(form: URLSearchParams): SimulatorResponse {
    const token = form.get('token') ?? '';
    const known = this.accessTokens.delete(token) || this.refreshTokens.delete(token);
    return known ? { status: 200, raw: '' } : oauthError(400, 'unsupported_token_type', 'this token type is not supported');
  }

  private userInfo(request: SimulatorRequest): SimulatorResponse {
    const auth = this.authenticate(request, 'identity');
    if (!auth.ok) return auth.response;
    const user = this.users.get(auth.grant.username);
    if (!user) return invalidSession();
    return {
      status: 200,
      body: {
        sub: this.idUrl(user.username),
        user_id: user.userId,
        organization_id: this.orgId,
        preferred_username: user.username,
        active: true,
      },
    };
  }

  private idUrl(username: string): string {
    return `${this.loginUrl}/id/${this.orgId}/${this.users.get(username)?.userId ?? ''}`;
  }
}

// ---- Small shared pieces the data and messaging simulators use too ----

/** The CRM's REST error body: an array of `{message, errorCode}`. */
export function platformError(status: number, errorCode: string, message: string): SimulatorResponse {
  return { status, body: [{ message, errorCode }] };
}

/** The answer to an expired, revoked, unknown or wrong-audience token on any API. */
export function invalidSession(): SimulatorResponse {
  return platformError(401, 'INVALID_SESSION_ID', 'Session expired or invalid');
}

/** The OAuth endpoints' error body. */
export function oauthError(status: number, error: string, description: string): SimulatorResponse {
  return { status, body: { error, error_description: description } };
}

function invalidAssertion(): SimulatorResponse {
  return oauthError(400, 'invalid_grant', 'invalid assertion');
}

export function bearerToken(request: SimulatorRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return match?.[1];
}

export function readForm(request: SimulatorRequest): URLSearchParams {
  return new URLSearchParams(request.rawBody.toString('utf8'));
}

/** Parses a JSON body; undefined when it is not JSON. */
export function readJson(request: SimulatorRequest): unknown {
  try {
    return JSON.parse(request.rawBody.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** Random id characters in the platform's style (alphanumeric). */
export function randomId(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length);
  let id = '';
  for (const byte of bytes) id += alphabet[byte % alphabet.length];
  return id;
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The app's signature-checking key, from whichever form the test registered. */
function toPublicKey(registration: ConnectedAppRegistration): KeyObject | undefined {
  const { certificatePem, publicKey } = registration;
  if (certificatePem) {
    return certificatePem.includes('BEGIN CERTIFICATE') ? new X509Certificate(certificatePem).publicKey : createPublicKey(certificatePem);
  }
  if (!publicKey) return undefined;
  let key: KeyObject;
  if (publicKey instanceof KeyObject) key = publicKey;
  else if (publicKey instanceof globalThis.CryptoKey) key = KeyObject.from(publicKey);
  else key = createPublicKey({ key: publicKey, format: 'jwk' });
  // A private key holds its public half; the app only ever stores that.
  return key.type === 'private' ? createPublicKey(key) : key;
}
