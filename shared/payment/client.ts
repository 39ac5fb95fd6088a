import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';
import type { ClientOptions } from '../connections/connector-platform';
import { createPlatformClient, transportOptions, type PlatformClient, type PlatformTransportOptions } from '../http/platform-client';
import { connectionRateKey, endpointRateKey, rateBudgetFor, type RateBudget, type RateBuckets, type RateLimits } from '../http/rate-budget';

/**
 * The payment platform's HTTP client for one connection: its API address, HTTP Basic with the
 * secret (or restricted) key as username and an empty password (the spec's Authentication part),
 * and the connection's shared rate budget.
 */

/** The non-secret config Connect Account stored (shared/payment/config.ts), as far as the client reads it. */
export const PaymentConnectionConfig = z.looseObject({
  /** Derived from the key's prefix when the connection was made. */
  mode: z.optional(z.enum(['live', 'test'])),
  keyType: z.optional(z.enum(['secret', 'restricted'])),
  /** An operator's override of the platform's documented limit (plans and endpoints differ). */
  requestsPerSecond: z.optional(z.number().check(z.positive())),
  /** An operator's override of the limit each endpoint has of its own (25/s documented). */
  requestsPerSecondPerEndpoint: z.optional(z.number().check(z.positive())),
});
export type PaymentConnectionConfig = z.infer<typeof PaymentConnectionConfig>;

/** The platform's documented limits: about 100 requests/s with live keys, 25/s with test keys. */
const REQUESTS_PER_SECOND = { live: 100, test: 25 } as const;
/**
 * "API endpoints have a default limit of 25 requests per second", counted apart from the global
 * limit and against it too: one object's listing goes at 25/s at most, so a sync reaches the
 * global 100/s only with four objects side by side.
 */
const REQUESTS_PER_SECOND_PER_ENDPOINT = 25;

/**
 * How fast this connection may call the platform. An unknown mode counts as test: the lower limit
 * is the safe guess. Burst is a tenth of a second's worth (at least 2): sent at the full rate, any
 * bunching of arrivals on the way eats into the platform's own bucket, so the gateway's burst must
 * stay well below the platform's (a second's worth).
 */
export function paymentRateLimits(config: Record<string, unknown>): RateLimits {
  const parsed = PaymentConnectionConfig.safeParse(config);
  const settings = parsed.success ? parsed.data : {};
  const ratePerSecond = settings.requestsPerSecond ?? REQUESTS_PER_SECOND[settings.mode ?? 'test'];
  return withBurst(ratePerSecond);
}

/** How fast this connection may call any one endpoint: the documented 25/s, never above the connection's own limit. */
export function paymentEndpointRateLimits(config: Record<string, unknown>): RateLimits {
  const parsed = PaymentConnectionConfig.safeParse(config);
  const perEndpoint = (parsed.success ? parsed.data.requestsPerSecondPerEndpoint : undefined) ?? REQUESTS_PER_SECOND_PER_ENDPOINT;
  return withBurst(Math.min(perEndpoint, paymentRateLimits(config).ratePerSecond));
}

function withBurst(ratePerSecond: number): RateLimits {
  return { ratePerSecond, burst: Math.max(1, Math.min(Math.round(ratePerSecond), Math.max(2, Math.round(ratePerSecond / 10)))) };
}

/**
 * The endpoint a call counts against: the platform counts each named operation apart
 * (`GET /v1/customers` lists, `GET /v1/customers/{id}` retrieves one, whichever id).
 */
export function paymentEndpoint(method: string, path: string): string {
  return `${method} ${path
    .split('/')
    .map((segment, at) => (at === 3 ? '{id}' : segment))
    .join('/')}`;
}

/** `live` or `test` from a key's prefix (`sk_live_...`, `rk_test_...`); undefined for anything else. */
export function modeOfKey(key: string): 'live' | 'test' | undefined {
  const mode = /^(?:sk|rk)_(live|test)_/.exec(key)?.[1];
  return mode === 'live' || mode === 'test' ? mode : undefined;
}

export interface PaymentClientOptions extends PlatformTransportOptions {
  env: Pick<GatewayEnvironment, 'PAYMENT_API_BASE_URL' | 'ALLOW_INSECURE_PLATFORM_URLS'>;
  /** The account the connection belongs to: it names the shared rate budget. */
  accountId: string;
  config: Record<string, unknown>;
  /** From the vault: `secretKey` (and `webhookSigningSecret`, unused here). */
  credentials: Record<string, string>;
  /** Default: the connection's shared budget, its bucket in `rateBuckets`. */
  rateBudget?: RateBudget;
  /** Where the connection's shared bucket lives (the gateway's store: every Lambda shares it); default this process. */
  rateBuckets?: RateBuckets;
}

export function paymentClient(options: PaymentClientOptions): PlatformClient {
  const secretKey = options.credentials.secretKey;
  // The message names the field, never its value.
  if (!secretKey) throw new TypeError('payment connection has no secretKey in its credentials');
  // The key's prefix says the mode too; the stored config wins when it has one.
  const config = { ...options.config, mode: options.config.mode ?? modeOfKey(secretKey) };
  const connectionKey = connectionRateKey(options.accountId, 'payment');
  const buckets = options.rateBuckets ? { buckets: options.rateBuckets } : {};
  // Read from the config once: the endpoint's budget is looked up on every request.
  const endpointLimits = paymentEndpointRateLimits(config);
  return createPlatformClient({
    baseUrl: options.env.PAYMENT_API_BASE_URL,
    platform: 'payment',
    auth: { kind: 'basic', username: secretKey, password: '' },
    rateBudget: options.rateBudget ?? rateBudgetFor(connectionKey, paymentRateLimits(config), buckets),
    // An injected budget (tests) stands for the connection's whole limit: no endpoint budget beside it.
    ...(options.rateBudget
      ? {}
      : {
          endpointBudget: (method: string, path: string) =>
            rateBudgetFor(endpointRateKey(connectionKey, paymentEndpoint(method, path)), endpointLimits, buckets),
        }),
    allowInsecure: options.env.ALLOW_INSECURE_PLATFORM_URLS,
    ...transportOptions(options),
  });
}

/** A connection's client, with the gateway's platform timeout (what syncs and the event worker's fetches use). */
export const paymentConnectionClient = (options: ClientOptions): PlatformClient => paymentClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS });
