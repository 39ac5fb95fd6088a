import * as z from 'zod/mini';
import type { ClientOptions } from '../connections/connector-platform';
import { createPlatformClient, type PlatformClient, type PlatformRequest, type PlatformResponse, type PlatformTransportOptions } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { connectionRateKey, rateBudgetFor, type RateBudget } from '../http/rate-budget';
import { IdentitySetupError, instanceOrigin, type IdentityEndpoint } from '../identity/identity-client';
import { identitySession, renewIdentitySession, type IdentityCredentials, type IdentitySessionToken } from '../identity/identity-session';

/**
 * The messaging connector's session with the CRM: requests go to the org's instance with the
 * connection's identity token (JWT bearer or refresh token, shared/identity/), through the
 * connection's one rate budget. A 401 renews the token once and sends the request again.
 * Conversation calls use each conversation's own session token instead (spec Authentication,
 * messaging rule 6); this session is for starting them and for the org's records.
 */

export interface MessagingPlatformSession {
  readonly accountId: string;
  request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>>;
  /** The org's instance URL (signs in first if needed). */
  instanceUrl(): Promise<string>;
}

export const MessagingClientConfig = z.looseObject({
  authenticationMethod: z._default(z.enum(['jwt_bearer', 'authorization_code']), 'jwt_bearer'),
  clientId: z.string().check(z.trim(), z.minLength(1)),
  username: z.optional(z.string().check(z.trim(), z.minLength(1))),
  loginUrl: z._default(z.enum(['production', 'sandbox']), 'production'),
});

/** The spec gives no messaging rate; its calls count toward the org's daily API limit, so stay modest. */
const MESSAGING_RATE = { ratePerSecond: 10, burst: 10 };

export interface MessagingClientOptions extends ClientOptions, PlatformTransportOptions {
  rateBudget?: RateBudget;
}

export function messagingIdentity(options: MessagingClientOptions): { endpoint: IdentityEndpoint; credentials: IdentityCredentials } {
  const parsed = MessagingClientConfig.safeParse(options.config);
  if (!parsed.success) throw new IdentitySetupError(`its config is not usable (${z.prettifyError(parsed.error).replace(/\s+/g, ' ').trim()})`);
  const config = parsed.data;
  const { clientSecret, privateKey, refreshToken } = options.credentials;
  const method =
    config.authenticationMethod === 'authorization_code' ? { clientSecret, refreshToken: refreshToken ?? '' } : { username: config.username, privateKey };
  const loginUrl = (config.loginUrl === 'sandbox' ? options.env.DATA_SANDBOX_LOGIN_URL : options.env.DATA_LOGIN_URL).replace(/\/+$/, '');
  const { timeoutMs, retry, fetch, sleep, random, now, onCall } = options;
  return {
    endpoint: {
      loginUrl,
      platform: 'messaging',
      allowInsecure: options.env.ALLOW_INSECURE_PLATFORM_URLS,
      timeoutMs: timeoutMs ?? options.env.PLATFORM_TIMEOUT_MS,
      ...(retry ? { retry } : {}),
      ...(fetch ? { fetch } : {}),
      ...(sleep ? { sleep } : {}),
      ...(random ? { random } : {}),
      ...(now ? { now } : {}),
      ...(onCall ? { onCall } : {}),
    },
    credentials: { accountId: options.accountId, clientId: config.clientId, ...Object.fromEntries(Object.entries(method).filter(([, v]) => v !== undefined)) },
  };
}

export function messagingClient(options: MessagingClientOptions): MessagingPlatformSession {
  const { endpoint, credentials } = messagingIdentity(options);
  const rateBudget = options.rateBudget ?? rateBudgetFor(connectionRateKey(options.accountId, 'messaging'), MESSAGING_RATE);
  let current: { token: IdentitySessionToken; client: PlatformClient } | undefined;
  const clientFor = (token: IdentitySessionToken): PlatformClient => {
    if (current?.token !== token) {
      const { loginUrl: _login, platform, allowInsecure, ...transport } = endpoint;
      current = {
        token,
        client: createPlatformClient({
          ...transport,
          baseUrl: instanceOrigin(token.instanceUrl, allowInsecure),
          platform,
          auth: { kind: 'bearer', token: token.accessToken },
          rateBudget,
          allowInsecure,
        }),
      };
    }
    return current.client;
  };
  return {
    accountId: options.accountId,
    async request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>> {
      const token = await identitySession(endpoint, credentials, options.env);
      try {
        return await clientFor(token).request(request);
      } catch (error) {
        // The platform did not act on a request it answered 401: renewing and sending it once more is safe.
        if (!(error instanceof PlatformError && error.status === 401)) throw error;
        return clientFor(await renewIdentitySession(endpoint, credentials, options.env, token)).request(request);
      }
    },
    async instanceUrl() {
      return instanceOrigin((await identitySession(endpoint, credentials, options.env)).instanceUrl, endpoint.allowInsecure);
    },
  };
}
