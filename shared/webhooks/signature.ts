import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The payment platform's webhook signature (the Payments API reference, webhook signatures; docs/platform-contracts.md):
 *
 *   Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...][,v0=<hex>]
 *
 * `v1` is HMAC-SHA256 over `<t>.<raw body>`, keyed with the whole `whsec_...` secret, lowercase
 * hex. Any `v1` may match (the platform signs with the old and the new secret while one is
 * rolled); `v0` and every other scheme are ignored. Pure functions: no I/O, no clock.
 */

export const SIGNATURE_HEADER = 'stripe-signature';

/** Far longer than any real header (a timestamp and a few signatures), short enough to parse cheaply. */
const MAX_HEADER_LENGTH = 4096;
/** A rolled secret adds one `v1`; more than this is not the platform. */
const MAX_SIGNATURES = 8;
const TIMESTAMP = /^\d{1,12}$/;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

export interface SignatureHeader {
  timestamp: number;
  /** The `v1` values, in order, as sent. */
  signatures: string[];
}

export type HeaderReading = { ok: true; header: SignatureHeader } | { ok: false; reason: string };

/**
 * Reads the header. Malformed: too long, no `t`, a `t` that is not whole seconds, two `t`s, or no
 * `v1`. Items of other schemes, and items without `=`, are skipped. Never throws.
 */
export function parseSignatureHeader(value: string | undefined): HeaderReading {
  if (value === undefined || value.trim() === '') return { ok: false, reason: 'the signature header is missing' };
  if (value.length > MAX_HEADER_LENGTH) return { ok: false, reason: 'the signature header is too long' };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const item of value.split(',')) {
    const equals = item.indexOf('=');
    if (equals < 0) continue;
    const scheme = item.slice(0, equals).trim();
    const text = item.slice(equals + 1).trim();
    if (scheme === 't') {
      if (timestamp !== undefined) return { ok: false, reason: 'the signature header has more than one timestamp' };
      if (!TIMESTAMP.test(text)) return { ok: false, reason: 'the signature header timestamp is not whole seconds' };
      timestamp = Number(text);
    } else if (scheme === 'v1' && signatures.length < MAX_SIGNATURES) {
      signatures.push(text);
    }
  }
  if (timestamp === undefined) return { ok: false, reason: 'the signature header has no timestamp (t=)' };
  if (signatures.length === 0) return { ok: false, reason: 'the signature header has no v1 signature' };
  return { ok: true, header: { timestamp, signatures } };
}

export type SignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'malformed' | 'mismatch' | 'outside_tolerance'; detail: string };

/**
 * Verifies a delivery: some `v1` is the HMAC of `<t>.<raw body>` under `secret` (compared in
 * constant time, every candidate checked), and `t` lies within `toleranceSeconds` of now in either
 * direction (a delivery signed far in the future is no more trustworthy than an old one).
 */
export function verifySignature(input: {
  /** The header as sent, or as `parseSignatureHeader` read it (a receiver that read it before any I/O). */
  header: string | undefined | SignatureHeader;
  rawBody: Uint8Array;
  secret: string;
  nowSeconds: number;
  toleranceSeconds: number;
}): SignatureCheck {
  const reading = typeof input.header === 'object' ? { ok: true as const, header: input.header } : parseSignatureHeader(input.header);
  if (!reading.ok) return { ok: false, reason: 'malformed', detail: reading.reason };
  const { timestamp, signatures } = reading.header;
  const expected = expectedSignature(input.secret, timestamp, input.rawBody);
  let matched = false;
  for (const candidate of signatures) {
    // The format check looks at the sender's value only, so it reveals nothing about the secret.
    if (!HEX_SHA256.test(candidate)) continue;
    if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) matched = true;
  }
  if (!matched) return { ok: false, reason: 'mismatch', detail: 'no v1 signature matches the body and the signing secret' };
  if (Math.abs(input.nowSeconds - timestamp) > input.toleranceSeconds) {
    return { ok: false, reason: 'outside_tolerance', detail: `the signature timestamp is more than ${input.toleranceSeconds} s from now` };
  }
  return { ok: true, timestamp };
}

/** HMAC-SHA256 of `<t>.<raw body>`, as bytes. */
export function expectedSignature(secret: string, timestamp: number, rawBody: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
}
