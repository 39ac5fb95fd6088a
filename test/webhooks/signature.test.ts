import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { parseBasicAuthorization, sameCredentials } from '../../shared/webhooks/basic-credentials';
import { parseSignatureHeader, verifySignature } from '../../shared/webhooks/signature';
import { generatedKey } from '../support/local-runtime';

/** The payment platform's own SDK, as the oracle of what a real signature looks like. */
const stripe = new Stripe(generatedKey('sk_test_'));
const now = 1_750_000_000;
const sign = (secret: string, timestamp: number, body: string) => createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

describe('payment webhook signature', () => {
  const secret = generatedKey('whsec_');
  const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'customer.created', created: now, data: { object: { id: 'cus_1', object: 'customer' } } });
  const check = (header: string | undefined, overrides: Partial<Parameters<typeof verifySignature>[0]> = {}) =>
    verifySignature({ header, rawBody: Buffer.from(body), secret, nowSeconds: now, toleranceSeconds: 300, ...overrides });

  it("accepts a header made by the platform's SDK, and the SDK accepts what it accepts", () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: now });
    expect(check(header)).toEqual({ ok: true, timestamp: now });
    // The same header, checked by the SDK at the same moment: both agree.
    expect(() => stripe.webhooks.constructEvent(body, header, secret, 300, undefined, now)).not.toThrow();
  });

  it('accepts any v1 (a rolled secret) and ignores v0 and other schemes', () => {
    const old = generatedKey('whsec_');
    const header = `t=${now},v1=${sign(old, now, body)},v0=${sign(secret, now, body)},v1=${sign(secret, now, body)},v9=zz,garbage`;
    expect(check(header).ok).toBe(true);
    expect(check(header, { secret: old }).ok).toBe(true);
    // A matching v0 alone is not enough.
    expect(check(`t=${now},v0=${sign(secret, now, body)},v1=${sign(old, now, body)}`)).toMatchObject({ ok: false, reason: 'mismatch' });
  });

  it('refuses another secret, a changed body, a changed timestamp and an uppercase or short signature', () => {
    const header = `t=${now},v1=${sign(secret, now, body)}`;
    expect(check(header, { secret: generatedKey('whsec_') })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(check(header, { rawBody: Buffer.from(`${body} `) })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(check(`t=${now + 1},v1=${sign(secret, now, body)}`)).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(check(`t=${now},v1=${sign(secret, now, body).toUpperCase()}`)).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(check(`t=${now},v1=${sign(secret, now, body).slice(0, 63)}`)).toMatchObject({ ok: false, reason: 'mismatch' });
  });

  it('holds the timestamp to the tolerance, both ways, and the tolerance is configurable', () => {
    const at = (t: number) => `t=${t},v1=${sign(secret, t, body)}`;
    expect(check(at(now - 300)).ok).toBe(true);
    expect(check(at(now - 301))).toMatchObject({ ok: false, reason: 'outside_tolerance' });
    expect(check(at(now + 301))).toMatchObject({ ok: false, reason: 'outside_tolerance' });
    expect(check(at(now - 301), { toleranceSeconds: 600 }).ok).toBe(true);
    expect(check(at(now - 30), { toleranceSeconds: 10 })).toMatchObject({ ok: false, reason: 'outside_tolerance' });
  });

  it('calls a header malformed without t, with two t, with a t that is not seconds, or with no v1', () => {
    for (const header of [undefined, '', 'v1=abc', `t=${now}`, `t=${now},v0=abc`, `t=${now},t=${now},v1=ab`, 't=12.5,v1=ab', 't=-4,v1=ab', 't=,v1=ab', 'x'.repeat(5000)]) {
      expect(check(header)).toMatchObject({ ok: false, reason: 'malformed' });
    }
  });

  it('parses the header the way the SDK builds it', () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: now });
    const parsed = parseSignatureHeader(header);
    expect(parsed).toEqual({ ok: true, header: { timestamp: now, signatures: [sign(secret, now, body)] } });
  });
});

describe('property: the header parser and the verifier', () => {
  it('never throw, whatever the header', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (header) => {
        const parsed = parseSignatureHeader(header);
        expect(typeof parsed.ok).toBe('boolean');
        expect(verifySignature({ header, rawBody: Buffer.from('{}'), secret: 'whsec_x', nowSeconds: now, toleranceSeconds: 300 }).ok).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads back the timestamp and every v1 of any well-formed header, among noise items in any order', () => {
    const hex = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('hex'));
    const noise = fc.oneof(
      hex.map((h) => `v0=${h}`),
      fc.stringMatching(/^[a-su-z][a-z0-9]{0,3}=[a-z0-9]{0,10}$/).filter((item) => !item.startsWith('v1=')),
      fc.constantFrom('', 'junk', '=', '=='),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999_999_999 }), fc.array(hex, { minLength: 1, maxLength: 5 }), fc.array(noise, { maxLength: 5 }), fc.boolean(), (t, signatures, extra, tFirst) => {
        const items = [...signatures.map((s) => `v1=${s}`), ...extra];
        const header = (tFirst ? [`t=${t}`, ...items] : [...items, `t=${t}`]).join(',');
        expect(parseSignatureHeader(header)).toEqual({ ok: true, header: { timestamp: t, signatures } });
      }),
    );
  });

  it('accepts the signed body and refuses every one-byte change of it', () => {
    const secret = generatedKey('whsec_');
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (bytes, position, flip) => {
        const body = Buffer.from(bytes);
        const header = `t=${now},v1=${createHmac('sha256', secret).update(`${now}.`).update(body).digest('hex')}`;
        expect(verifySignature({ header, rawBody: body, secret, nowSeconds: now, toleranceSeconds: 300 }).ok).toBe(true);
        const changed = Buffer.from(body);
        const index = position % changed.length;
        changed[index] = changed[index]! ^ flip;
        expect(verifySignature({ header, rawBody: changed, secret, nowSeconds: now, toleranceSeconds: 300 })).toMatchObject({ ok: false, reason: 'mismatch' });
      }),
      { numRuns: 500 },
    );
  });
});

describe('billing webhook Basic credentials', () => {
  const expected = { username: 'acme-webhooks', password: randomBytes(32).toString('base64url') };
  const header = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

  it('reads Basic credentials and matches only the exact pair', () => {
    expect(parseBasicAuthorization(header(expected.username, expected.password))).toEqual(expected);
    expect(sameCredentials(parseBasicAuthorization(header(expected.username, expected.password))!, expected)).toBe(true);
    expect(sameCredentials({ ...expected, password: `${expected.password}x` }, expected)).toBe(false);
    expect(sameCredentials({ ...expected, password: expected.password.slice(1) }, expected)).toBe(false);
    expect(sameCredentials({ ...expected, username: 'globex-webhooks' }, expected)).toBe(false);
    // A password may hold colons; the username ends at the first.
    expect(parseBasicAuthorization(header('u', 'p:q:r'))).toEqual({ username: 'u', password: 'p:q:r' });
  });

  it('finds no credentials in other schemes or broken headers, and never throws', () => {
    for (const value of [undefined, '', 'Bearer abc', 'Basic', 'Basic !!!', `Basic ${Buffer.from('no-colon').toString('base64')}`]) {
      expect(parseBasicAuthorization(value)).toBeUndefined();
    }
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (value) => void parseBasicAuthorization(value)));
    const username = fc.string().filter((name) => !name.includes(':'));
    fc.assert(
      fc.property(username, fc.string(), (name, password) => {
        expect(parseBasicAuthorization(header(name, password))).toEqual({ username: name, password });
      }),
    );
  });
});
