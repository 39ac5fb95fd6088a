import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';
import type { ConnectionParts } from '../connections/connector-definition';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { problems } from '../api/problem';
import { authorizeAddress } from './identity-client';
import * as store from '../store/store';

/**
 * The start of the authorization code flow (spec Authentication, messaging rule 4 and data rule 1;
 * the OAuth 2.0 endpoints guide, "Web server flow"): Connect Account with the authorization code method stores what
 * the form gave as a pending authorization under a single-use `state`, and answers the address of
 * the platform's sign-in page, with a PKCE challenge (S256) and the connector's exact callback
 * address and scopes. The callback (authorization-callback.ts) finishes it.
 */

/** What a connector that can connect through the browser declares. */
export interface AuthorizationCodeSupport {
  /** The spec's callback path: `/auth/crmdata/callback`. */
  callbackPath: string;
  /** The scopes to ask for (the spec's Authentication tables). */
  scopes: readonly string[];
  /** The identity service's login URL for the connection's config (production or sandbox). */
  loginUrl(config: Record<string, unknown>, env: GatewayEnvironment): string;
}

/** A pending authorization lives this long: enough to sign in and approve, short enough to be useless if leaked. */
export const AUTHORIZATION_LIFETIME_SECONDS = 10 * 60;

export const AuthorizationStarted = z
  .object({
    authorizationUrl: z.url().check(z.describe("Send the browser here: the platform's sign-in and approval page")),
    expiresAt: z.iso.datetime().check(z.describe('The sign-in must be finished before this time')),
    callbackUrl: z.url().check(z.describe('The callback address the OAuth client must have registered, exactly')),
  })
  .register(z.globalRegistry, { id: 'AuthorizationStarted' });
export type AuthorizationStarted = z.infer<typeof AuthorizationStarted>;

/** 256 random bits, URL-safe: the state and the PKCE verifier (RFC 7636 asks 43-128 characters). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** RFC 7636 S256: the challenge the platform keeps until the code is exchanged with the verifier. */
export function codeChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** Where the dashboard may ask to be sent back: a path on the dashboard, never another site. */
export function safeReturnTo(returnTo: string | undefined): string | undefined {
  if (returnTo === undefined) return undefined;
  return /^\/(?!\/)[\x21-\x7e]{0,200}$/.test(returnTo) && !returnTo.includes('\\') ? returnTo : undefined;
}

/**
 * The cookie that binds a sign-in to the browser that started it: without it, a sign-in address
 * sent to someone else would connect their platform account to the sender's gateway account.
 * HttpOnly (no script reads it), SameSite=Lax (sent on the platform's top-level redirect back, not
 * on cross-site subrequests), Secure over https, scoped to the connector's callback path, and no
 * longer lived than the pending authorization. The dashboard and the callbacks share one origin
 * (the distribution in AWS, the local server under npm start), so the browser keeps it.
 */
export const BROWSER_BINDING_COOKIE = 'ig_oauth_binding';

export function browserBindingCookie(value: string, callbackPath: string, secure: boolean, maxAgeSeconds = AUTHORIZATION_LIFETIME_SECONDS): string {
  return `${BROWSER_BINDING_COOKIE}=${value}; Path=${callbackPath}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The hash stored with the pending authorization (the cookie's value itself is never stored). */
export function browserBindingHash(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** Pure: the binding cookie's value in a Cookie header, if any. */
export function browserBindingOf(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === BROWSER_BINDING_COOKIE && value.length) return value.join('=');
  }
  return undefined;
}

export async function startAuthorization(
  gateway: Gateway,
  log: Logger,
  input: {
    accountId: string;
    connector: { name: string; authorization?: AuthorizationCodeSupport };
    parts: ConnectionParts;
    baseUrl: string;
    returnTo?: string;
  },
): Promise<{ started: AuthorizationStarted; setCookie: string }> {
  const { accountId, connector, parts } = input;
  const support = connector.authorization;
  if (!support) throw problems.invalidBody([{ path: 'authenticationMethod', message: `The ${connector.name} connector cannot connect through the browser.` }]);
  const clientId = parts.config.clientId;
  if (typeof clientId !== 'string') throw new Error(`the ${connector.name} connector's form gives no clientId`);

  const state = randomToken();
  const codeVerifier = randomToken(48);
  const binding = randomToken();
  const callbackUrl = `${input.baseUrl.replace(/\/+$/, '')}${support.callbackPath}`;
  const expiresAtSeconds = Math.floor(gateway.now() / 1000) + AUTHORIZATION_LIFETIME_SECONDS;
  const returnTo = safeReturnTo(input.returnTo);
  await store.putPendingAuthorization(gateway.table, {
    state,
    accountId,
    connector: connector.name,
    config: parts.config,
    // The verifier is a secret like the client secret: both wait in the vault's envelope.
    credentials: await gateway.vault.seal({ accountId, connector: connector.name }, { ...parts.credentials, codeVerifier }),
    redirectUri: callbackUrl,
    browserBinding: browserBindingHash(binding),
    expiresAt: expiresAtSeconds,
    ...(returnTo ? { returnTo } : {}),
  });
  log.info('authorization started', { accountId, connector: connector.name });
  const started = {
    authorizationUrl: authorizeAddress(support.loginUrl(parts.config, gateway.env), {
      clientId,
      redirectUri: callbackUrl,
      state,
      codeChallenge: codeChallenge(codeVerifier),
      scopes: support.scopes,
    }),
    expiresAt: new Date(expiresAtSeconds * 1000).toISOString(),
    callbackUrl,
  };
  return { started, setCookie: browserBindingCookie(binding, support.callbackPath, callbackUrl.startsWith('https:')) };
}
