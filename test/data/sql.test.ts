import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildSelect, literal, quoteString, SqlBuildError, unsafeValueReason, type DataObjectDefinition } from '../../shared/data/sql';
import { parseQuery, QueryError, runQuery as runSimulatorQuery, tokenize } from '../../sandbox/data-simulator';

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
    expect(() => quoteString('a\ud800b')).toThrow(SqlBuildError);
  });

  it('no string can break out of its quotes: the literal reads back whole, and nothing follows it (property)', () => {
    // The data simulator reads quoted literals the standard way too: the builder's output, over the whole of Unicode, parses back whole.
    const hostile = fc
      .oneof(
        fc.string({ unit: 'binary' }),
        fc.array(fc.constantFrom("'", "''", '"', '\\', ';', '--', '/*', ' OR 1=1', 'LIMIT 1', ')', '\u2019', '😀'), { maxLength: 12 }).map((parts) => parts.join('')),
      )
      .filter((s) => unsafeValueReason(s) === undefined);
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

describe('SQL builder: operators, grouping and order', () => {
  const catalog: Record<string, DataObjectDefinition> = {
    Orders__dlm: { aliases: [], columns: ['order_id', 'email', 'status', 'amount'], numericColumns: ['amount'] },
  };

  it('writes each operator, IN lists, GROUP BY and ORDER BY, and the simulator reads them back', () => {
    const sql = buildSelect(
      {
        from: 'Orders__dlm',
        select: { kind: 'sum', column: 'amount' },
        conditions: [
          { column: 'status', op: 'in', value: ['paid', "o'k"] },
          { column: 'amount', op: 'gte', value: -2.5 },
          { column: 'amount', op: 'lt', value: 100 },
          { column: 'email', op: 'ne', value: 'x@y.example' },
        ],
        groupBy: ['email'],
        orderBy: { column: 'email', direction: 'desc' },
        limit: 10,
      },
      catalog,
    );
    expect(sql).toBe(
      "SELECT email, SUM(amount) FROM Orders__dlm WHERE status IN ('paid', 'o''k') AND amount >= -2.5 AND amount < 100 AND email <> 'x@y.example' GROUP BY email ORDER BY email DESC LIMIT 10",
    );
    const parsed = parseQuery(sql);
    expect(parsed.conditions).toEqual([
      { column: 'status', op: 'IN', values: ['paid', "o'k"] },
      { column: 'amount', op: '>=', value: -2.5 },
      { column: 'amount', op: '<', value: 100 },
      { column: 'email', op: '<>', value: 'x@y.example' },
    ]);
    expect(parsed.groupBy).toEqual(['email']);
    expect(parsed.orderBy).toEqual({ column: 'email', direction: 'DESC' });
  });

  it('refuses operators it does not know, empty or long IN lists, grouping plain columns, and unknown ORDER BY columns', () => {
    const base = { from: 'Orders__dlm', select: { kind: 'count' as const } };
    expect(() => buildSelect({ ...base, conditions: [{ column: 'status', op: 'like' as 'eq', value: 'a%' }] }, catalog)).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...base, conditions: [{ column: 'status', op: 'in', value: [] }] }, catalog)).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...base, conditions: [{ column: 'status', op: 'in', value: Array.from({ length: 101 }, () => 'a') }] }, catalog)).toThrow(SqlBuildError);
    expect(() => buildSelect({ from: 'Orders__dlm', select: { kind: 'columns', columns: ['email'] }, groupBy: ['email'] }, catalog)).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...base, orderBy: { column: 'password', direction: 'asc' } }, catalog)).toThrow(SqlBuildError);
    expect(() => buildSelect({ ...base, groupBy: ['amount; DROP'] }, catalog)).toThrow(SqlBuildError);
  });
});

/**
 * An ANSI SQL string literal reader written for this test, independent of the builder and of the
 * data simulator: from the opening quote, `''` is one quote and a lone `'` ends the literal.
 */
function readAnsiLiteral(sql: string, start: number): { value: string; end: number } {
  if (sql[start] !== "'") throw new Error('not at a literal');
  let value = '';
  for (let i = start + 1; i < sql.length; i++) {
    if (sql[i] !== "'") value += sql[i];
    else if (sql[i + 1] === "'") {
      value += "'";
      i++;
    } else return { value, end: i + 1 };
  }
  throw new Error('unterminated literal');
}

/** Any UTF-16 code unit (lone surrogates included), any code point, and SQL's and look-alikes' hostile pieces. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)), maxLength: 40 }),
  fc
    .array(fc.constantFrom("'", "''", '"', '`', '\\', "\\'", ';', '--', '/*', '*/', ' OR 1=1', '\u2018', '\u2019', '\u02bc', '\uff07', '\u201c', 'é', '😀', '\u0000', '\n', '\ud800'), { maxLength: 12 })
    .map((parts) => parts.join('')),
);
const unrepresentable = (value: string) => /\p{Cc}|\p{Cs}/u.test(value);

describe('string literals over the whole of Unicode', () => {
  it('round-trip through an ANSI literal reader, and no value ends its literal early (property)', () => {
    fc.assert(
      fc.property(anyText, anyText, (email, lastName) => {
        if (unrepresentable(email) || unrepresentable(lastName)) return;
        const literalText = quoteString(email);
        expect(readAnsiLiteral(literalText, 0)).toEqual({ value: email, end: literalText.length });
        // Inside a query: each literal ends exactly where the builder put its closing quote, and what follows is the builder's SQL.
        const sql = buildSelect({ from: 'UnifiedIndividual', select: { kind: 'columns', columns: ['Email'] }, where: { Email: email, LastName: lastName }, limit: 5 });
        const head = 'SELECT Email FROM UnifiedIndividual__dlm WHERE Email = ';
        expect(sql.startsWith(head)).toBe(true);
        const first = readAnsiLiteral(sql, head.length);
        expect(first.value).toBe(email);
        const middle = ' AND LastName = ';
        expect(sql.slice(first.end, first.end + middle.length)).toBe(middle);
        const second = readAnsiLiteral(sql, first.end + middle.length);
        expect(second.value).toBe(lastName);
        expect(sql.slice(second.end)).toBe(' LIMIT 5');
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses exactly what a literal cannot carry: control characters and lone surrogates (property)', () => {
    fc.assert(
      fc.property(anyText, (value) => {
        if (unrepresentable(value)) {
          expect(unsafeValueReason(value)).toMatch(/control character|lone surrogate/);
          expect(() => quoteString(value)).toThrow(SqlBuildError);
        } else {
          expect(unsafeValueReason(value)).toBeUndefined();
          expect(() => quoteString(value)).not.toThrow();
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("reads people's names and addresses as they are", () => {
    for (const value of ["o'brien@example.com", "d'angelo+vip@example.com", 'josé@example.com', 'O\u2019Brien', 'O\uff07Brien', 'C:\\path', 'São Paulo', '株式会社', '😀']) {
      expect(unsafeValueReason(value)).toBeUndefined();
    }
    expect(quoteString("o'brien@example.com")).toBe("'o''brien@example.com'");
    expect(quoteString("''")).toBe("''''''");
    for (const value of ['a\u0000b', 'line\nbreak', 'tab\there', '\u007f', '\u0085', 'x\udc00y']) expect(unsafeValueReason(value)).toBeDefined();
  });
});

describe('the simulator refuses what the platform would', () => {
  it.each([
    ['a bind parameter', 'SELECT Email FROM UnifiedIndividual__dlm WHERE Email = ?'],
    ['a named bind parameter', 'SELECT Email FROM UnifiedIndividual__dlm WHERE Email = :email'],
    ['a line comment', "SELECT Email FROM UnifiedIndividual__dlm -- WHERE Email = 'a'"],
    ['a block comment', 'SELECT Email /* x */ FROM UnifiedIndividual__dlm'],
    ['a second statement', 'SELECT Email FROM UnifiedIndividual__dlm; DELETE FROM UnifiedIndividual__dlm'],
    ['OR (not in the sandbox)', "SELECT Email FROM UnifiedIndividual__dlm WHERE Email = 'a' OR Email = 'b'"],
  ])('%s', (_name, sql) => {
    expect(() => parseQuery(sql)).toThrow(QueryError);
  });

  it('refuses SUM of a text column and a bare column beside an aggregate without GROUP BY', () => {
    const objects = [{ name: 'T__dlm', aliases: [], columns: [{ name: 'a', aliases: [], type: 'VARCHAR', typeCode: 12 }, { name: 'n', aliases: [], type: 'DECIMAL', typeCode: 3 }], rows: [{ a: 'x', n: 2 }, { a: 'x', n: 4 }, { a: 'y', n: 1 }] }];
    expect(() => runSimulatorQuery(parseQuery('SELECT SUM(a) FROM T__dlm'), objects)).toThrow(/numeric/);
    expect(() => runSimulatorQuery(parseQuery('SELECT a, COUNT(*) FROM T__dlm'), objects)).toThrow(/GROUP BY/);
    expect(runSimulatorQuery(parseQuery('SELECT a, AVG(n) FROM T__dlm GROUP BY a ORDER BY a DESC'), objects).rows).toEqual([
      ['y', 1],
      ['x', 3],
    ]);
    expect(runSimulatorQuery(parseQuery('SELECT COUNT(*) FROM T__dlm WHERE n > 1 AND a IN (\'x\', \'z\')'), objects).rows).toEqual([[2]]);
  });
});
