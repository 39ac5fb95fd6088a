import { SignJWT, jwtVerify } from 'jose';
import { OPERATOR_GROUP } from '../shared/api/caller';

/**
 * Local sign-in: stands in for Cognito and API Gateway's JWT authorizer under `npm start`.
 * Tokens carry the same claims Cognito would (`sub`, `custom:account_id`, `cognito:groups`),
 * so the API handler runs the same code in both places.
 */
export class LocalSignIn {
  constructor(private readonly signingKey: Uint8Array) {}

  issue(subject: { accountId?: string; operator?: boolean; user?: string }): Promise<string> {
    return new SignJWT({
      ...(subject.accountId ? { 'custom:account_id': subject.accountId } : {}),
      'cognito:groups': subject.operator ? [OPERATOR_GROUP] : [],
    })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(subject.user ?? (subject.operator ? 'local-operator' : `local-user@${subject.accountId ?? 'none'}`))
      .setIssuer('integration-gateway-local')
      .setIssuedAt()
      .setExpirationTime('12h')
      .sign(this.signingKey);
  }

  /** The claims of a valid token, or undefined (the caller answers 401 as API Gateway does). */
  async verify(authorization: string | undefined): Promise<Record<string, unknown> | undefined> {
    const token = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.signingKey, { issuer: 'integration-gateway-local', algorithms: ['HS256'] });
      return payload as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }
}
