import { SignJWT, jwtVerify } from 'jose';
import { OPERATOR_GROUP } from '../shared/api/caller';

/** Who signs in locally: a user of one account, or an operator (support). */
export interface LocalSubject {
  accountId?: string;
  operator?: boolean;
  user?: string;
}

/**
 * Local sign-in: stands in for Cognito and API Gateway's JWT authorizer under `npm start`.
 * Tokens carry the same claims Cognito would (`sub`, `custom:account_id`, `cognito:groups`, `email`),
 * so the API handler runs the same code in both places.
 *
 * Every token carries the generation it was issued in: `expireTokens()` makes every ID token issued so far
 * invalid (as if their hour had passed) and `expireSessions()` also ends every sign-in session (refresh
 * tokens, the sign-in page's cookie), so the dashboard's handling of both can be shown without waiting.
 */
export class LocalSignIn {
  #tokenGeneration = 0;
  #sessionGeneration = 0;

  constructor(private readonly signingKey: Uint8Array) {}

  get sessionGeneration(): number {
    return this.#sessionGeneration;
  }

  issue(subject: LocalSubject, options: { lifetimeSeconds?: number } = {}): Promise<string> {
    const sub = subject.user ?? (subject.operator ? 'local-operator' : `local-user@${subject.accountId ?? 'none'}`);
    return new SignJWT({
      ...(subject.accountId ? { 'custom:account_id': subject.accountId } : {}),
      'cognito:groups': subject.operator ? [OPERATOR_GROUP] : [],
      // As Cognito marks its ID tokens (the API refuses any other kind).
      token_use: 'id',
      email: subject.operator ? 'operator@localhost' : `user@${subject.accountId ?? 'none'}.localhost`,
      gen: this.#tokenGeneration,
    })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setIssuer('integration-gateway-local')
      .setIssuedAt()
      .setExpirationTime(`${options.lifetimeSeconds ?? 12 * 3600}s`)
      .sign(this.signingKey);
  }

  /** The claims of a valid token, or undefined (the caller answers 401 as API Gateway does). */
  async verify(authorization: string | undefined): Promise<Record<string, unknown> | undefined> {
    const token = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return undefined;
    const claims = await this.verifySigned(token, 'integration-gateway-local');
    if (!claims || claims.gen !== this.#tokenGeneration) return undefined;
    return claims;
  }

  /** A signed value of the local sign-in's own (session cookie), valid until the session generation changes. */
  signSession(subject: LocalSubject, lifetimeSeconds: number): Promise<string> {
    return new SignJWT({ subject: { ...subject }, gen: this.#sessionGeneration })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('integration-gateway-local-session')
      .setExpirationTime(`${lifetimeSeconds}s`)
      .sign(this.signingKey);
  }

  async verifySession(value: string): Promise<LocalSubject | undefined> {
    const claims = await this.verifySigned(value, 'integration-gateway-local-session');
    if (!claims || claims.gen !== this.#sessionGeneration) return undefined;
    return claims.subject as LocalSubject;
  }

  /** Every ID token issued so far stops working (a refresh gets a new one). */
  expireTokens(): void {
    this.#tokenGeneration += 1;
  }

  /** Every ID token, refresh token and sign-in session so far stops working: users must sign in again. */
  expireSessions(): void {
    this.#tokenGeneration += 1;
    this.#sessionGeneration += 1;
  }

  private async verifySigned(token: string, issuer: string): Promise<Record<string, unknown> | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.signingKey, { issuer, algorithms: ['HS256'] });
      return payload as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }
}
