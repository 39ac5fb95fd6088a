import { ENGAGEMENT_EVENT_FIELDS } from './ingestion-schema';

/**
 * SQL for the data platform's query API, built safely: the platform has no bind parameters, so
 * identifiers come only from an allow-list (never from input) and every value is a literal the
 * builder writes itself: strings single-quoted with `'` doubled, numbers finite.
 *
 * Supported: SELECT columns | COUNT(*) | SUM(col) | AVG(col) [, grouped columns] FROM object
 * [WHERE col <op> literal AND ...] [GROUP BY cols] [ORDER BY col [ASC|DESC]] [LIMIT n], where <op> is
 * one of =, <>, <, <=, >, >= or IN (literal, ...). GROUP BY and ORDER BY are ANSI SQL, which the
 * platform's query language is (the Data 360 SQL reference); the spec's list (SELECT, WHERE, LIMIT, COUNT(*),
 * SUM, AVG) names what the playbooks need, and paging needs a stable order.
 */

export class SqlBuildError extends Error {
  override readonly name = 'SqlBuildError';
}

export interface DataObjectDefinition {
  /** Other names accepted for it (the spec writes `UnifiedIndividual`). */
  aliases: string[];
  columns: string[];
  /** Columns SUM and AVG may read. */
  numericColumns: string[];
}

/** The objects and columns queries may name. */
export const DATA_OBJECTS: Record<string, DataObjectDefinition> = {
  UnifiedIndividual__dlm: { aliases: ['UnifiedIndividual'], columns: ['IndividualId', 'FirstName', 'LastName', 'Email'], numericColumns: [] },
  EngagementEvent__dlm: { aliases: ['EngagementEvent'], columns: [...ENGAGEMENT_EVENT_FIELDS], numericColumns: [] },
};

export const MAX_QUERY_LIMIT = 49_999;

export type SqlLiteral = string | number;

export type Selection = { kind: 'columns'; columns: string[] } | { kind: 'count' } | { kind: 'sum' | 'avg'; column: string };

/** The comparison operators a condition may use, by their API names. */
export const COMPARISONS = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;
export type Comparison = keyof typeof COMPARISONS;
export type Operator = Comparison | 'in';
export const OPERATORS: readonly Operator[] = [...(Object.keys(COMPARISONS) as Comparison[]), 'in'];
/** Values one IN may list. */
export const MAX_IN_VALUES = 100;

export type Condition = { column: string; op: Comparison; value: SqlLiteral } | { column: string; op: 'in'; value: readonly SqlLiteral[] };

export interface SelectQuery {
  from: string;
  select: Selection;
  /** Column = value conditions, joined with AND. */
  where?: Record<string, SqlLiteral>;
  /** Conditions with an operator, joined with AND (after `where`'s). */
  conditions?: readonly Condition[];
  /** Columns the aggregate is grouped by; they are selected before the aggregate. */
  groupBy?: readonly string[];
  orderBy?: { column: string; direction: 'asc' | 'desc' };
  limit?: number;
}

const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]*$/;

/** A string literal: quoted, with each `'` doubled; what it cannot carry (below) is refused. */
export function quoteString(value: string): string {
  const reason = unsafeValueReason(value);
  if (reason) throw new SqlBuildError(`a string literal cannot hold this value: ${reason}`);
  return `'${value.replaceAll("'", "''")}'`;
}

export function literal(value: SqlLiteral): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SqlBuildError('a number literal must be finite');
    // No exponent form (1e21): plain digits the SQL grammar always reads as one number.
    const text = Number.isInteger(value) ? BigInt(value).toString() : String(value);
    if (!/^-?\d+(\.\d+)?$/.test(text)) throw new SqlBuildError('a number literal must be written in plain digits');
    return text;
  }
  if (typeof value === 'string') return quoteString(value);
  throw new SqlBuildError('a literal is a string or a number');
}

/** The object's canonical name and definition, from its name or an alias. */
export function dataObject(name: string, catalog: Record<string, DataObjectDefinition> = DATA_OBJECTS): [string, DataObjectDefinition] {
  for (const [canonical, definition] of Object.entries(catalog)) {
    if (canonical === name || definition.aliases.includes(name)) return [canonical, definition];
  }
  throw new SqlBuildError(`unknown data object (allowed: ${Object.keys(catalog).join(', ')})`);
}

function column(definition: DataObjectDefinition, name: string, numeric = false): string {
  const allowed = numeric ? definition.numericColumns : definition.columns;
  // The allow-list is the safety; the pattern guards against a catalog entry that is not a plain name.
  if (!allowed.includes(name) || !IDENTIFIER.test(name)) {
    throw new SqlBuildError(`column not allowed${numeric ? ' for SUM or AVG (numeric columns only)' : ''}: ${IDENTIFIER.test(name) ? name : '(not a column name)'}`);
  }
  return name;
}

function conditionText(definition: DataObjectDefinition, condition: Condition): string {
  const name = column(definition, condition.column);
  if (condition.op === 'in') {
    const values = condition.value;
    if (!Array.isArray(values) || values.length === 0 || values.length > MAX_IN_VALUES) throw new SqlBuildError(`IN takes 1 to ${MAX_IN_VALUES} values`);
    return `${name} IN (${values.map((v: SqlLiteral) => literal(v)).join(', ')})`;
  }
  const symbol = Object.hasOwn(COMPARISONS, condition.op) ? COMPARISONS[condition.op] : undefined;
  if (!symbol) throw new SqlBuildError(`operator not supported (supported: ${OPERATORS.join(', ')})`);
  return `${name} ${symbol} ${literal(condition.value as SqlLiteral)}`;
}

export function limitClause(limit: number): string {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) throw new SqlBuildError(`LIMIT must be a whole number from 1 to ${MAX_QUERY_LIMIT}`);
  return `LIMIT ${limit}`;
}

export function buildSelect(query: SelectQuery, catalog: Record<string, DataObjectDefinition> = DATA_OBJECTS): string {
  const [objectName, definition] = dataObject(query.from, catalog);
  if (!IDENTIFIER.test(objectName)) throw new SqlBuildError('object name is not a plain name');
  let selection: string;
  switch (query.select.kind) {
    case 'columns':
      if (query.select.columns.length === 0) throw new SqlBuildError('select at least one column');
      selection = query.select.columns.map((c) => column(definition, c)).join(', ');
      break;
    case 'count':
      selection = 'COUNT(*)';
      break;
    case 'sum':
    case 'avg':
      selection = `${query.select.kind.toUpperCase()}(${column(definition, query.select.column, true)})`;
      break;
  }
  const groupBy = (query.groupBy ?? []).map((c) => column(definition, c));
  if (groupBy.length > 0) {
    if (query.select.kind === 'columns') throw new SqlBuildError('GROUP BY goes with COUNT(*), SUM or AVG');
    selection = `${groupBy.join(', ')}, ${selection}`;
  }
  const parts = [`SELECT ${selection} FROM ${objectName}`];
  const conditions = [
    ...Object.entries(query.where ?? {}).map(([name, value]) => `${column(definition, name)} = ${literal(value)}`),
    ...(query.conditions ?? []).map((condition) => conditionText(definition, condition)),
  ];
  if (conditions.length > 0) parts.push(`WHERE ${conditions.join(' AND ')}`);
  if (groupBy.length > 0) parts.push(`GROUP BY ${groupBy.join(', ')}`);
  if (query.orderBy) {
    const direction = query.orderBy.direction === 'desc' ? 'DESC' : query.orderBy.direction === 'asc' ? 'ASC' : undefined;
    if (!direction) throw new SqlBuildError('ORDER BY is ascending or descending');
    parts.push(`ORDER BY ${column(definition, query.orderBy.column)} ${direction}`);
  }
  if (query.limit !== undefined) parts.push(limitClause(query.limit));
  return parts.join(' ');
}

/**
 * What a string literal cannot carry. Quoting doubles `'`, so every other character (quotes of any
 * shape, `"`, `;`, `--`, backslashes, letters of any script) stays data: the platform's SQL is
 * ANSI, where a backslash is an ordinary character in a '...' literal (only an `E'...'` literal,
 * which the builder never writes, reads escapes). Refused: control characters (NUL ends strings in
 * some engines; the others cannot be told apart from layout in the query text) and lone UTF-16
 * surrogates (no UTF-8 encoding: the platform would read U+FFFD, a different value).
 */
const UNREPRESENTABLE: ReadonlyArray<[RegExp, string]> = [
  [/\p{Cc}/u, 'a control character'],
  [/\p{Cs}/u, 'a lone surrogate (not a Unicode character)'],
];

/** What keeps this value out of a string literal, in words; undefined when it can be quoted exactly. */
export function unsafeValueReason(value: string): string | undefined {
  for (const [pattern, what] of UNREPRESENTABLE) if (pattern.test(value)) return `it contains ${what}`;
  return undefined;
}
