import type { HttpRequest } from './http';
import { problems } from './problem';

/** Who is calling the gateway's API, from the verified sign-in token's claims. */
export interface Caller {
  subject: string;
  /** The account a dashboard user belongs to (Cognito custom attribute `custom:account_id`). */
  accountId?: string;
  /** Operators (support) can switch accounts' Integrations on and act on any account. */
  operator: boolean;
  /** A playbook calling with an account's API key (the `/api/v1/playbook` routes). */
  playbook?: boolean;
}

export const OPERATOR_GROUP = 'operator';

/**
 * API Gateway's JWT authorizer hands array claims over as strings such as "[operator admins]",
 * and the local sign-in as real arrays: accept both.
 */
function groupsOf(claim: unknown): string[] {
  if (Array.isArray(claim)) return claim.map(String);
  if (typeof claim !== 'string') return [];
  return claim.replace(/^\[|\]$/g, '').split(/[\s,]+/).filter(Boolean);
}

export function callerOf(request: HttpRequest): Caller {
  const claims = request.claims;
  if (!claims || typeof claims.sub !== 'string') throw problems.unauthorized('Sign in to use the gateway API.');
  // The authorizer accepts any token of the user pool's client; only the ID token names the
  // account and groups the gateway acts on (an access token has no custom attributes).
  if (claims.token_use !== 'id') throw problems.unauthorized('Send the ID token of your sign-in, not another kind of token.');
  const accountId = claims['custom:account_id'];
  return {
    subject: claims.sub,
    ...(typeof accountId === 'string' && accountId ? { accountId } : {}),
    operator: groupsOf(claims['cognito:groups']).includes(OPERATOR_GROUP),
  };
}

export function assertAccountAccess(caller: Caller, accountId: string): void {
  if (caller.operator || caller.accountId === accountId) return;
  // 404 rather than 403: whether another account exists is not the caller's business.
  throw problems.notFound(`No account ${accountId}.`);
}

/** The account of a playbook calling with its API key (the router lets only verified keys through to playbook routes). */
export function playbookAccountOf(caller: Caller): string {
  if (!caller.playbook || !caller.accountId) throw problems.unauthorized('Send a playbook API key: Authorization: Bearer igk_...');
  return caller.accountId;
}

export function assertOperator(caller: Caller): void {
  if (!caller.operator) throw problems.forbidden('Only an operator can do this.');
}
