import type { ConnectionProblem } from '../connections/connector-platform';
import { PlatformError, maskSecrets } from '../http/platform-error';
import { IDENTITY_TOKEN_PATH, IdentitySetupError } from '../identity/identity-client';
import { identityProblem } from '../identity/identity-problems';

/** Test Connection found the integration user without the Messaging User permission set license. */
export class MissingMessagingLicenseError extends Error {
  override readonly name = 'MissingMessagingLicenseError';
  constructor() {
    super('the integration user has no Messaging User permission set license');
  }
}

const TRANSIENT_REMEDY = "Nothing to change: the gateway tries again on its own. If it lasts, check the messaging platform's status page.";

/**
 * Every messaging connector failure in the words of the spec's Errors table: sign-in refusals
 * through the identity service's mapping, a missing Messaging User license, an expired session.
 */
export function messagingProblem(error: unknown): ConnectionProblem {
  if (error instanceof IdentitySetupError) {
    return {
      health: 'needs_reconnect',
      reason: `The messaging connection cannot be used as stored: ${maskSecrets(error.message)}.`,
      remedy: 'Reconnect the messaging connection with its client id, client secret and username, and the private key that matches the uploaded certificate.',
    };
  }
  if (error instanceof MissingMessagingLicenseError) {
    return {
      health: 'needs_reconnect',
      reason: 'The integration user has no Messaging User permission set license: conversation creation would fail.',
      remedy: 'Assign the Messaging User permission set license (and API Enabled) to the integration user, then test again.',
    };
  }
  if (!(error instanceof PlatformError)) {
    return { health: 'degraded', reason: 'An unexpected error stopped work on the messaging connection.', remedy: 'The gateway tries again on its own; contact support if it lasts.' };
  }
  const withMessage = (problem: ConnectionProblem): ConnectionProblem => (error.platformMessage ? { ...problem, platformMessage: maskSecrets(error.platformMessage) } : problem);
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  switch (error.kind) {
    case 'rate_limited':
      return withMessage({ health: 'degraded', reason: `The messaging platform is limiting the gateway's requests${status}.`, remedy: 'The gateway backs off and tries again; its calls count toward the org\'s daily API limit.' });
    case 'unavailable':
    case 'timeout':
    case 'network':
    case 'invalid_response':
      return withMessage({ health: 'degraded', reason: `The messaging platform could not be reached or answered unusably${status}.`, remedy: TRANSIENT_REMEDY });
    default:
      break;
  }
  if (error.path === IDENTITY_TOKEN_PATH) return withMessage(identityProblem(error.platformCode, error.platformMessage ?? ''));
  if (error.kind === 'permission' || /messaging user/i.test(error.platformMessage ?? '')) {
    return withMessage({
      health: 'needs_reconnect',
      reason: `The integration user may not use the messaging API${status}: conversation creation fails without the Messaging User permission set license.`,
      remedy: 'Assign the Messaging User permission set license (and API Enabled) to the integration user, then test again.',
    });
  }
  if (error.kind === 'auth') {
    return withMessage({
      health: 'needs_reconnect',
      reason: `The messaging platform refused the connection's token${status}, even after a new sign-in.`,
      remedy: 'Check that the integration user is active and the OAuth client is approved for it, then reconnect.',
    });
  }
  return withMessage({ health: 'degraded', reason: `The messaging platform refused the request${status}.`, remedy: TRANSIENT_REMEDY });
}
