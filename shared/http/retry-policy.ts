/**
 * When to try a platform call again, and how long to wait first. Pure: the clock and the random
 * source come in as arguments, so every decision can be tested without servers or timers.
 *
 * Rules (shared by all four platforms):
 * - retry 429, 500, 502, 503, 504, timeouts and network errors; never any other 4xx;
 * - wait with exponential backoff and FULL jitter: random(0, min(cap, base * 2^retry));
 * - a `Retry-After` (seconds or HTTP-date) is a floor on the wait; if it is longer than
 *   `maxRetryAfterMs`, give up at once with a retryable error rather than sleep for minutes
 *   inside a Lambda: the sync job is requeued and resumes from its checkpoint;
 * - the payment platform's `Stripe-Should-Retry` header overrides the status (`false`: stop, `true`: retry);
 * - a 2xx the gateway cannot parse is retried once, in case it was a proxy's hiccup, then reported;
 * - stop after `maxAttempts` or when the next wait would pass the total deadline.
 */

export interface RetryPolicy {
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  /** Backoff base: the first retry waits up to this long. */
  baseDelayMs: number;
  /** Backoff cap: no computed wait is longer than this. */
  maxDelayMs: number;
  /** The longest `Retry-After` the caller is willing to sleep through. */
  maxRetryAfterMs: number;
  /** No retry starts later than this after the first attempt began. */
  deadlineMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 20_000,
  deadlineMs: 60_000,
};

/** Just what the policy reads from response headers; `Headers` fits. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** How one attempt ended, as far as retrying is concerned. */
export type AttemptOutcome =
  | { kind: 'response'; status: number; headers: HeaderReader }
  | { kind: 'timeout' }
  | { kind: 'network' }
  /** a 2xx whose body could not be used (HTML, truncated JSON) */
  | { kind: 'invalid_response' };

export interface AttemptContext {
  /** Attempts made so far, this one included (1 after the first). */
  attempt: number;
  /** Milliseconds since the first attempt began. */
  elapsedMs: number;
  /** Unusable 2xx answers so far, this one included. */
  invalidResponses: number;
  /**
   * Whether sending the request twice is harmless (GET, or a POST carrying an idempotency key).
   * A non-idempotent request is retried only when the platform certainly did not act on it (429);
   * a timeout or a 502 may come after the platform already did the work.
   */
  idempotent: boolean;
  /** Current time in ms since the epoch, for `Retry-After` given as an HTTP-date. */
  nowMs: number;
}

export type GiveUpReason =
  | 'not_retryable' // a 4xx other than 429, or a non-idempotent request after an uncertain failure
  | 'platform_said_no' // Stripe-Should-Retry: false
  | 'attempts_exhausted'
  | 'deadline' // the next wait would end past the deadline
  | 'retry_after_too_long'; // the platform asked for a wait longer than maxRetryAfterMs

export type RetryDecision =
  | { retry: true; delayMs: number; retryAfterMs?: number }
  | { retry: false; reason: GiveUpReason; retryAfterMs?: number };

const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/**
 * Full-jitter backoff for the retry numbered `retryIndex` (0 for the first retry):
 * a whole number of ms in [0, min(cap, base * 2^retryIndex)].
 * `random` returns [0, 1) like Math.random; anything outside is clamped.
 */
export function backoffDelayMs(
  retryIndex: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retryIndex));
  const r = Math.min(Math.max(random(), 0), 1 - Number.EPSILON);
  return Math.floor(r * (Math.max(0, ceiling) + 1));
}

/**
 * A `Retry-After` header in ms: delta-seconds ("120", "1.5") or an HTTP-date
 * ("Wed, 21 Oct 2015 07:28:00 GMT"). A date in the past means 0. Unreadable means absent.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  // An HTTP-date names its month; without this, Date.parse would read "-5" as a year.
  if (!/[A-Za-z]{3}/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** The payment platform's own hint: true / false, or undefined when absent. */
export function shouldRetryHint(headers: HeaderReader): boolean | undefined {
  const hint = headers.get('stripe-should-retry')?.trim().toLowerCase();
  if (hint === 'true') return true;
  if (hint === 'false') return false;
  return undefined;
}

/** Whether this kind of outcome is worth another attempt at all, before counting attempts and time. */
function outcomeIsRetryable(outcome: AttemptOutcome, context: AttemptContext): boolean | 'platform_said_no' {
  switch (outcome.kind) {
    case 'timeout':
    case 'network':
      return context.idempotent;
    case 'invalid_response':
      // Once: a proxy's error page may be a blip; the same garbage twice is the platform's answer.
      // Not for a request that changes something: the platform may have acted on it already.
      return context.idempotent && context.invalidResponses < 2;
    case 'response': {
      const hint = shouldRetryHint(outcome.headers);
      if (hint === false) return 'platform_said_no';
      if (hint === true) return true;
      if (outcome.status === 429) return true;
      return isRetryableStatus(outcome.status) && context.idempotent;
    }
  }
}

export function decideRetry(
  outcome: AttemptOutcome,
  context: AttemptContext,
  policy: RetryPolicy,
  random: () => number,
): RetryDecision {
  const retryAfterMs =
    outcome.kind === 'response' ? parseRetryAfterMs(outcome.headers.get('retry-after'), context.nowMs) : undefined;
  const withRetryAfter = retryAfterMs === undefined ? {} : { retryAfterMs };

  const retryable = outcomeIsRetryable(outcome, context);
  if (retryable === 'platform_said_no') return { retry: false, reason: 'platform_said_no', ...withRetryAfter };
  if (!retryable) return { retry: false, reason: 'not_retryable', ...withRetryAfter };
  if (context.attempt >= policy.maxAttempts) return { retry: false, reason: 'attempts_exhausted', ...withRetryAfter };
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxRetryAfterMs) {
    return { retry: false, reason: 'retry_after_too_long', retryAfterMs };
  }

  const jittered = backoffDelayMs(context.attempt - 1, policy, random);
  const delayMs = Math.max(jittered, retryAfterMs ?? 0);
  if (context.elapsedMs + delayMs > policy.deadlineMs) return { retry: false, reason: 'deadline', ...withRetryAfter };
  return { retry: true, delayMs, ...withRetryAfter };
}
