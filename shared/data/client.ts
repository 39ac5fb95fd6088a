import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';
import {
  createPlatformClient,
  transportOptions,
  type PlatformClient,
  type PlatformTransportOptions,
  type PlatformRequest,
  type PlatformResponse,
} from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { connectionRateKey, rateBudgetFor, type RateBudget, type RateLimits } from '../http/rate-budget';
import { dataTokens, DataSetupError, loginUrlFor, renewDataTokens, type DataAuthSettings, type DataTokens } from './auth';
import { DataApiRegion, DataLoginChoice, DEFAULT_DATA_REQUESTS_PER_SECOND, MAX_DATA_REQUESTS_PER_SECOND, privateKeyProblem } from './config';

export { DataSetupError } from './auth';

/**
 * The session the data connector's ingestion and query code talk through: requests go to the data
 * tenant with the current data-platform token (fetched, cached and renewed by ./auth), through the
 * connection's one shared rate budget. A 401 renews the token once and sends the request again.
 */

export interface DataPlatformSession {
  readonly platform: 'data';
  readonly accountId: string;
  /** `path` is below the data tenant (`/services/data/v61.0/ssot/queryv2`, `/api/v1/ingest/...`). */
  request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>>;
  /** The data tenant's base URL (signs in first if needed). */
  tenantUrl(): Promise<string>;
}

/** The stored (non-secret) connection config this client reads; other fields pass through. */
export const DataClientConfig = z.looseObject({
  authenticationMethod: z._default(z.enum(['jwt_bearer', 'authorization_code']), 'jwt_bearer'),
  clientId: z.string().check(z.trim(), z.minLength(1)),
  username: z.optional(z.string().check(z.trim(), z.minLength(1))),
  loginUrl: DataLoginChoice,
  apiRegion: z.optional(DataApiRegion),
  requestsPerSecond: z.optional(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_DATA_REQUESTS_PER_SECOND))),
});
export type DataClientConfig = z.input<typeof DataClientConfig>;

/** The connection's rate: the configured one, or a conservative 10 a second; a burst of about one second's worth. */
export function dataRateLimits(config: { requestsPerSecond?: number | undefined }): RateLimits {
  const requested = config.requestsPerSecond;
  const perSecond =
    requested !== undefined && Number.isFinite(requested) ? Math.min(MAX_DATA_REQUESTS_PER_SECOND, Math.max(1, requested)) : DEFAULT_DATA_REQUESTS_PER_SECOND;
  return { ratePerSecond: perSecond, burst: Math.min(20, Math.max(2, Math.round(perSecond))) };
}

export interface DataClientOptions extends PlatformTransportOptions {
  env: Pick<GatewayEnvironment, 'DATA_LOGIN_URL' | 'DATA_SANDBOX_LOGIN_URL' | 'ALLOW_INSECURE_PLATFORM_URLS'> &
    Partial<Pick<GatewayEnvironment, 'PLATFORM_TIMEOUT_MS'>>;
  /** The gateway account that owns the connection: tokens and the rate budget are per account. */
  accountId: string;
  /** The connection's stored config (`{clientId, username, loginUrl, apiRegion, requestsPerSecond?}`). */
  config: Readonly<Record<string, unknown>>;
  /** From the vault: `{privateKey}` (JWT bearer) or `{clientSecret, refreshToken}` (authorization code). */
  credentials: Record<string, string>;
  /** Default: the process's shared budget for this account's data connection. */
  rateBudget?: RateBudget;
  /** The clock tokens are cached by (tests and benchmarks simulate time). */
  now?: () => number;
}

/** What signs the connection in, by its method: the username and private key, or the refresh token. */
function signInOf(
  config: z.infer<typeof DataClientConfig>,
  credentials: Record<string, string>,
): Pick<DataAuthSettings, 'username' | 'privateKey' | 'clientSecret' | 'refreshToken'> {
  if (config.authenticationMethod === 'authorization_code') {
    const { clientSecret, refreshToken } = credentials;
    if (!clientSecret || !refreshToken) throw new DataSetupError('no client secret or refresh token is stored for it');
    return { clientSecret, refreshToken };
  }
  const privateKey = credentials.privateKey ?? '';
  if (!privateKey.trim()) throw new DataSetupError('no private key is stored for it');
  const keyProblem = privateKeyProblem(privateKey);
  if (keyProblem) throw new DataSetupError(`its stored private key is not usable: ${keyProblem}`);
  if (!config.username) throw new DataSetupError('no username is stored for it');
  return { username: config.username, privateKey };
}

export function dataClient(options: DataClientOptions): DataPlatformSession {
  const parsed = DataClientConfig.safeParse(options.config);
  if (!parsed.success) {
    // Client ids, usernames and choices are not secret: the message may name them.
    throw new DataSetupError(`its config is not usable (${z.prettifyError(parsed.error).replace(/\s+/g, ' ').trim()})`);
  }
  const config = parsed.data;
  const signIn = signInOf(config, options.credentials);

  const allowInsecure = options.env.ALLOW_INSECURE_PLATFORM_URLS;
  const transport = transportOptions({ ...options, timeoutMs: options.timeoutMs ?? options.env.PLATFORM_TIMEOUT_MS });
  const auth: DataAuthSettings = {
    accountId: options.accountId,
    clientId: config.clientId,
    loginUrl: loginUrlFor(options.env, config.loginUrl),
    ...signIn,
    allowInsecure,
    ...transport,
    ...(options.now ? { now: options.now } : {}),
  };
  const rateBudget = options.rateBudget ?? rateBudgetFor(connectionRateKey(options.accountId, 'data'), dataRateLimits(config));

  // One platform client per token; rebuilt when the token changes.
  let current: { tokens: DataTokens; client: PlatformClient } | undefined;
  const clientFor = (tokens: DataTokens): PlatformClient => {
    if (current?.tokens !== tokens) {
      current = {
        tokens,
        client: createPlatformClient({
          baseUrl: tokens.tenantUrl,
          platform: 'data',
          auth: { kind: 'bearer', token: tokens.accessToken },
          rateBudget,
          allowInsecure,
          ...transport,
        }),
      };
    }
    return current.client;
  };

  return {
    platform: 'data',
    accountId: options.accountId,
    async request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>> {
      const tokens = await dataTokens(auth);
      try {
        return await clientFor(tokens).request(request);
      } catch (error) {
        // A 401 means the token died early (revoked, expired server side): the platform did not act
        // on the request, so renewing and sending it once more is safe, even for ingestion.
        if (!(error instanceof PlatformError && error.status === 401)) throw error;
        const renewed = await renewDataTokens(auth, tokens);
        return clientFor(renewed).request(request);
      }
    },
    async tenantUrl(): Promise<string> {
      return (await dataTokens(auth)).tenantUrl;
    },
  };
}
