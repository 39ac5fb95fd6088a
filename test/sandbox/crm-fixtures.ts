import { generateKeyPair, SignJWT, type CryptoKey, type GenerateKeyPairResult } from 'jose';
import type { RunningCrmSimulator } from '../../sandbox/crm-simulator';

export type KeyPair = GenerateKeyPairResult;

/** Fresh RSA 2048 key pair, made at run time (nothing key-shaped is committed). */
export async function rsaKeyPair(): Promise<KeyPair> {
  return generateKeyPair('RS256', { extractable: true });
}

export interface JwtClaims {
  iss: string;
  sub: string;
  aud: string;
  /** Seconds since the epoch; omitted when undefined. */
  exp?: number;
}

export async function signAssertion(privateKey: CryptoKey, claims: JwtClaims): Promise<string> {
  const jwt = new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setIssuer(claims.iss).setSubject(claims.sub).setAudience(claims.aud);
  if (claims.exp !== undefined) jwt.setExpirationTime(claims.exp);
  return jwt.sign(privateKey);
}

export function inMinutes(minutes: number): number {
  return Math.floor(Date.now() / 1000) + minutes * 60;
}

export async function postForm(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

export async function postJson(url: string, body: unknown, token?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/** Runs the JWT bearer flow and returns the parsed answer (throws on failure). */
export async function jwtBearerToken(
  crm: RunningCrmSimulator,
  privateKey: CryptoKey,
  clientId: string,
  username: string,
): Promise<{ access_token: string; instance_url: string; scope: string }> {
  const assertion = await signAssertion(privateKey, { iss: clientId, sub: username, aud: crm.loginUrl, exp: inMinutes(3) });
  const response = await postForm(`${crm.url}/services/oauth2/token`, {
    grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
    assertion,
  });
  if (response.status !== 200) throw new Error(`JWT bearer failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as { access_token: string; instance_url: string; scope: string };
}
