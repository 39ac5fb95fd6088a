import { recordMetric } from '../metrics/gateway-metrics';
import { platformCallSegment } from '../tracing/segments';
import type { ConnectorName } from '../connectors';
import { errorKindForStatus } from './platform-error';
import { clientBudgets, type ClientPace } from './platform-budget';
import type { HttpMethod, PlatformAuth, PlatformCall, PlatformRequest, PlatformResponse } from './platform-request';
import { afterFailedAttempt, isIdempotent, validated } from './platform-retry';
import { abandoned, attemptOnce, authorizationHeader, checkedBaseUrl, requestBody, requestHeaders, requestUrl, secretsOf } from './platform-transport';
import type { RateBudget } from './rate-budget';
import { defaultRetryPolicy, parseRetryAfterMs } from './retry-policy';
import type { RetryPolicy } from './retry-policy';

/**
 * The one HTTP client every connector uses to call its platform. Per attempt: take a turn in the
 * connection's rate budget (platform-budget.ts), send with a timeout and classify the outcome
 * (platform-transport.ts: Node's global `fetch`, TLS 1.2 or later), and let the retry policy decide
 * what happens next (platform-retry.ts).
 */

export type { HttpMethod, PlatformAuth, PlatformCall, PlatformRequest, PlatformResponse, QueryValue } from './platform-request';
export type { ClientPace } from './platform-budget';
export { authorizationHeader, checkedBaseUrl, encodeQuery, parseJsonBody, requestUrl } from './platform-transport';

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

// ---- process-wide call counts, read by the benchmarks ----

const callCounts = new Map<string, number>();

/** HTTP attempts made by this process so far, by platform. */
export function platformCallCounts(): Record<string, number> {
  return Object.fromEntries(callCounts);
}

export function resetPlatformCallCounts(): void {
  callCounts.clear();
}

// ---- the client ----

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const base = checkedBaseUrl(options.baseUrl, options.allowInsecure ?? false);
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry };
  const send = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const { platform } = options;
  const headerSettings = { platform, authorization: authorizationHeader(options.auth), userAgent: options.userAgent, idempotencyHeader: options.idempotencyHeader };
  const party = { platform, knownSecrets: secretsOf(options.auth) };
  const budgets = clientBudgets(options.rateBudget, options.endpointBudget);

  async function request<T = unknown>(request: PlatformRequest<T>): Promise<PlatformResponse<T>> {
    const url = requestUrl(base, request.path, request.query);
    const init = { method: request.method, headers: requestHeaders(request, headerSettings), body: requestBody(request) };
    const idempotent = isIdempotent(request);
    const path = request.path.split('?')[0] ?? '';
    const startedAt = now();
    let invalidResponses = 0;
    const budget = budgets.forRequest(request.method, path);

    for (let attempt = 1; ; attempt++) {
      if (request.signal?.aborted) throw abandoned(request.signal);
      // The endpoint's turn first: the connection's is then taken when the request can go.
      await budget.endpoint?.take(request.cost);
      await budget.connection.take(request.cost);
      // The last attempt gets no longer than the deadline leaves, so a slow platform cannot stretch it.
      const remainingMs = Math.max(1, policy.deadlineMs - (now() - startedAt));
      const timeoutMs = Math.min(request.timeoutMs ?? options.timeoutMs ?? 10_000, remainingMs);
      const attemptStartedAt = now();
      // One X-Ray subsegment per attempt when tracing is on: the path's shape only, never the URL.
      const result = await platformCallSegment(platform, { method: request.method, path, attempt }, async (annotate) => {
        const answer = await attemptOnce(send, url, init, timeoutMs, request.signal);
        annotate('outcome', answer.kind === 'ok' || answer.kind === 'invalid_response' || answer.kind === 'status' ? answer.status : answer.kind);
        return answer;
      });

      const status = result.kind === 'timeout' || result.kind === 'network' ? undefined : result.status;
      const outcome = result.kind === 'ok' ? 'ok' : result.kind === 'status' ? errorKindForStatus(result.status) : result.kind;
      callCounts.set(platform, (callCounts.get(platform) ?? 0) + 1);
      if (status === 429) recordMetric.platformThrottled(platform);
      if (attempt > 1) recordMetric.platformRetried(platform);
      options.onCall?.({ platform, method: request.method, path, status, outcome, attempt, durationMs: now() - attemptStartedAt });

      if (result.kind === 'ok') {
        budget.succeeded(now() - attemptStartedAt);
        const body = validated(result.body, result.status, request, attempt, platform);
        return { status: result.status, headers: result.headers, body, attempts: attempt };
      }
      if (result.kind === 'invalid_response') invalidResponses++;
      if (result.kind === 'status' && result.status === 429) budget.throttled(parseRetryAfterMs(result.headers.get('retry-after'), now()));

      const next = afterFailedAttempt(result, request, party, { attempt, elapsedMs: now() - startedAt, invalidResponses, idempotent, nowMs: now() }, policy, random);
      if (!next.retry) throw next.error;
      await sleep(next.delayMs);
    }
  }

  return { platform, request, pace: budgets.pace };
}
