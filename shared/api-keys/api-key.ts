import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as z from 'zod/mini';
import { AccountId } from '../connectors';

/**
 * Playbook API keys: `igk_<account>_<key id>_<secret>`. The secret has 256 bits of entropy, so
 * a plain SHA-256 is enough to store it (no slow hash needed: nothing to brute-force), and the
 * account and key id in the clear let the gateway find the stored hash with one read.
 */
const KEY_PATTERN = /^igk_([a-z0-9][a-z0-9-]{1,62})_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

export const ApiKeyRecord = z.object({
  accountId: AccountId,
  keyId: z.string(),
  name: z.string(),
  hash: z.string(),
  createdAt: z.iso.datetime(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}

export function newApiKey(accountId: string): { key: string; keyId: string; hash: string } {
  const keyId = randomBytes(9)
    .toString('base64url')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '0')
    .slice(0, 12);
  const key = `igk_${accountId}_${keyId}_${randomBytes(32).toString('base64url')}`;
  return { key, keyId, hash: hashApiKey(key) };
}

/** The account and key id a presented key claims, or undefined when it is not shaped like a key. */
export function parseApiKey(key: string): { accountId: string; keyId: string } | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? { accountId: match[1]!, keyId: match[2]! } : undefined;
}

/** Constant-time comparison of a presented key with the stored hash. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(key));
  const stored = Buffer.from(storedHash);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
