import type { ConnectionProblem } from '../connections/connector-platform';

/**
 * Every refusal the CRM's identity service gives (`{error, error_description}` on the token
 * endpoint, or `error` on the callback), in the words of the spec's Errors table. All of them are
 * for the user to fix, so the connection needs reconnecting; nothing retries them.
 */

export const KEY_MUST_MATCH =
  'The private key must match the certificate uploaded to the OAuth client (under "Use digital signatures"): reconnect with that key, or upload the certificate made from it.';

const APPROVE_USERS =
  'In the OAuth client\'s policies set Permitted Users to "Admin approved users are pre-authorized", and add the integration user\'s profile or permission set.';

/** What the connector's callback address is, for the remedies that name it. */
export interface IdentityContext {
  /** Which grant was refused: the platform's descriptions overlap between them. */
  grant?: 'jwt_bearer' | 'authorization_code' | 'refresh_token';
  /** The exact callback address to register on the OAuth client: `{base_url}/auth/crmdata/callback`. */
  callbackUrl?: string;
}

/**
 * The problem behind an identity-service refusal, by its error code and description. The
 * descriptions are the platform's own (as the OAuth 2.0 endpoints guide documents them, docs/platform-contracts.md); the fallback is the
 * spec's "invalid private key or claims" for a refused assertion.
 */
export function identityProblem(code: string | undefined, description: string, context: IdentityContext = {}): ConnectionProblem {
  const said = description.toLowerCase();
  const refused = (reason: string, remedy: string): ConnectionProblem => ({ health: 'needs_reconnect', reason, remedy });
  const callback = context.callbackUrl ? ` (${context.callbackUrl})` : '';

  if (code === 'redirect_uri_mismatch' || said.includes('redirect_uri')) {
    return refused(
      'The identity service refused the callback address: it is not the one registered on the OAuth client (invalid callback or OAuth configuration).',
      `Use the exact callback address${callback} as the OAuth client's Callback URL, then connect again.`,
    );
  }
  if (code === 'access_denied') {
    return refused('The sign-in was not approved on the platform (access denied).', `${APPROVE_USERS} Then connect again and approve the access.`);
  }
  if (code === 'invalid_scope' || said.includes('scope')) {
    return refused('The OAuth client does not allow a scope the gateway asks for.', "Add the scopes the gateway needs to the OAuth client's selected OAuth scopes (see docs/connections.md), then connect again.");
  }
  if (said.includes('kid not found') || said.includes('key id')) {
    return refused('The identity service has no certificate with the key id the JWT named (kid not found).', 'Re-upload the certificate to the OAuth client, then test again.');
  }
  if (said.includes("hasn't approved") || said.includes('not approved') || said.includes('not admin approved')) {
    return refused("The integration user is not approved for this OAuth client (user hasn't approved this consumer).", APPROVE_USERS);
  }
  if (said.includes('audience')) {
    return refused(
      'The identity service refused the JWT audience: the login URL does not match the org (invalid audience).',
      'Use the production login URL for a production org and the sandbox login URL for a sandbox: change Login URL and reconnect.',
    );
  }
  if (said.includes('certificate')) {
    return refused('The OAuth client has no certificate to check the JWT signature with (certificate not found).', 'Attach the certificate to the OAuth client under "Use digital signatures", then test again.');
  }
  if ((context.grant === 'refresh_token' && code === 'invalid_grant') || said.includes('refresh token') || said.includes('access/refresh') || said.includes('token revoked')) {
    return refused(
      "The platform no longer accepts the connection's refresh token: access was revoked on the platform side, or the token expired under the OAuth client's policy.",
      'Connect again (authorization code) to grant access anew; set the refresh token policy to "valid until revoked" to keep it.',
    );
  }
  if (context.grant === 'authorization_code' && (said.includes('authorization code') || said.includes('code verifier') || code === 'invalid_grant')) {
    return refused('The authorization was not completed: its code was already used, expired, or does not match this request.', 'Start Connect Account again and approve the access within a few minutes.');
  }
  if (said.includes('expired') || said.includes('expiration') || /\bexp\b/.test(said)) {
    return refused(
      'The identity service refused the JWT expiration claim (exp).',
      "Use a future time, at most 10 years ahead: the gateway signs with exp 3 minutes ahead, so check this machine's clock.",
    );
  }
  if (code === 'invalid_client_id' || said.includes('client identifier')) {
    return refused('The identity service does not know this client id.', "Copy the OAuth client's consumer key into Client ID again and reconnect.");
  }
  if (code === 'invalid_client' || said.includes('client credentials') || said.includes('client secret')) {
    return refused('The identity service refused the client secret.', "Copy the OAuth client's consumer secret into Client Secret again and reconnect.");
  }
  // "invalid assertion" and any other refusal of the JWT: the signature or claims did not pass.
  return refused('The identity service refused the signed JWT (invalid private key or claims).', KEY_MUST_MATCH);
}
