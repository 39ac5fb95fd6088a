import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  decideRetry,
  parseRetryAfterMs,
  type AttemptContext,
  type AttemptOutcome,
  type RetryPolicy,
} from '../../shared/http/retry-policy';

const policy: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
  maxRetryAfterMs: 10_000,
  deadlineMs: 30_000,
};

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

function context(overrides: Partial<AttemptContext> = {}): AttemptContext {
  return { attempt: 1, elapsedMs: 0, invalidResponses: 0, idempotent: true, nowMs: NOW, ...overrides };
}

function response(status: number, headers: Record<string, string> = {}): AttemptOutcome {
  return { kind: 'response', status, headers: new Headers(headers) };
}

const zero = () => 0;
const almostOne = () => 0.999;

describe('backoffDelayMs (full jitter)', () => {
  it('is 0 when the random source gives 0', () => {
    for (let retry = 0; retry < 10; retry++) expect(backoffDelayMs(retry, policy, zero)).toBe(0);
  });

  it('approaches base * 2^retry when the random source gives 0.999', () => {
    expect(backoffDelayMs(0, policy, almostOne)).toBe(Math.floor(0.999 * 101)); // ceiling 100
    expect(backoffDelayMs(1, policy, almostOne)).toBe(Math.floor(0.999 * 201)); // ceiling 200
    expect(backoffDelayMs(3, policy, almostOne)).toBe(Math.floor(0.999 * 801)); // ceiling 800
  });

  it('never exceeds the cap, however many retries', () => {
    expect(backoffDelayMs(4, policy, almostOne)).toBe(Math.floor(0.999 * 1001)); // 1600 capped at 1000
    expect(backoffDelayMs(60, policy, almostOne)).toBeLessThanOrEqual(1_000);
    expect(backoffDelayMs(60, policy, () => 1)).toBeLessThanOrEqual(1_000); // a random source that misbehaves
  });

  it('property: every delay is a whole number within [0, cap]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (retry, base, cap, r) => {
          const delay = backoffDelayMs(retry, { baseDelayMs: base, maxDelayMs: cap }, () => r);
          return Number.isInteger(delay) && delay >= 0 && delay <= cap && delay <= base * 2 ** retry;
        },
      ),
    );
  });
});

describe('parseRetryAfterMs', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfterMs('1', NOW)).toBe(1_000);
    expect(parseRetryAfterMs(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfterMs('0', NOW)).toBe(0);
    expect(parseRetryAfterMs('1.5', NOW)).toBe(1_500);
  });

  it('reads an HTTP-date relative to now', () => {
    const inThirtySeconds = new Date(NOW + 30_000).toUTCString();
    expect(parseRetryAfterMs(inThirtySeconds, NOW)).toBe(30_000);
  });

  it('treats a date in the past as 0 and nonsense as absent', () => {
    expect(parseRetryAfterMs(new Date(NOW - 60_000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfterMs('soon', NOW)).toBeUndefined();
    expect(parseRetryAfterMs('-5', NOW)).toBeUndefined();
    expect(parseRetryAfterMs('', NOW)).toBeUndefined();
    expect(parseRetryAfterMs(null, NOW)).toBeUndefined();
  });
});

describe('decideRetry', () => {
  it.each([429, 500, 502, 503, 504])('retries %i', (status) => {
    const decision = decideRetry(response(status), context(), policy, almostOne);
    expect(decision.retry).toBe(true);
  });

  it.each([400, 401, 403, 404, 409, 422])('never retries %i', (status) => {
    const decision = decideRetry(response(status), context(), policy, zero);
    expect(decision).toEqual({ retry: false, reason: 'not_retryable' });
  });

  it('retries timeouts and network errors for idempotent requests', () => {
    expect(decideRetry({ kind: 'timeout' }, context(), policy, zero).retry).toBe(true);
    expect(decideRetry({ kind: 'network' }, context(), policy, zero).retry).toBe(true);
  });

  it('does not resend a non-idempotent request after an uncertain failure, but does after 429', () => {
    const once = context({ idempotent: false });
    expect(decideRetry({ kind: 'timeout' }, once, policy, zero).retry).toBe(false);
    expect(decideRetry({ kind: 'network' }, once, policy, zero).retry).toBe(false);
    expect(decideRetry(response(502), once, policy, zero).retry).toBe(false);
    expect(decideRetry(response(429), once, policy, zero).retry).toBe(true);
  });

  it('uses the jittered backoff of the retry number', () => {
    const first = decideRetry(response(503), context({ attempt: 1 }), policy, almostOne);
    const third = decideRetry(response(503), context({ attempt: 3 }), policy, almostOne);
    expect(first).toEqual({ retry: true, delayMs: backoffDelayMs(0, policy, almostOne) });
    expect(third).toEqual({ retry: true, delayMs: backoffDelayMs(2, policy, almostOne) });
  });

  it('waits at least Retry-After (seconds)', () => {
    const decision = decideRetry(response(503, { 'retry-after': '3' }), context(), policy, zero);
    expect(decision).toEqual({ retry: true, delayMs: 3_000, retryAfterMs: 3_000 });
  });

  it('waits at least Retry-After (HTTP-date)', () => {
    const at = new Date(NOW + 5_000).toUTCString();
    const decision = decideRetry(response(429, { 'retry-after': at }), context(), policy, zero);
    expect(decision).toEqual({ retry: true, delayMs: 5_000, retryAfterMs: 5_000 });
  });

  it('keeps the jittered delay when it is longer than Retry-After', () => {
    const decision = decideRetry(response(429, { 'retry-after': '0' }), context({ attempt: 4 }), policy, almostOne);
    expect(decision).toEqual({ retry: true, delayMs: backoffDelayMs(3, policy, almostOne), retryAfterMs: 0 });
  });

  it('gives up, retryably, when Retry-After is longer than the caller may sleep', () => {
    const decision = decideRetry(response(429, { 'retry-after': '60' }), context(), policy, zero);
    expect(decision).toEqual({ retry: false, reason: 'retry_after_too_long', retryAfterMs: 60_000 });
  });

  it('honours Stripe-Should-Retry: false on a retryable status', () => {
    const decision = decideRetry(response(500, { 'stripe-should-retry': 'false' }), context(), policy, zero);
    expect(decision).toEqual({ retry: false, reason: 'platform_said_no' });
  });

  it('honours Stripe-Should-Retry: true on a status it would not retry', () => {
    const decision = decideRetry(response(409, { 'stripe-should-retry': 'true' }), context(), policy, zero);
    expect(decision.retry).toBe(true);
  });

  it('stops at the maximum attempt count', () => {
    expect(decideRetry(response(503), context({ attempt: 4 }), policy, zero).retry).toBe(true);
    expect(decideRetry(response(503), context({ attempt: 5 }), policy, zero)).toEqual({
      retry: false,
      reason: 'attempts_exhausted',
    });
  });

  it('stops when the next wait would pass the deadline', () => {
    const late = context({ elapsedMs: 29_500 });
    expect(decideRetry(response(503, { 'retry-after': '1' }), late, policy, zero)).toEqual({
      retry: false,
      reason: 'deadline',
      retryAfterMs: 1_000,
    });
    expect(decideRetry(response(503), late, policy, zero).retry).toBe(true); // a 0 ms wait still fits
  });

  it('retries an unusable 2xx once, not twice', () => {
    expect(decideRetry({ kind: 'invalid_response' }, context({ invalidResponses: 1 }), policy, zero).retry).toBe(true);
    expect(decideRetry({ kind: 'invalid_response' }, context({ attempt: 2, invalidResponses: 2 }), policy, zero)).toEqual({
      retry: false,
      reason: 'not_retryable',
    });
    // A request that changes something (a POST without an idempotency key) is never resent on one.
    expect(decideRetry({ kind: 'invalid_response' }, context({ invalidResponses: 1, idempotent: false }), policy, zero).retry).toBe(false);
  });
});
