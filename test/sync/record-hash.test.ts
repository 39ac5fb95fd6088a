import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, recordHash } from '../../shared/sync/record-hash';
import type { JsonValue } from '../../shared/sync/sync-source';

/** The canonical form as first written (one string per key, joined): stored hashes were made from it. */
function referenceCanonical(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(',')}]`;
  const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${referenceCanonical(value[key]!)}`).join(',')}}`;
}
const referenceHash = (value: JsonValue) => createHash('sha256').update(referenceCanonical(value)).digest('base64url').slice(0, 22);

/** Flat records like the normalised ones, with keys in any order and some left undefined. */
const flatRecord = fc.dictionary(
  fc.string(),
  fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined)),
) as fc.Arbitrary<Record<string, JsonValue>>;

describe('canonicalJson', () => {
  it('writes the same text as the reference form, for flat records and nested JSON alike', () => {
    fc.assert(
      fc.property(fc.oneof(flatRecord, fc.jsonValue() as fc.Arbitrary<JsonValue>, fc.array(flatRecord) as fc.Arbitrary<JsonValue>), (value) => {
        expect(canonicalJson(value)).toBe(referenceCanonical(value));
      }),
      { numRuns: 500 },
    );
  });

  it('sorts keys at every depth and leaves undefined values out', () => {
    const value = { b: 1, a: { d: [{ z: 1, y: 2 }], c: 'x' }, u: undefined } as unknown as JsonValue;
    expect(canonicalJson(value)).toBe('{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ b: 'é"\n', a: -0, c: null })).toBe('{"a":0,"b":"é\\"\\n","c":null}');
    // Keys that are ordered apart (integer-like) or special to objects (`__proto__`) are sorted as text too.
    const integerLike = JSON.parse('{"b":1,"10":2,"9":3,"":5}') as JsonValue;
    expect(canonicalJson(integerLike)).toBe('{"":5,"10":2,"9":3,"b":1}');
    const proto = JSON.parse('{"b":1,"__proto__":4,"a":{"__proto__":[5]}}') as JsonValue;
    expect(canonicalJson(proto)).toBe('{"__proto__":4,"a":{"__proto__":[5]},"b":1}');
    const flatProto = JSON.parse('{"b":1,"__proto__":"x"}') as JsonValue;
    expect(canonicalJson(flatProto)).toBe('{"__proto__":"x","b":1}');
  });
});

describe('recordHash', () => {
  it('is the digest the stored hashes were made with', () => {
    fc.assert(
      fc.property(fc.oneof(flatRecord, fc.jsonValue() as fc.Arbitrary<JsonValue>), (value) => {
        expect(recordHash(value)).toBe(referenceHash(value));
      }),
      { numRuns: 300 },
    );
    // A normalised subscription: the same fields in another order hash the same.
    const fields = { id: 'sub_1', customerId: 'cus_1', state: 'active', status: 'active', amount: 4900, createdAt: '2026-11-23T20:27:00.000Z' };
    const reordered = Object.fromEntries(Object.entries(fields).reverse());
    expect(recordHash(reordered)).toBe(recordHash(fields));
    expect(recordHash(fields)).toHaveLength(22);
    expect(recordHash({ ...fields, amount: 4901 })).not.toBe(recordHash(fields));
  });
});
