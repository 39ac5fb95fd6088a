import { ENGAGEMENT_EVENT_FIELDS } from './ingestion-schema';

/**
 * SQL for the data platform's query API, built safely: the platform has no bind parameters, so
 * identifiers come only from an allow-list (never from input) and every value is a literal the
 * builder writes itself: strings single-quoted with `'` doubled, numbers finite.
 *
 * Supported: SELECT columns | COUNT(*) | SUM(col) | AVG(col) FROM object [WHERE col = literal AND ...] [LIMIT n].
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

export interface SelectQuery {
  from: string;
  select: Selection;
  /** Column = value conditions, joined with AND. */
  where?: Record<string, SqlLiteral>;
  limit?: number;
}

const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]*$/;

/** A string literal: quoted, with each `'` doubled. NUL is refused (some engines end the string there). */
export function quoteString(value: string): string {
  if (value.includes('\u0000')) throw new SqlBuildError('a string literal may not contain a NUL character');
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
  const parts = [`SELECT ${selection} FROM ${objectName}`];
  const conditions = Object.entries(query.where ?? {}).map(([name, value]) => `${column(definition, name)} = ${literal(value)}`);
  if (conditions.length > 0) parts.push(`WHERE ${conditions.join(' AND ')}`);
  if (query.limit !== undefined) parts.push(limitClause(query.limit));
  return parts.join(' ');
}
