import { PlatformError, maskSecrets } from '../http/platform-error';
import { BillingSetupError } from './client';

/**
 * Every billing failure in the words of the spec's Errors table, with what it means for the
 * connection's health: auth failures (401, 403, unknown site, unusable stored connection) need the
 * user to reconnect; rate limits, outages, timeouts, network errors and unreadable answers are
 * transient (degraded) and the gateway retries on its own.
 */

export type BillingHealth = 'degraded' | 'needs_reconnect';

export interface BillingProblem {
  health: BillingHealth;
  /** What happened, for the dashboard. */
  reason: string;
  /** What the user can do about it. */
  remedy: string;
  /** The platform's own message, already masked by PlatformError. */
  platformMessage?: string;
}

/**
 * What the connection says about itself, to sharpen a remedy. The API key is read for its
 * `test_` / `live_` prefix only, and masked if the platform ever echoed it.
 */
export interface BillingConnectionHints {
  siteName?: string;
  environment?: 'test' | 'live';
  apiKey?: string;
}

/** The mode a billing API key was issued for, from its prefix; undefined when it has none. */
export function billingKeyMode(apiKey: string): 'test' | 'live' | undefined {
  const mode = /^(test|live)_/.exec(apiKey.trim())?.[1];
  return mode === 'test' || mode === 'live' ? mode : undefined;
}

const MODE_WORDS = { test: 'Test Mode', live: 'Live Mode' } as const;

/** A key issued for the other mode than the Environment setting: it cannot work on this site. */
export function billingWrongModeWarning(hints: BillingConnectionHints): string | undefined {
  if (!hints.apiKey || !hints.environment) return undefined;
  const keyMode = billingKeyMode(hints.apiKey);
  if (!keyMode || keyMode === hints.environment) return undefined;
  return `The API key is a ${keyMode} key but Environment is ${MODE_WORDS[hints.environment]}: use a key of the same site and mode.`;
}

/** Test sites are conventionally `<site>-test`; a hint worth giving when a site is not found. */
function siteNameHint(hints: BillingConnectionHints): string | undefined {
  if (!hints.siteName) return undefined;
  if (hints.environment === 'test' && !hints.siteName.endsWith('-test')) {
    return `Test sites are usually named <site>-test (e.g. ${hints.siteName}-test).`;
  }
  if (hints.environment === 'live' && hints.siteName.endsWith('-test')) {
    return `"${hints.siteName}" looks like a test site but Environment is Live Mode.`;
  }
  return undefined;
}

const join = (...parts: Array<string | undefined>): string => parts.filter((part) => part).join(' ');

const TRANSIENT_REMEDY =
  'Nothing to change: the gateway tries again on its own and keeps the data it already has. If it lasts, check the billing platform\'s status page.';

/** A list path (`/api/v2/customers`) as opposed to one record's (`/api/v2/subscriptions/sub_1`). */
const isListPath = (path: string): boolean => /^\/api\/v2\/[a-z_]+\/?$/.test(path);

function fromPlatformError(error: PlatformError, hints: BillingConnectionHints): BillingProblem {
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  switch (error.kind) {
    case 'auth':
      return {
        health: 'needs_reconnect',
        reason: `The billing platform rejected the API key${status}.`,
        remedy: join('Verify the API key, or recreate it in the billing site\'s API keys settings, then reconnect.', billingWrongModeWarning(hints)),
      };
    case 'permission':
      return {
        health: 'needs_reconnect',
        reason: `The API key is not allowed to read this data${status}: a permission error. Publishable keys are for front ends and cannot read it.`,
        remedy: 'Use a read-only key (preferred) or a full-access key, then reconnect.',
      };
    case 'not_found':
      if (error.platformCode === 'site_not_found' || isListPath(error.path)) {
        return {
          health: 'needs_reconnect',
          reason: `No billing site answers at this site name${status}, so no data can be read.`,
          remedy: join(
            'Check the site name: it is the subdomain of your billing site address (for https://acme-test.chargebee.com enter acme-test).',
            siteNameHint(hints),
          ),
        };
      }
      return {
        health: 'degraded',
        reason: `A record the gateway asked the billing platform for does not exist${status}.`,
        remedy: 'Nothing to change if it was deleted: the next sync updates the stored data.',
      };
    case 'rate_limited':
      return {
        health: 'degraded',
        reason: `The billing platform is limiting the gateway's requests${status}.`,
        remedy:
          'The gateway already pages through data and backs off exponentially, and will try again. If this keeps happening, reduce the sync frequency or raise the API limit of your billing plan.',
      };
    case 'unavailable':
      return { health: 'degraded', reason: `The billing platform had a temporary problem${status}.`, remedy: TRANSIENT_REMEDY };
    case 'timeout':
      return { health: 'degraded', reason: 'The billing platform did not answer in time.', remedy: TRANSIENT_REMEDY };
    case 'network':
      return {
        health: 'degraded',
        reason: 'The gateway could not reach the billing platform (the connection failed).',
        remedy: 'Usually temporary: the gateway tries again on its own. If it lasts, check the site name and the billing platform\'s status page.',
      };
    case 'invalid_response':
      return {
        health: 'degraded',
        // The reason is the gateway's own wording ("body is not JSON (text/html, 48 bytes)"): no data, no secret.
        reason: `The billing platform's answer could not be used${error.reason ? `: ${error.reason}` : ''}.`,
        remedy:
          'Usually temporary: the gateway tries again and leaves the stored data untouched. If it lasts, check that the site name points to your billing site (an HTML page often comes from a proxy or a sign-in page).',
      };
    case 'invalid_request':
      return {
        health: 'degraded',
        reason: `The billing platform refused the gateway's request${status}.`,
        remedy: 'This is likely a gateway problem or a site setting the gateway does not support yet: contact support with the platform\'s message.',
      };
  }
}

/** The problem behind any failure of a billing call, for Test Connection, sync jobs and the dashboard. Never holds a secret. */
export function billingProblem(error: unknown, hints: BillingConnectionHints = {}): BillingProblem {
  if (error instanceof PlatformError) {
    const problem = fromPlatformError(error, hints);
    if (!error.platformMessage) return problem;
    return { ...problem, platformMessage: maskSecrets(error.platformMessage, hints.apiKey ? [hints.apiKey] : []) };
  }
  if (error instanceof BillingSetupError) {
    return {
      health: 'needs_reconnect',
      reason: `The billing connection cannot be used as stored: ${maskSecrets(error.message, hints.apiKey ? [hints.apiKey] : [])}.`,
      remedy: 'Reconnect the billing connection with its site name and API key.',
    };
  }
  // Anything else is the gateway's own fault; its message is not shown (it could quote data).
  return {
    health: 'degraded',
    reason: 'An unexpected error stopped work on the billing connection.',
    remedy: 'The gateway tries again on its own; contact support if it lasts.',
  };
}
