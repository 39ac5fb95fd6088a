import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * HTTP Basic credentials on the billing platform's webhooks (the spec's Authentication, billing
 * rule 4). The gateway makes them (a user never types a password) and keeps them in the billing
 * connection's sealed credentials under these names.
 */
export const WEBHOOK_USERNAME = 'webhookUsername';
export const WEBHOOK_PASSWORD = 'webhookPassword';

/** What a 401 asks for (RFC 7617). */
export const BASIC_CHALLENGE = 'Basic realm="billing webhooks", charset="UTF-8"';

export interface BasicCredentials {
  username: string;
  password: string;
}

/** `Authorization: Basic base64(username:password)` → its parts; undefined when absent or malformed. */
export function parseBasicAuthorization(header: string | undefined): BasicCredentials | undefined {
  if (!header || header.length > 1024) return undefined;
  const match = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Both parts compared in constant time: each is hashed first, so neither the length nor the
 * content of the stored value shows in the timing, and both comparisons always run.
 */
export function sameCredentials(given: BasicCredentials, expected: BasicCredentials): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  const username = timingSafeEqual(digest(given.username), digest(expected.username));
  const password = timingSafeEqual(digest(given.password), digest(expected.password));
  return username && password;
}

/** Fresh credentials for an account's billing webhooks: 256 random bits of password. */
export function newWebhookCredentials(accountId: string): BasicCredentials {
  return { username: `${accountId}-webhooks`, password: randomBytes(32).toString('base64url') };
}
