import { Buffer } from 'node:buffer';
import { DEFAULT_MIN_VERSION } from 'node:tls';
import type * as z from 'zod';
import { recordMetric } from '../metrics/gateway-metrics';
import { platformCallSegment } from '../tracing/segments';
import type { ConnectorName } from '../connectors';
import { PlatformError, errorKindForStatus, maskSecrets, platformErrorText } from './platform-error';
import type { PlatformErrorKind } from './platform-error';
import type { BudgetPace, RateBudget } from './rate-budget';
import { decideRetry, defaultRetryPolicy, parseRetryAfterMs } from './retry-policy';
import type { AttemptOutcome, GiveUpReason, RetryPolicy } from './retry-policy';

/**
 * The one HTTP client every connector uses to call its platform. Node's global `fetch` (undici)
 * is the transport. Per attempt: take a token from the connection's rate budget, send with a
 * timeout, classify the outcome, and let the retry policy decide what happens next.
 *
 * TLS: Node's default minimum is TLS 1.2 (`tls.DEFAULT_MIN_VERSION`) and this client passes no
 * agent, dispatcher or TLS option, so nothing weaker can be negotiated. Creating a client for an
 * https platform fails if the process was started with a weaker minimum (`--tls-min-v1.0`).
 */

export type PlatformAuth =
  /** Basic: the billing and payment platforms take the API key as username with an empty password. */
  | { kind: 'basic'; username: string; password?: string }
  | { kind: 'bearer'; token: string }
  | { kind: 'none' };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type QueryValue = string | number | boolean | undefined;

/** One HTTP attempt, reported to `onCall` and counted for the benchmarks. */
export interface PlatformCall {
  platform: ConnectorName;
  method: HttpMethod;
  /** Path without the query string. */
  path: string;
  /** HTTP status; undefined for a timeout or a network error. */
  status: number | undefined;
  /** 'ok' for a usable 2xx, otherwise what went wrong on this attempt. */
  outcome: 'ok' | PlatformErrorKind;
  /** 1 for the first attempt of a request. */
  attempt: number;
  durationMs: number;
}

export interface PlatformClientOptions {
  /** Platform address, optionally with a path prefix (`https://acme.chargebee.com/api/v2`). */
  baseUrl: string;
  platform: ConnectorName;
  auth: PlatformAuth;
  /** The connection's shared budget (`rateBudgetFor`); `unlimitedRateBudget` for one-off calls. */
  rateBudget: RateBudget;
  /**
   * The budget of the endpoint a request calls, for a platform that limits each endpoint on top of
   * the account (the payment platform: 25/s an endpoint by default); undefined for none. A request
   * waits for its turn in both, and a 429 slows both (it does not say which limit it broke).
   */
  endpointBudget?: (method: HttpMethod, path: string) => RateBudget | undefined;
  /** Per-attempt timeout covering headers and body. Default 10 s. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Allow http:// (the loopback sandbox simulators). Never in AWS. */
  allowInsecure?: boolean;
  /** Header carrying `idempotencyKey`. Default `Idempotency-Key` (the payment platform's). */
  idempotencyHeader?: string;
  userAgent?: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
  onCall?: (call: PlatformCall) => void;
}

/** What a connector's client passes through unchanged: timeouts, retries and the hooks tests and benchmarks set. */
export type PlatformTransportOptions = Pick<PlatformClientOptions, 'timeoutMs' | 'retry' | 'fetch' | 'sleep' | 'random' | 'now' | 'onCall'>;

/** The transport options that were given, and only those (so each client keeps its own defaults). */
export function transportOptions(options: PlatformTransportOptions): PlatformTransportOptions {
  const keys = ['timeoutMs', 'retry', 'fetch', 'sleep', 'random', 'now', 'onCall'] as const;
  return Object.fromEntries(keys.filter((key) => options[key] !== undefined).map((key) => [key, options[key]]));
}

export interface PlatformRequest<T = unknown> {
  method: HttpMethod;
  /** Path below baseUrl. Encode ids with `encodeURIComponent`. May carry a pre-encoded query. */
  path: string;
  /**
   * Keys go out literally, so bracket filters (`status[in]`, `created[gte]`) stay readable;
   * values are URL-encoded. Undefined values are left out. Arrays are the caller's business
   * (`types[0]`, or a JSON array for the billing platform's `[in]`) because platforms disagree.
   */
  query?: Record<string, QueryValue>;
  headers?: Record<string, string>;
  /** JSON body. */
  body?: unknown;
  /** Form body (`application/x-www-form-urlencoded`), e.g. OAuth token requests. */
  form?: Record<string, QueryValue>;
  /** Validates the parsed 2xx body; a mismatch is an 'invalid_response' error, not retried. */
  schema?: z.ZodType<T>;
  idempotencyKey?: string;
  /**
   * Whether sending this twice is harmless. Default: true for GET, PUT and DELETE, and for any
   * request with an idempotencyKey. Set it for read-only POSTs (the data platform's SQL query).
   */
  idempotent?: boolean;
  /** Overrides the client's per-attempt timeout (long-polls wait longer than ordinary calls). */
  timeoutMs?: number;
  /** Tokens to take from the rate budget per attempt. Default 1. */
  cost?: number;
  /** Abandons the request (a poller handing over or stopping): the promise rejects with the signal's reason, no retry. */
  signal?: AbortSignal;
}

export interface PlatformResponse<T> {
  status: number;
  headers: Headers;
  /** Parsed JSON (validated when a schema was given); undefined for an empty body (204). */
  body: T;
  attempts: number;
}

export interface PlatformClient {
  readonly platform: ConnectorName;
  request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>>;
  /**
   * What a caller deciding how many requests to keep in flight needs: the budget's rate and how long
   * requests wait for their turn, and how long the platform takes to answer (a moving average of
   * successful attempts; undefined before the first).
   */
  /** With `endpoint`, that endpoint's budget counts even before the client has called it (a sync plans before its first page). */
  pace?(endpoint?: { method: HttpMethod; path: string }): ClientPace;
}

export interface ClientPace {
  ratePerSecond: number | undefined;
  waitMs: number;
  latencyMs: number | undefined;
}

// ---- process-wide call counts, read by the benchmarks ----

const callCounts = new Map<string, number>();

/** HTTP attempts made by this process so far, by platform. */
export function platformCallCounts(): Record<string, number> {
  return Object.fromEntries(callCounts);
}

export function resetPlatformCallCounts(): void {
  callCounts.clear();
}

// ---- pure pieces ----

/** Checks a platform address once, when the client is made. */
export function checkedBaseUrl(baseUrl: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError('platform base URL is not a valid URL');
  }
  if (url.username || url.password) {
    throw new TypeError('platform base URL must not carry credentials; pass them as auth');
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    throw new TypeError(`platform base URL must use https (got ${url.protocol}//${url.host})`);
  }
  if (url.search || url.hash) throw new TypeError('platform base URL must not have a query or fragment');
  if (url.protocol === 'https:' && (DEFAULT_MIN_VERSION === 'TLSv1' || DEFAULT_MIN_VERSION === 'TLSv1.1')) {
    throw new Error(`this process allows ${DEFAULT_MIN_VERSION}; platform calls need TLS 1.2 or later`);
  }
  return url;
}

/** `key=value&...` with literal keys (brackets kept) and encoded values; undefined values skipped. */
export function encodeQuery(query: Record<string, QueryValue>): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const literalKey = encodeURIComponent(key).replace(/%5B/gi, '[').replace(/%5D/gi, ']');
    pairs.push(`${literalKey}=${encodeURIComponent(String(value))}`);
  }
  return pairs.join('&');
}

/** The full URL for a request. Refuses paths that would leave the configured host. */
export function requestUrl(base: URL, path: string, query?: Record<string, QueryValue>): URL {
  const [pathPart = '', presetQuery] = path.split(/\?(.*)/s, 2);
  const prefix = base.pathname.replace(/\/+$/, ''); // '' for a bare host, '/api/v2' for a prefix
  const url = new URL(base.href);
  url.pathname = `${prefix}/${pathPart.replace(/^\/+/, '')}`;
  const encoded = [presetQuery, query ? encodeQuery(query) : ''].filter((q) => q).join('&');
  url.search = encoded;
  // `..` segments are resolved by URL; make sure the result is still on the platform's host and prefix.
  if (url.origin !== base.origin || !url.pathname.startsWith(`${prefix}/`)) {
    throw new TypeError('request path must stay under the platform base URL');
  }
  return url;
}

export function authorizationHeader(auth: PlatformAuth): string | undefined {
  switch (auth.kind) {
    case 'basic':
      return `Basic ${Buffer.from(`${auth.username}:${auth.password ?? ''}`, 'utf8').toString('base64')}`;
    case 'bearer':
      return `Bearer ${auth.token}`;
    case 'none':
      return undefined;
  }
}

function secretsOf(auth: PlatformAuth): string[] {
  switch (auth.kind) {
    case 'basic':
      return [auth.username, auth.password ?? ''].filter((s) => s);
    case 'bearer':
      return [auth.token];
    case 'none':
      return [];
  }
}

function isIdempotent(request: PlatformRequest<unknown>): boolean {
  if (request.idempotent !== undefined) return request.idempotent;
  if (request.idempotencyKey) return true;
  return request.method === 'GET' || request.method === 'PUT' || request.method === 'DELETE';
}

/** The body of a 2xx as JSON, or why it is not usable. Empty means undefined (204, 202 without body). */
export function parseJsonBody(text: string, contentType: string | null): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    const type = contentType?.split(';')[0]?.trim() || 'no content type';
    const looksJson = /^\s*[[{]/.test(text);
    return {
      ok: false,
      reason: looksJson
        ? `body is truncated or malformed JSON (${Buffer.byteLength(text)} bytes, ${type})`
        : `body is not JSON (${type}, ${Buffer.byteLength(text)} bytes)`,
    };
  }
}

function parseQuietly(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- one attempt ----

type AttemptResult =
  | { kind: 'ok'; status: number; headers: Headers; body: unknown }
  | { kind: 'status'; status: number; headers: Headers; body: unknown }
  | { kind: 'invalid_response'; status: number; headers: Headers; reason: string }
  | { kind: 'timeout' }
  | { kind: 'network'; code: string | undefined };

function networkCode(error: unknown): string | undefined {
  // undici: TypeError('fetch failed') whose cause carries the socket error's code. Only the code is
  // kept: messages are not needed and could one day carry more than we want in an error.
  const cause = error instanceof Error ? error.cause : undefined;
  const code = cause && typeof cause === 'object' && 'code' in cause ? cause.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

function toRetryOutcome(result: AttemptResult): AttemptOutcome {
  switch (result.kind) {
    case 'ok':
    case 'status':
      return { kind: 'response', status: result.status, headers: result.headers };
    case 'invalid_response':
      return { kind: 'invalid_response' };
    case 'timeout':
      return { kind: 'timeout' };
    case 'network':
      return { kind: 'network' };
  }
}

const GIVE_UP_WORDS: Record<GiveUpReason, string | undefined> = {
  not_retryable: undefined,
  platform_said_no: 'the platform asked not to retry',
  attempts_exhausted: 'retries exhausted',
  deadline: 'retry deadline reached',
  retry_after_too_long: 'the platform asked to wait longer than this call may; try again later',
};

/** What a request abandoned through its signal rejects with. */
function abandoned(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The request was abandoned', 'AbortError');
}

// ---- the client ----

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const base = checkedBaseUrl(options.baseUrl, options.allowInsecure ?? false);
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry };
  const send = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const authorization = authorizationHeader(options.auth);
  const knownSecrets = secretsOf(options.auth);
  const { platform, rateBudget } = options;
  /** Moving average of answered attempts' durations (ms): how long the platform takes. */
  let latencyMs: number | undefined;
  /** The endpoint budgets this client has drawn from: its pace is the tightest of them and the connection's. */
  const endpointBudgets = new Set<RateBudget>();

  function buildHeaders(request: PlatformRequest<unknown>): Headers {
    const headers = new Headers();
    try {
      headers.set('accept', 'application/json');
      headers.set('user-agent', options.userAgent ?? 'integration-gateway');
      for (const [name, value] of Object.entries(request.headers ?? {})) headers.set(name, value);
      if (request.body !== undefined) headers.set('content-type', 'application/json');
      if (request.form !== undefined) headers.set('content-type', 'application/x-www-form-urlencoded');
      if (request.idempotencyKey) headers.set(options.idempotencyHeader ?? 'Idempotency-Key', request.idempotencyKey);
      if (authorization) headers.set('authorization', authorization);
    } catch {
      // The runtime's message quotes the bad value, which may be the token: say less.
      throw new TypeError(`${platform} platform: a request header has an invalid name or value`);
    }
    return headers;
  }

  function buildBody(request: PlatformRequest<unknown>): string | undefined {
    if (request.body !== undefined && request.form !== undefined) {
      throw new TypeError('a platform request has either a JSON body or a form, not both');
    }
    if (request.body !== undefined) return JSON.stringify(request.body);
    if (request.form !== undefined) return encodeQuery(request.form);
    return undefined;
  }

  async function attemptOnce(
    url: URL,
    init: { method: HttpMethod; headers: Headers; body: string | undefined },
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<AttemptResult> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const abandon = (): void => controller.abort();
    signal?.addEventListener('abort', abandon, { once: true });
    // Given up while waiting for its turn (the listener above would never hear it): send nothing, or a
    // long-poll its caller has handed over would still reach the platform next to the new holder's.
    if (signal?.aborted) controller.abort();
    try {
      // No redirects: platform hosts are fixed by configuration, and a redirect would carry the
      // Authorization header somewhere nobody chose.
      const response = await send(url, { ...init, redirect: 'manual', signal: controller.signal });
      // Reading the body is inside the timeout too: a platform that stalls mid-body is a timeout.
      const text = await response.text();
      const { status, headers } = response;
      if (status >= 200 && status < 300) {
        const parsed = parseJsonBody(text, headers.get('content-type'));
        return parsed.ok
          ? { kind: 'ok', status, headers, body: parsed.value }
          : { kind: 'invalid_response', status, headers, reason: parsed.reason };
      }
      if (status >= 300 && status < 400) {
        return { kind: 'invalid_response', status, headers, reason: 'the platform answered with a redirect, which is not followed' };
      }
      return { kind: 'status', status, headers, body: parseQuietly(text) };
    } catch (error) {
      if (signal?.aborted) throw abandoned(signal);
      if (timedOut) return { kind: 'timeout' };
      return { kind: 'network', code: networkCode(error) };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
    }
  }

  function failure(
    result: Exclude<AttemptResult, { kind: 'ok' }>,
    request: PlatformRequest<unknown>,
    attempts: number,
    giveUp: GiveUpReason,
    retryAfterMs: number | undefined,
  ): PlatformError {
    const common = { platform, attempts, method: request.method, path: request.path.split('?')[0] ?? '', retryAfterMs };
    const because = GIVE_UP_WORDS[giveUp];
    switch (result.kind) {
      case 'timeout':
        return new PlatformError({
          ...common,
          kind: 'timeout',
          retryable: true,
          reason: ['no complete answer in time', because].filter(Boolean).join(', '),
        });
      case 'network':
        return new PlatformError({
          ...common,
          kind: 'network',
          retryable: true,
          reason: [`connection failed${result.code ? ` (${result.code})` : ''}`, because].filter(Boolean).join(', '),
        });
      case 'invalid_response':
        return new PlatformError({ ...common, kind: 'invalid_response', status: result.status, retryable: false, reason: result.reason });
      case 'status': {
        const kind = errorKindForStatus(result.status);
        const said = platformErrorText(result.body);
        return new PlatformError({
          ...common,
          kind,
          status: result.status,
          platformMessage: said.message === undefined ? undefined : maskSecrets(said.message, knownSecrets),
          platformCode: said.code === undefined ? undefined : maskSecrets(said.code, knownSecrets),
          retryable: (kind === 'rate_limited' || kind === 'unavailable') && giveUp !== 'platform_said_no',
          reason: because,
        });
      }
    }
  }

  async function request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>> {
    const url = requestUrl(base, request.path, request.query);
    const init = { method: request.method, headers: buildHeaders(request), body: buildBody(request) };
    const idempotent = isIdempotent(request);
    const path = request.path.split('?')[0] ?? '';
    const startedAt = now();
    let invalidResponses = 0;
    const endpointBudget = options.endpointBudget?.(request.method, path);
    if (endpointBudget) endpointBudgets.add(endpointBudget);

    for (let attempt = 1; ; attempt++) {
      if (request.signal?.aborted) throw abandoned(request.signal);
      // The endpoint's turn first: the connection's is then taken when the request can go.
      await endpointBudget?.take(request.cost);
      await rateBudget.take(request.cost);
      // The last attempt gets no longer than the deadline leaves, so a slow platform cannot stretch it.
      const remainingMs = Math.max(1, policy.deadlineMs - (now() - startedAt));
      const timeoutMs = Math.min(request.timeoutMs ?? options.timeoutMs ?? 10_000, remainingMs);
      const attemptStartedAt = now();
      // One X-Ray subsegment per attempt when tracing is on: the path's shape only, never the URL.
      const result = await platformCallSegment(platform, { method: request.method, path, attempt }, async (annotate) => {
        const answer = await attemptOnce(url, init, timeoutMs, request.signal);
        annotate('outcome', answer.kind === 'ok' || answer.kind === 'invalid_response' || answer.kind === 'status' ? answer.status : answer.kind);
        return answer;
      });

      const status = result.kind === 'timeout' || result.kind === 'network' ? undefined : result.status;
      const outcome =
        result.kind === 'ok' ? 'ok' : result.kind === 'status' ? errorKindForStatus(result.status) : result.kind;
      callCounts.set(platform, (callCounts.get(platform) ?? 0) + 1);
      if (status === 429) recordMetric.platformThrottled(platform);
      if (attempt > 1) recordMetric.platformRetried(platform);
      options.onCall?.({ platform, method: request.method, path, status, outcome, attempt, durationMs: now() - attemptStartedAt });

      if (result.kind === 'ok') {
        const took = now() - attemptStartedAt;
        latencyMs = latencyMs === undefined ? took : latencyMs * 0.8 + took * 0.2;
        rateBudget.recordSuccess?.();
        endpointBudget?.recordSuccess?.();
        const body = validated(result.body, result.status, request, attempt);
        return { status: result.status, headers: result.headers, body, attempts: attempt };
      }
      if (result.kind === 'invalid_response') invalidResponses++;
      if (result.kind === 'status' && result.status === 429) {
        const retryAfterMs = parseRetryAfterMs(result.headers.get('retry-after'), now());
        rateBudget.penalize(retryAfterMs);
        endpointBudget?.penalize(retryAfterMs);
      }

      const decision = decideRetry(
        toRetryOutcome(result),
        { attempt, elapsedMs: now() - startedAt, invalidResponses, idempotent, nowMs: now() },
        policy,
        random,
      );
      if (!decision.retry) throw failure(result, request, attempt, decision.reason, decision.retryAfterMs);
      await sleep(decision.delayMs);
    }
  }

  function validated<T>(body: unknown, status: number, request: PlatformRequest<T>, attempts: number): T {
    if (!request.schema) return body as T;
    const parsed = request.schema.safeParse(body);
    if (parsed.success) return parsed.data;
    // Paths and zod's wording only: values may be customer data.
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new PlatformError({
      platform,
      kind: 'invalid_response',
      status,
      attempts,
      method: request.method,
      path: request.path.split('?')[0] ?? '',
      retryable: false,
      reason: `response does not have the expected shape (${issues})`,
    });
  }

  /** The tightest of the connection's budget and the endpoints' this client called (a sync job lists one). */
  function pace(endpoint?: { method: HttpMethod; path: string }): ClientPace {
    const named = endpoint && options.endpointBudget?.(endpoint.method, endpoint.path);
    const paces = [rateBudget, ...endpointBudgets, ...(named ? [named] : [])].map((budget) => budget.pace?.()).filter((one): one is BudgetPace => one !== undefined);
    if (paces.length === 0) return { ratePerSecond: undefined, waitMs: 0, latencyMs };
    return { ratePerSecond: Math.min(...paces.map((one) => one.ratePerSecond)), waitMs: Math.max(...paces.map((one) => one.waitMs)), latencyMs };
  }

  return { platform, request, pace };
}
