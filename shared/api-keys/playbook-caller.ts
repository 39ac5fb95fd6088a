import type { Caller } from '../api/caller';
import type { HttpRequest } from '../api/http';
import { problems } from '../api/problem';
import type { Gateway } from '../gateway';
import { apiKeyMatches, hashApiKey, parseApiKey } from './api-key';
import * as store from '../store/store';

/** Verified keys are remembered briefly so a busy playbook costs one read a minute, not one per call. */
const VERIFIED_FOR_MS = 60_000;
const verified = new Map<string, { caller: Caller; until: number }>();
/** A warm function serving many accounts keeps at most this many verified keys. */
const MAX_VERIFIED = 10_000;

/**
 * A playbook authenticates with `Authorization: Bearer igk_...`. The key names its account; the
 * stored hash must match in constant time. A revoked key stops working within a minute.
 */
export async function playbookCaller(request: HttpRequest, gateway: Gateway): Promise<Caller> {
  const key = /^Bearer\s+(igk_\S+)$/.exec(request.headers.authorization ?? '')?.[1];
  const unauthorized = problems.unauthorized('Send a playbook API key: Authorization: Bearer igk_...');
  if (!key) throw unauthorized;
  const cacheKey = hashApiKey(key);
  const cached = verified.get(cacheKey);
  if (cached && cached.until > gateway.now()) return cached.caller;

  const claimed = parseApiKey(key);
  if (!claimed) throw unauthorized;
  const stored = await store.getApiKey(gateway.table, claimed.accountId, claimed.keyId);
  if (!stored || !apiKeyMatches(key, stored.hash)) throw unauthorized;
  const caller: Caller = { subject: `api-key:${claimed.keyId}`, accountId: claimed.accountId, operator: false, playbook: true };
  if (verified.size >= MAX_VERIFIED) {
    for (const [key, entry] of verified) if (entry.until <= gateway.now()) verified.delete(key);
    if (verified.size >= MAX_VERIFIED) verified.clear();
  }
  verified.set(cacheKey, { caller, until: gateway.now() + VERIFIED_FOR_MS });
  return caller;
}

export function forgetVerifiedKeys(): void {
  verified.clear();
}
