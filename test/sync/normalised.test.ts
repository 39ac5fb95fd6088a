import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoFromUnixSeconds } from '../../shared/sync/normalised';

describe('isoFromUnixSeconds', () => {
  it('writes what Date#toISOString writes, for every whole second from 1970 to 9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 253_402_300_799 }), (seconds) => {
        expect(isoFromUnixSeconds(seconds)).toBe(new Date(seconds * 1000).toISOString());
      }),
      { numRuns: 5_000 },
    );
  });

  it('gets the edges of days, months, leap years and centuries right', () => {
    const edges = [1, 59, 60, 86_399, 86_400, 951_782_399, 951_782_400, 951_868_800, 4_107_542_399, 4_107_542_400, 4_102_444_800, 253_402_300_799];
    for (const seconds of edges) expect(isoFromUnixSeconds(seconds)).toBe(new Date(seconds * 1000).toISOString());
    expect(isoFromUnixSeconds(951_782_400)).toBe('2000-02-29T00:00:00.000Z');
    expect(isoFromUnixSeconds(253_402_300_799)).toBe('9999-12-31T23:59:59.000Z');
  });

  it('keeps fractions and far years as Date writes them, and gives nothing for no time', () => {
    expect(isoFromUnixSeconds(1.5)).toBe('1970-01-01T00:00:01.500Z');
    expect(isoFromUnixSeconds(253_402_300_800)).toBe('+010000-01-01T00:00:00.000Z');
    for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '1700000000', null, undefined]) expect(isoFromUnixSeconds(value)).toBeUndefined();
  });
});
