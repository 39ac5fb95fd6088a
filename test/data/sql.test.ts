import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildSelect, literal, quoteString, SqlBuildError, type DataObjectDefinition } from '../../shared/data/sql';
import { parseQuery, tokenize } from '../../sandbox/data-simulator';

/** The builder's output read back by an independent reader: the data simulator's SQL parser. */

describe('SQL builder', () => {
  it('builds SELECT, WHERE ... AND ..., LIMIT over allow-listed names', () => {
    expect(buildSelect({ from: 'UnifiedIndividual', select: { kind: 'columns', columns: ['IndividualId', 'Email'] }, where: { Email: 'a@b.example', FirstName: "O'Hara" }, limit: 1 })).toBe(
      "SELECT IndividualId, Email FROM UnifiedIndividual__dlm WHERE Email = 'a@b.example' AND FirstName = 'O''Hara' LIMIT 1",
    );
    expect(buildSelect({ from: 'EngagementEvent__dlm', select: { kind: 'count' }, where: { channel: 'chat' } })).toBe(
      "SELECT COUNT(*) FROM EngagementEvent__dlm WHERE channel = 'chat'",
    );
  });

  it('builds SUM and AVG of a numeric column only', () => {
    const catalog: Record<string, DataObjectDefinition> = { Orders__dlm: { aliases: [], columns: ['Amount', 'Status'], numericColumns: ['Amount'] } };
    expect(buildSelect({ from: 'Orders__dlm', select: { kind: 'sum', column: 'Amount' }, where: { Status: 'paid' } }, catalog)).toBe(
      "SELECT SUM(Amount) FROM Orders__dlm WHERE Status = 'paid'",
    );
    expect(buildSelect({ from: 'Orders__dlm', select: { kind: 'avg', column: 'Amount' } }, catalog)).toBe('SELECT AVG(Amount) FROM Orders__dlm');
    expect(() => buildSelect({ from: 'Orders__dlm', select: { kind: 'sum', column: 'Status' } }, catalog)).toThrow(SqlBuildError);
  });

  it('refuses names off the allow-list, bad limits and unsafe numbers', () => {
    const ok = { from: 'UnifiedIndividual__dlm', select: { kind: 'columns' as const, columns: ['Email'] } };
    expect(() => buildSelect({ ...ok, from: 'Account; DROP TABLE x' })).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...ok, select: { kind: 'columns', columns: ['Email, Password'] } })).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...ok, where: { "Email = '' OR 1": 'x' } })).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...ok, select: { kind: 'columns', columns: [] } })).toThrow(SqlBuildError);
    for (const limit of [0, -1, 1.5, 50_000, Number.NaN]) expect(() => buildSelect({ ...ok, limit })).toThrow(SqlBuildError);
    expect(buildSelect({ ...ok, limit: 49_999 })).toMatch(/LIMIT 49999$/);
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY, 1e-7]) expect(() => literal(n)).toThrow(SqlBuildError);
    expect(literal(1e21)).toBe('1000000000000000000000');
    expect(literal(-2.5)).toBe('-2.5');
    expect(() => quoteString('a\u0000b')).toThrow(SqlBuildError);
  });

  it('no string can break out of its quotes: the literal reads back whole, and nothing follows it (property)', () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.array(fc.constantFrom("'", "''", '"', '\\', ';', '--', '/*', ' OR 1=1', 'LIMIT 1', '\n', ')'), { maxLength: 12 }).map((parts) => parts.join('')),
    ).filter((s) => !s.includes('\u0000'));
    fc.assert(
      fc.property(hostile, hostile, (email, firstName) => {
        const sql = buildSelect({ from: 'UnifiedIndividual', select: { kind: 'columns', columns: ['Email'] }, where: { Email: email, FirstName: firstName }, limit: 5 });
        const parsed = parseQuery(sql);
        expect(parsed.object).toBe('UnifiedIndividual__dlm');
        expect(parsed.conditions).toEqual([
          { column: 'Email', op: '=', value: email },
          { column: 'FirstName', op: '=', value: firstName },
        ]);
        expect(parsed.limit).toBe(5);
        // Exactly two string tokens, whatever the input held.
        expect(tokenize(sql).filter((t) => t.kind === 'string').map((t) => t.text)).toEqual([email, firstName]);
      }),
      { numRuns: 500 },
    );
  });

  it('numbers read back as the same number (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })), (n) => {
        let text: string;
        try {
          text = literal(n);
        } catch (error) {
          // Only values without a plain-digit form are refused.
          expect(error).toBeInstanceOf(SqlBuildError);
          expect(String(n)).toMatch(/e/);
          return;
        }
        expect(Number(text)).toBe(n === 0 ? 0 : n);
        expect(text).toMatch(/^-?\d+(\.\d+)?$/);
      }),
    );
  });
});
