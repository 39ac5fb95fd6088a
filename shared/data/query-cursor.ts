import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import * as z from 'zod/mini';

/**
 * The cursor of a paged data-platform read. The platform's own `nextBatchId` cannot serve: it is
 * good for one fetch within 3 minutes, and a playbook may come back later. So the gateway pages by
 * the object's key column (`WHERE key > last ORDER BY key`) and hands out the last key it returned,
 * signed.
 *
 * The signature binds the cursor to the account, the object and the query (a hash of its columns
 * and filters): a cursor from another account, another query, or altered by hand is refused. The
 * key is derived (HKDF) from the data connection's own sealed credentials, which the read opens
 * anyway, and the account id: no extra secret to store, and reconnecting with new credentials
 * retires old cursors. Cursors also expire.
 */

export const CURSOR_LIFETIME_SECONDS = 24 * 60 * 60;

const CursorBody = z.object({
  v: z.literal(1),
  a: z.string(),
  o: z.string(),
  q: z.string(),
  k: z.union([z.string(), z.number()]),
  exp: z.number().check(z.int()),
});
type CursorBody = z.infer<typeof CursorBody>;

export class CursorError extends Error {
  override readonly name = 'CursorError';
}

/** The key that signs an account's cursors, from its connection's credentials. */
export function cursorKey(accountId: string, credentials: Readonly<Record<string, string>>): Buffer {
  const material = JSON.stringify(Object.entries(credentials).sort(([a], [b]) => a.localeCompare(b)));
  return Buffer.from(hkdfSync('sha256', material, `account:${accountId}`, 'integration-gateway data cursor v1', 32));
}

/** A short digest of what the query asks (columns, filters), so a cursor only continues that query. */
export function queryFingerprint(query: unknown): string {
  return createHash('sha256').update(JSON.stringify(query)).digest('base64url').slice(0, 22);
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

export function signCursor(key: Buffer, body: Omit<CursorBody, 'v' | 'exp'>, nowMs: number): string {
  const payload = Buffer.from(JSON.stringify({ v: 1, ...body, exp: Math.floor(nowMs / 1000) + CURSOR_LIFETIME_SECONDS })).toString('base64url');
  return `${payload}.${mac(key, payload).toString('base64url')}`;
}

/** The position a cursor holds, or CursorError when it is not this account's cursor for this query. */
export function openCursor(key: Buffer, cursor: string, expected: { a: string; o: string; q: string }, nowMs: number): string | number {
  const match = /^([A-Za-z0-9_-]{1,2000})\.([A-Za-z0-9_-]{43})$/.exec(cursor);
  if (!match?.[1] || !match[2]) throw new CursorError('not a cursor this API returned');
  const [, payload, signature] = match;
  const given = Buffer.from(signature, 'base64url');
  const wanted = mac(key, payload);
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) throw new CursorError('not a cursor this API returned for this account');
  let body: CursorBody;
  try {
    body = CursorBody.parse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
  } catch {
    throw new CursorError('not a cursor this API returned');
  }
  if (body.a !== expected.a || body.o !== expected.o || body.q !== expected.q)
    throw new CursorError('the cursor belongs to another query: send the same object, columns and filters');
  if (body.exp * 1000 < nowMs) throw new CursorError('the cursor has expired: start again without it');
  return body.k;
}
