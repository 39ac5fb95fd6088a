import { PlatformError } from '../http/platform-error';
import { redactText } from '../log/redaction';
import { FullSyncNeeded } from '../sync/sync-source';
import { EventWindowExceeded } from './sync';

/**
 * Every failure of the payment connector in words a user can act on: the spec's Errors table
 * remedies, and the connection health it implies. Auth failures (401, 403) need the user to
 * reconnect; rate limits, outages, timeouts and unreadable answers are transient (degraded).
 */

export type PaymentHealth = 'degraded' | 'needs_reconnect';

export interface PaymentProblem {
  health: PaymentHealth;
  /** What happened, without secrets. */
  reason: string;
  /** What the user can do about it (the spec's remedy). */
  remedy: string;
  /** The platform's own message, already masked by PlatformError. */
  platformMessage?: string;
}

/** The spec's remedies (Errors table), in full sentences. */
export const PAYMENT_REMEDIES = {
  invalidKey:
    'Verify the API key, or recreate it in the payment platform dashboard (Developers > API keys), then reconnect with the new key.',
  readAccess:
    'Use a key with read access: a secret key, or a restricted key with Read permission on Customers, Subscriptions, Invoices, PaymentIntents, Charges and Events. A key\'s permissions are set on the platform; then reconnect with it.',
  rateLimited:
    'Too many requests: reduce the sync frequency. The gateway already pages with limit 100 and backs off exponentially; other applications using the same payment account share its limit.',
  singleConnection:
    'Only one platform may have read/write access to a payment account. Disconnect the other platform there, or connect with a restricted key that only reads.',
  pagination:
    'The gateway pages with limit up to 100 and loops with starting_after; the platform refused a page request. If this persists, report it to support with the platform message.',
  wrongMode:
    'The key is for the other mode (live or test) than the data: connect with a key of the matching mode (sk_live_/rk_live_ for live data, sk_test_/rk_test_ for test data).',
  unavailable:
    'The payment platform is unavailable or did not answer in time. The gateway tries again on the next sync; check the platform status page if it persists.',
  unreadable:
    'Nothing was stored from that answer. The gateway tries again on the next sync; if it persists, check that the gateway reaches the payment platform directly, with no proxy or login page in between.',
  eventWindow: 'Nothing to do: the gateway runs a full sync instead of an incremental one.',
  unexpected: 'The gateway tries again on the next sync. If this persists, contact support.',
} as const;

const SINGLE_CONNECTION = /already connected|another platform|only one platform/i;
/** The platform's hint when the id exists in the other mode than the key's. */
const OTHER_MODE = /exists in (live|test) mode, but a (test|live) mode key/i;

/** The platform's words when a page request is refused (`limit` above 100, a bad cursor). */
const PAGING_COMPLAINT = /\blimit\b|starting_after|ending_before|less than or equal to 100/i;

/** `customers` from `/v1/customers/cus_1`. */
function resourceOf(path: string): string {
  return path.split('/').filter(Boolean)[1]?.replace(/_/g, ' ') ?? 'this resource';
}

function problem(health: PaymentHealth, reason: string, remedy: string, error?: PlatformError): PaymentProblem {
  const said = error?.platformMessage;
  return { health, reason, remedy, ...(said ? { platformMessage: redactText(said) } : {}) };
}

export function paymentProblem(error: unknown): PaymentProblem {
  if (error instanceof EventWindowExceeded) {
    return problem('degraded', 'The last sync is more than 30 days old, and the payment platform keeps events for 30 days only.', PAYMENT_REMEDIES.eventWindow);
  }
  if (error instanceof FullSyncNeeded) {
    return problem('degraded', 'Too much changed since the last sync to catch up from events.', PAYMENT_REMEDIES.eventWindow);
  }
  if (!(error instanceof PlatformError)) {
    // Not the platform's words: nothing of its message is passed on.
    return problem('degraded', 'An unexpected error occurred while talking to the payment platform.', PAYMENT_REMEDIES.unexpected);
  }

  const message = error.platformMessage ?? '';
  if (SINGLE_CONNECTION.test(message)) {
    return problem('needs_reconnect', 'The payment account is already connected to another platform with read/write access.', PAYMENT_REMEDIES.singleConnection, error);
  }

  switch (error.kind) {
    case 'auth':
      return problem('needs_reconnect', 'The payment platform rejected the API key (HTTP 401): it is wrong, expired or revoked.', PAYMENT_REMEDIES.invalidKey, error);
    case 'permission':
      if (error.platformCode === 'secret_key_required') {
        return problem('needs_reconnect', 'A publishable key cannot read data on the server (HTTP 403).', PAYMENT_REMEDIES.readAccess, error);
      }
      return problem('needs_reconnect', `The API key may not read ${resourceOf(error.path)} (HTTP 403), so no data is returned.`, PAYMENT_REMEDIES.readAccess, error);
    case 'rate_limited':
      return problem('degraded', 'The payment platform is rate limiting this account (HTTP 429).', PAYMENT_REMEDIES.rateLimited, error);
    case 'unavailable':
      return problem('degraded', `The payment platform answered with a server error (HTTP ${error.status ?? '5xx'}).`, PAYMENT_REMEDIES.unavailable, error);
    case 'timeout':
      return problem('degraded', 'The payment platform did not answer in time.', PAYMENT_REMEDIES.unavailable, error);
    case 'network':
      return problem('degraded', 'The connection to the payment platform failed.', PAYMENT_REMEDIES.unavailable, error);
    case 'invalid_response':
      return problem('degraded', `The payment platform's answer could not be read${error.reason ? ` (${error.reason})` : ''}.`, PAYMENT_REMEDIES.unreadable, error);
    case 'not_found':
      if (OTHER_MODE.test(message)) {
        return problem('needs_reconnect', 'The key and the data are in different modes (live and test).', PAYMENT_REMEDIES.wrongMode, error);
      }
      return problem('degraded', `The payment platform does not know ${error.path} (HTTP 404).`, PAYMENT_REMEDIES.unexpected, error);
    case 'invalid_request':
      if (PAGING_COMPLAINT.test(message)) {
        return problem('degraded', `The payment platform refused a page request (HTTP ${error.status ?? 400}).`, PAYMENT_REMEDIES.pagination, error);
      }
      return problem('degraded', `The payment platform refused the gateway's request (HTTP ${error.status ?? 400}).`, PAYMENT_REMEDIES.unexpected, error);
  }
}
