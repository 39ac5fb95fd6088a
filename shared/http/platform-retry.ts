import * as z from 'zod/mini';
import type { ConnectorName } from '../connectors';
import { PlatformError, errorKindForStatus, maskSecrets, platformErrorText } from './platform-error';
import type { PlatformRequest } from './platform-request';
import type { AttemptResult } from './platform-transport';
import { decideRetry } from './retry-policy';
import type { AttemptContext, AttemptOutcome, GiveUpReason, RetryPolicy } from './retry-policy';

/**
 * The platform client's retries: after an attempt that failed, whether to send it again and when
 * (the pure `decideRetry` of retry-policy.ts decides), or the PlatformError the request ends with.
 */

export function isIdempotent(request: PlatformRequest<unknown>): boolean {
  if (request.idempotent !== undefined) return request.idempotent;
  if (request.idempotencyKey) return true;
  return request.method === 'GET' || request.method === 'PUT' || request.method === 'DELETE';
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

/** Who is asking, for the error a request ends with. */
export interface RequestParty {
  platform: ConnectorName;
  /** The connection's credentials: never repeated in an error, whatever the platform's text says. */
  knownSecrets: string[];
}

/** The error a request ends with when its last attempt failed. */
export function failure(
  result: Exclude<AttemptResult, { kind: 'ok' }>,
  request: PlatformRequest<unknown>,
  party: RequestParty,
  attempts: number,
  giveUp: GiveUpReason,
  retryAfterMs: number | undefined,
): PlatformError {
  const common = { platform: party.platform, attempts, method: request.method, path: request.path.split('?')[0] ?? '', retryAfterMs };
  const because = GIVE_UP_WORDS[giveUp];
  switch (result.kind) {
    case 'timeout':
      return new PlatformError({ ...common, kind: 'timeout', retryable: true, reason: ['no complete answer in time', because].filter(Boolean).join(', ') });
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
        platformMessage: said.message === undefined ? undefined : maskSecrets(said.message, party.knownSecrets),
        platformCode: said.code === undefined ? undefined : maskSecrets(said.code, party.knownSecrets),
        retryable: (kind === 'rate_limited' || kind === 'unavailable') && giveUp !== 'platform_said_no',
        reason: because,
      });
    }
  }
}

/** After a failed attempt: wait `delayMs` and send it again, or end with `error`. */
export function afterFailedAttempt(
  result: Exclude<AttemptResult, { kind: 'ok' }>,
  request: PlatformRequest<unknown>,
  party: RequestParty,
  state: AttemptContext,
  policy: RetryPolicy,
  random: () => number,
): { retry: true; delayMs: number } | { retry: false; error: PlatformError } {
  const decision = decideRetry(toRetryOutcome(result), state, policy, random);
  if (!decision.retry) return { retry: false, error: failure(result, request, party, state.attempt, decision.reason, decision.retryAfterMs) };
  return { retry: true, delayMs: decision.delayMs };
}

/** A 2xx body checked against the request's schema; a mismatch ends the request (it would come back the same). */
export function validated<T>(body: unknown, status: number, request: PlatformRequest<T>, attempts: number, platform: ConnectorName): T {
  if (!request.schema) return body as T;
  const parsed = z.safeParse(request.schema, body);
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
