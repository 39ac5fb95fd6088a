import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';
import type { ClientOptions } from '../connections/connector-platform';
import { createPlatformClient, transportOptions, type PlatformClient, type PlatformTransportOptions } from '../http/platform-client';
import { connectionRateKey, rateBudgetFor, type RateBudget, type RateBuckets, type RateLimits } from '../http/rate-budget';
import { BillingSiteName } from './config';

/**
 * The HTTP client for one billing connection: the site's own address
 * (`BILLING_BASE_URL_TEMPLATE` with `{site}` replaced; callers put `/api/v2/...` in their paths),
 * HTTP Basic with the API key as username and an empty password, and the connection's shared
 * rate budget. Retries, timeouts and error shapes come from the shared platform client.
 */

/** The billing platform's documented floor: test sites and small plans allow 150 requests a minute. */
export const DEFAULT_BILLING_REQUESTS_PER_MINUTE = 150;
/** The most any plan allows. */
export const MAX_BILLING_REQUESTS_PER_MINUTE = 3_500;

/** The stored (non-secret) connection config this client reads; other fields pass through. */
export const BillingClientConfig = z.looseObject({
  siteName: BillingSiteName,
  environment: z.optional(z.enum(['test', 'live'])),
  /** The site's plan allows more than the floor (up to 3,500 a minute on large plans). */
  requestsPerMinute: z.optional(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_BILLING_REQUESTS_PER_MINUTE))),
});
export type BillingClientConfig = z.input<typeof BillingClientConfig>;

/**
 * The stored connection cannot be used as it is (no API key, a bad site name): the user must
 * reconnect. The message names the field, never its value when it is a secret.
 */
export class BillingSetupError extends Error {
  override readonly name = 'BillingSetupError';
}

/** What the connection's rate budget hands out: the plan's per-minute rate with a small burst. */
export function billingRateLimits(config: { requestsPerMinute?: number | undefined }): RateLimits {
  const requested = config.requestsPerMinute;
  const perMinute =
    requested !== undefined && Number.isFinite(requested)
      ? Math.min(MAX_BILLING_REQUESTS_PER_MINUTE, Math.max(1, requested))
      : DEFAULT_BILLING_REQUESTS_PER_MINUTE;
  // A couple of seconds' worth, between 2 and 20: enough for a page and a Test Connection back to back,
  // too little to trip the platform's own window after a quiet spell.
  const burst = Math.min(20, Math.max(2, Math.round(perMinute / 30)));
  return { ratePerSecond: perMinute / 60, burst };
}

/** The site's address from the template: `https://{site}.chargebee.com` → `https://acme.chargebee.com`. */
export function billingSiteUrl(template: string, siteName: string): string {
  if (!template.includes('{site}')) {
    throw new TypeError('BILLING_BASE_URL_TEMPLATE must contain {site}: each connection has its own site address');
  }
  return template.split('{site}').join(siteName).replace(/\/+$/, '');
}

export interface BillingClientOptions extends PlatformTransportOptions {
  env: Pick<GatewayEnvironment, 'BILLING_BASE_URL_TEMPLATE' | 'ALLOW_INSECURE_PLATFORM_URLS'>;
  /** The gateway account that owns the connection: the rate budget is shared per account and platform. */
  accountId: string;
  /** The connection's stored config (`{siteName, environment, requestsPerMinute?}`), checked here. */
  config: Readonly<Record<string, unknown>>;
  /** From the vault: `{apiKey}`. */
  credentials: Record<string, string>;
  /** Default: the connection's shared budget, its bucket in `rateBuckets`. */
  rateBudget?: RateBudget;
  /** Where the connection's shared bucket lives (the gateway's store: every Lambda shares it); default this process. */
  rateBuckets?: RateBuckets;
}

export function billingClient(options: BillingClientOptions): PlatformClient {
  const parsed = BillingClientConfig.safeParse(options.config);
  if (!parsed.success) {
    // Site names and plan limits are not secret: the messages may name them.
    throw new BillingSetupError(`its config is not usable (${z.prettifyError(parsed.error).replace(/\s+/g, ' ').trim()})`);
  }
  const config = parsed.data;
  const apiKey = options.credentials.apiKey?.trim();
  if (!apiKey) throw new BillingSetupError('no API key is stored for it');

  return createPlatformClient({
    baseUrl: billingSiteUrl(options.env.BILLING_BASE_URL_TEMPLATE, config.siteName),
    platform: 'billing',
    auth: { kind: 'basic', username: apiKey, password: '' },
    rateBudget:
      options.rateBudget ??
      rateBudgetFor(connectionRateKey(options.accountId, 'billing'), billingRateLimits(config), options.rateBuckets ? { buckets: options.rateBuckets } : {}),
    allowInsecure: options.env.ALLOW_INSECURE_PLATFORM_URLS,
    ...transportOptions(options),
  });
}

/** A connection's client, with the gateway's platform timeout (what syncs and the event worker's fetches use). */
export const billingConnectionClient = (options: ClientOptions): PlatformClient => billingClient({ ...options, timeoutMs: options.env.PLATFORM_TIMEOUT_MS });
