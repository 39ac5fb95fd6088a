import { REDACTED, redactText } from '../log/redaction';
import type { ConnectorName } from '../connectors';

/**
 * What went wrong on a call to a platform, in the words the rest of the gateway acts on:
 * connection health ('auth' means "needs reconnect"), the spec's remedies, and whether a sync job
 * should be tried again later.
 */
export type PlatformErrorKind =
  | 'auth' // 401: the key or token is wrong, expired or revoked
  | 'permission' // 403: the key is valid but may not read this (restricted or publishable key)
  | 'not_found' // 404: unknown resource, or an unknown billing site
  | 'rate_limited' // 429
  | 'unavailable' // 5xx
  | 'timeout' // no complete answer within the per-attempt timeout
  | 'network' // connection refused, reset or dropped
  | 'invalid_request' // any other 4xx: the gateway asked for something the platform refuses
  | 'invalid_response'; // a 2xx the gateway cannot use: HTML, truncated JSON, wrong shape, a redirect

export interface PlatformErrorDetails {
  platform: ConnectorName;
  kind: PlatformErrorKind;
  /** HTTP status of the last attempt; absent for timeouts and network errors. */
  status?: number;
  /** The platform's own explanation, taken from its error body, with anything key-shaped masked. */
  platformMessage?: string;
  /** The platform's own error code or type (`authentication_error`, `invalid_grant`, `api_error_code`...). */
  platformCode?: string;
  /** How long the platform asked us to wait, when it said so. */
  retryAfterMs?: number;
  /** HTTP attempts made, retries included. */
  attempts: number;
  method: string;
  /** The request path without its query string (queries can carry customer emails). */
  path: string;
  /** Why the gateway stopped or what it could not use, e.g. "body is not JSON (text/html)". */
  reason?: string;
  /** True when a later try (the next sync run, a requeued job) may succeed without anyone changing anything. */
  retryable: boolean;
}

/**
 * The one error type every platform call throws. Its message names the platform, the status,
 * the method and path, and the platform's own message. It never holds request headers, the
 * request body, the query string or credentials, so it is safe to log and to show in the dashboard.
 */
export class PlatformError extends Error {
  override readonly name = 'PlatformError';
  readonly platform: ConnectorName;
  readonly kind: PlatformErrorKind;
  readonly status: number | undefined;
  readonly platformMessage: string | undefined;
  readonly platformCode: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;
  readonly method: string;
  readonly path: string;
  readonly reason: string | undefined;
  readonly retryable: boolean;

  constructor(details: PlatformErrorDetails) {
    super(describe(details));
    this.platform = details.platform;
    this.kind = details.kind;
    this.status = details.status;
    this.platformMessage = details.platformMessage;
    this.platformCode = details.platformCode;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts;
    this.method = details.method;
    this.path = details.path;
    this.reason = details.reason;
    this.retryable = details.retryable;
  }
}

function describe(d: PlatformErrorDetails): string {
  const what = d.status === undefined ? d.kind : `${d.status} ${d.kind}`;
  const tries = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  const parts = [`${d.platform} platform: ${what} on ${d.method} ${d.path} after ${tries}`];
  if (d.reason) parts.push(d.reason);
  if (d.platformMessage) parts.push(`platform said: ${d.platformMessage}`);
  return parts.join('; ');
}

/** The kind for a non-2xx status. */
export function errorKindForStatus(status: number): PlatformErrorKind {
  if (status === 401) return 'auth';
  if (status === 403) return 'permission';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  if (status >= 400) return 'invalid_request';
  // 1xx/3xx never reach a caller as success: the client does not follow redirects.
  return 'invalid_response';
}

/**
 * The platform's own message and code from the error shapes the four platforms use:
 * - payment: `{error: {type, code, message}}`
 * - billing: `{message, api_error_code, type}`
 * - identity (OAuth): `{error: "invalid_grant", error_description}`
 * - data platform REST: `[{message, errorCode}]`
 */
export function platformErrorText(body: unknown): { message?: string; code?: string } {
  const first = Array.isArray(body) ? body[0] : body;
  if (!isRecord(first)) return {};
  if (isRecord(first.error)) {
    return {
      message: text(first.error.message),
      code: text(first.error.code) ?? text(first.error.type),
    };
  }
  if (typeof first.error === 'string') {
    return { message: text(first.error_description) ?? text(first.message), code: first.error };
  }
  return {
    message: text(first.message),
    code: text(first.api_error_code) ?? text(first.errorCode) ?? text(first.code) ?? text(first.type),
  };
}

/** Masks the connection's own credentials and anything shaped like a secret (shared/log/redaction.ts). */
export function maskSecrets(message: string, knownSecrets: readonly string[] = []): string {
  let masked = message;
  for (const secret of knownSecrets) {
    if (secret.length >= 4) masked = masked.split(secret).join(REDACTED);
  }
  masked = redactText(masked);
  // Keep messages short: they end up in the dashboard and in logs.
  return masked.length > 500 ? `${masked.slice(0, 500)}…` : masked;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
