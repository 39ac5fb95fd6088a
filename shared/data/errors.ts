import type { ConnectionProblem } from '../connections/connector-platform';
import { PlatformError, maskSecrets } from '../http/platform-error';
import { REDACTED } from '../log/redaction';
import { IDENTITY_TOKEN_PATH } from '../identity/identity-client';
import { identityProblem } from '../identity/identity-problems';
import { DATA_TOKEN_EXCHANGE_PATH, DataSetupError } from './auth';

/**
 * Every data connector failure in the words of the spec's Errors table. Sign-in problems (the JWT,
 * the OAuth client, the user's approval or permission set, a missing scope) only the user can fix:
 * needs_reconnect. Rate limits, outages, timeouts and unreadable answers are transient: degraded.
 * A query the platform refuses (bad SQL, unknown object) is degraded too: the connection works.
 */

export type DataProblem = ConnectionProblem;

const TRANSIENT_REMEDY =
  "Nothing to change: the gateway tries again on its own and keeps the data it already has. If it lasts, check the data platform's status page.";

/** The scope a data API said it needs (`cdp_query_api`...), if it named one. */
function missingScope(message: string | undefined): string | undefined {
  return message ? /\b(cdp_[a-z_]+_api)\b/i.exec(message)?.[1] : undefined;
}

function fromPlatformError(error: PlatformError): DataProblem {
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  const message = error.platformMessage ?? '';

  // Transient failures look the same at every step.
  switch (error.kind) {
    case 'rate_limited':
      return {
        health: 'degraded',
        reason: `The data platform is limiting the gateway's requests${status}.`,
        remedy: 'The gateway backs off and tries again. If this keeps happening, reduce the sync frequency or move to a higher data platform tier.',
      };
    case 'unavailable':
      return { health: 'degraded', reason: `The data platform had a temporary problem${status}.`, remedy: TRANSIENT_REMEDY };
    case 'timeout':
      return { health: 'degraded', reason: 'The data platform did not answer in time.', remedy: TRANSIENT_REMEDY };
    case 'network':
      return { health: 'degraded', reason: 'The gateway could not reach the data platform (the connection failed).', remedy: TRANSIENT_REMEDY };
    case 'invalid_response':
      return {
        health: 'degraded',
        reason: `The data platform's answer could not be used${error.reason ? `: ${error.reason}` : ''}.`,
        remedy: 'Usually temporary: the gateway tries again and leaves the stored data untouched. Contact support if it lasts.',
      };
    default:
      break;
  }

  if (error.path === IDENTITY_TOKEN_PATH) return identityProblem(error.platformCode, message);

  if (error.path === DATA_TOKEN_EXCHANGE_PATH) {
    if (error.kind === 'auth') {
      return {
        health: 'needs_reconnect',
        reason: `The data platform refused the identity token in the token exchange${status}.`,
        remedy: 'Test the connection again; if it keeps failing, check that the OAuth client and the integration user are active, then reconnect.',
      };
    }
    return {
      health: 'needs_reconnect',
      reason: `The data platform token exchange failed${status}: the integration user lacks the data platform license or permission set.`,
      remedy: 'Assign the data platform admin permission set to the integration user (and give it access to the data space), then test again.',
    };
  }

  const scope = missingScope(message);
  if (scope && (error.kind === 'permission' || error.kind === 'auth' || error.kind === 'invalid_request')) {
    return {
      health: 'needs_reconnect',
      reason: `The OAuth client lacks the '${scope}' scope this call needs${status}.`,
      remedy: `Add the ${scope} scope to the OAuth client's selected OAuth scopes, then test again.`,
    };
  }

  switch (error.kind) {
    case 'auth':
      return {
        health: 'needs_reconnect',
        reason: `The data platform refused a new token${status}, even after the gateway signed in again.`,
        remedy: 'Check that the integration user is active and holds the data platform permission set, then reconnect.',
      };
    case 'permission':
      return {
        health: 'needs_reconnect',
        reason: `The integration user may not use this data platform API${status}.`,
        remedy: 'Give the OAuth client the cdp_query_api, cdp_profile_api and cdp_ingest_api scopes, and the user the data platform admin permission set and data space access.',
      };
    case 'invalid_request':
    case 'not_found':
      return {
        health: 'degraded',
        reason: `The data platform refused the query or request${status}: wrong SQL syntax or object name.`,
        remedy: 'Verify the object names (data model objects end in __dlm, e.g. UnifiedIndividual__dlm) and field names in your data space.',
      };
    default:
      return { health: 'degraded', reason: `The data platform call failed${status}.`, remedy: TRANSIENT_REMEDY };
  }
}

/**
 * The identity service's access tokens look like `<org id>!<opaque>`: the `!` escapes the shared
 * Bearer shape, so they get their own net here (the tokens the gateway fetched are registered too).
 */
const SESSION_ID_SHAPE = /\b00D[A-Za-z0-9]{10,16}![A-Za-z0-9._~+/=-]{8,}/g;

function shownMessage(message: string): string {
  return maskSecrets(message.replace(SESSION_ID_SHAPE, REDACTED));
}

/** The problem behind any data connector failure, for Test Connection, syncs and the dashboard. Never holds a secret. */
export function dataProblem(error: unknown): DataProblem {
  if (error instanceof PlatformError) {
    const problem = fromPlatformError(error);
    return error.platformMessage ? { ...problem, platformMessage: shownMessage(error.platformMessage) } : problem;
  }
  if (error instanceof DataSetupError) {
    return {
      health: 'needs_reconnect',
      reason: `The data connection cannot be used as stored: ${shownMessage(error.message)}.`,
      remedy: 'Reconnect the data connection with its client id, username and the private key that matches the uploaded certificate.',
    };
  }
  // Anything else is the gateway's own fault; its message is not shown (it could quote data).
  return {
    health: 'degraded',
    reason: 'An unexpected error stopped work on the data connection.',
    remedy: 'The gateway tries again on its own; contact support if it lasts.',
  };
}
