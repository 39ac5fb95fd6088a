import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AccountId, isAccountId } from '../../shared/connectors';

/**
 * The receivers and the log context check an account id per request with `isAccountId` (the
 * schema's own pattern, without zod's issues): it must answer exactly as the schema does.
 */
describe('isAccountId', () => {
  it('answers as the AccountId schema does, on ids, near misses and any text', () => {
    for (const value of ['acme', 'a1', 'acme-test-01', 'a', '-acme', 'Acme', 'acme_test', 'x'.repeat(63), 'x'.repeat(64), '', 'acme\n']) {
      expect(isAccountId(value), value).toBe(AccountId.safeParse(value).success);
    }
    const idLike = fc.stringMatching(/^[a-z0-9-]{0,70}$/);
    fc.assert(fc.property(fc.oneof(idLike, fc.string()), (value) => isAccountId(value) === AccountId.safeParse(value).success));
  });
});
