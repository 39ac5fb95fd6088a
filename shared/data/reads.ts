import * as z from 'zod/mini';
import type { PlatformClient } from '../http/platform-client';
import { DataIdentifier, type DataCatalog, type ReadableObject, ENGAGEMENT, UNIFIED_INDIVIDUAL } from './catalog';
import { runQuery } from './query';
import { CursorError, openCursor, queryFingerprint, signCursor } from './query-cursor';
import { buildSelect, MAX_IN_VALUES, OPERATORS, unsafeValueReason, type Condition, type SqlLiteral } from './sql';

/**
 * The playbooks' reads of the data platform, each one SQL query built from the catalog (the
 * allow-list) and quoted literals:
 * - Activation: records of an object (unified profiles by default), filtered and paged;
 * - Qualification: one person's engagement history (the Engagement object), newest first;
 * - Lead Scoring: COUNT(*), SUM or AVG, optionally grouped;
 * - Real-Time Personalization: one profile (see ./profile-cache.ts for its short cache).
 * Every input is checked here, before anything is sent: a refusal is a DataReadError naming the
 * field, never the value.
 */

export const MAX_PAGE_SIZE = 1_000;
export const MAX_HISTORY = 500;
/** Groups an aggregate may return. */
export const MAX_GROUPS = 1_000;
export const MAX_FILTERS = 10;

export class DataReadError extends Error {
  override readonly name = 'DataReadError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** A text value sent towards a query: quoted exactly, refused only if a literal cannot carry it (see ./sql.ts). */
export const SafeText = z.string().check(
  z.maxLength(1_000),
  z.superRefine((value, context) => {
    const reason = unsafeValueReason(value);
    if (reason) context.addIssue({ code: 'custom', message: `refused: ${reason}, which a SQL string literal cannot carry; nothing was sent` });
  }),
);
const FilterValue = z.union([SafeText, z.number()]);

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const DataFilter = z.lazy(() =>
  z
    .strictObject({
      column: DataIdentifier,
      op: z.enum(OPERATORS as [string, ...string[]]).check(z.describe('eq (=), ne (<>), lt (<), lte (<=), gt (>), gte (>=), in (IN, with a list)')),
      value: z.union([FilterValue, z.array(FilterValue).check(z.minLength(1), z.maxLength(MAX_IN_VALUES))]),
    })
    .check(
      z.superRefine((filter, context) => {
        if ((filter.op === 'in') !== Array.isArray(filter.value)) {
          context.addIssue({ code: 'custom', path: ['value'], message: filter.op === 'in' ? 'in takes a list of values' : `${filter.op} takes one value` });
        }
      }),
    )
    .register(z.globalRegistry, { id: 'DataFilter' }),
);
export type DataFilter = z.infer<typeof DataFilter>;

export const DataRecordsQuery = z.lazy(() =>
  z
    .strictObject({
      object: z._default(DataIdentifier, UNIFIED_INDIVIDUAL.name).check(z.describe('A readable data model object (default: unified individuals)')),
      columns: z
        .optional(z.array(DataIdentifier).check(z.minLength(1), z.maxLength(100)))
        .check(z.describe('Columns to return (default: every declared column)')),
      filters: z._default(z.array(DataFilter).check(z.maxLength(MAX_FILTERS)), []).check(z.describe('Conditions, all of which must hold')),
      limit: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_PAGE_SIZE)), 100).check(z.describe(`Records per page, 1-${MAX_PAGE_SIZE}`)),
      cursor: z.optional(z.string().check(z.maxLength(3_000))).check(z.describe('The nextCursor of the previous page (same object, columns and filters)')),
    })
    .register(z.globalRegistry, { id: 'DataRecordsQuery' }),
);
export type DataRecordsQuery = z.infer<typeof DataRecordsQuery>;

const Cell = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const DataRecordsPage = z.lazy(() =>
  z
    .object({ object: z.string(), records: z.array(z.record(z.string(), Cell)), nextCursor: z.optional(z.string()) })
    .register(z.globalRegistry, { id: 'DataRecordsPage' }),
);
export type DataRecordsPage = z.infer<typeof DataRecordsPage>;

export const DataAggregateQuery = z.lazy(() =>
  z
    .strictObject({
      object: z._default(DataIdentifier, ENGAGEMENT.name),
      function: z.enum(['count', 'sum', 'avg']).check(z.describe('COUNT(*), SUM(column) or AVG(column)')),
      column: z.optional(DataIdentifier).check(z.describe('The numeric column SUM and AVG read')),
      filters: z._default(z.array(DataFilter).check(z.maxLength(MAX_FILTERS)), []),
      groupBy: z._default(z.array(DataIdentifier).check(z.maxLength(3)), []).check(z.describe('Columns to group by (GROUP BY)')),
      limit: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_GROUPS)), 100).check(z.describe(`Groups at most, 1-${MAX_GROUPS}`)),
    })
    .check(
      z.superRefine((query, context) => {
        if ((query.function === 'count') === (query.column !== undefined)) {
          context.addIssue({
            code: 'custom',
            path: ['column'],
            message: query.function === 'count' ? 'COUNT(*) takes no column' : `${query.function} needs a numeric column`,
          });
        }
      }),
    )
    .register(z.globalRegistry, { id: 'DataAggregateQuery' }),
);
export type DataAggregateQuery = z.infer<typeof DataAggregateQuery>;

export const DataAggregateAnswer = z.lazy(() =>
  z
    .object({
      object: z.string(),
      function: z.enum(['count', 'sum', 'avg']),
      column: z.optional(z.string()),
      /** Without groupBy: one group with an empty key. */
      groups: z.array(z.object({ key: z.record(z.string(), Cell), value: z.nullable(z.number()) })),
      truncated: z.boolean(),
    })
    .register(z.globalRegistry, { id: 'DataAggregateAnswer' }),
);
export type DataAggregateAnswer = z.infer<typeof DataAggregateAnswer>;

export const EngagementHistoryQuery = z.strictObject({
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_HISTORY)), 50).check(z.describe(`Events, newest first, 1-${MAX_HISTORY}`)),
  since: z.optional(z.iso.datetime({ offset: true })).check(z.describe('Only events at or after this time')),
  eventType: z.optional(SafeText).check(z.describe('Only events of this type')),
});
export type EngagementHistoryQuery = z.infer<typeof EngagementHistoryQuery>;

export const EngagementHistory = z.lazy(() =>
  z
    .object({
      email: z.string(),
      events: z.array(
        z.object({
          event_id: z.string(),
          event_type: z.nullable(z.string()),
          event_timestamp: z.nullable(z.string()),
          conversation_id: z.nullable(z.string()),
          channel: z.nullable(z.string()),
        }),
      ),
      truncated: z.boolean(),
    })
    .register(z.globalRegistry, { id: 'EngagementHistory' }),
);
export type EngagementHistory = z.infer<typeof EngagementHistory>;

export interface DataReadContext {
  session: Pick<PlatformClient, 'request'>;
  catalog: DataCatalog;
  accountId: string;
  /** Signs and checks cursors (./query-cursor.ts). */
  cursorKey: Buffer;
  now(): number;
}

// ---- checks (pure) ----

export function readableObject(catalog: DataCatalog, name: string, path = 'object'): ReadableObject {
  const object = catalog.find(name);
  if (!object) {
    const open = catalog.names();
    throw new DataReadError(
      path,
      `unknown or unselected data model object (readable: ${open.length > 0 ? open.join(', ') : 'none: check the data model objects setting'})`,
    );
  }
  return object;
}

function checkColumn(object: ReadableObject, name: string, path: string): void {
  if (!Object.hasOwn(object.columns, name))
    throw new DataReadError(path, `unknown column of ${object.name} (columns: ${Object.keys(object.columns).join(', ')})`);
}

function checkValue(object: ReadableObject, column: string, value: SqlLiteral, path: string): void {
  const type = object.columns[column];
  if (type === 'number' && typeof value !== 'number') throw new DataReadError(path, `${column} is a number column: send a number`);
  if (type !== 'number' && typeof value !== 'string') throw new DataReadError(path, `${column} is a ${type} column: send a string`);
  if (type === 'datetime' && Number.isNaN(Date.parse(value as string)))
    throw new DataReadError(path, `${column} is a date-time column: send an ISO 8601 date-time`);
}

/** The filters as SQL conditions, every column and value checked against the object. */
export function conditionsFor(object: ReadableObject, filters: readonly DataFilter[]): Condition[] {
  return filters.map((filter, index): Condition => {
    checkColumn(object, filter.column, `filters.${index}.column`);
    const values = Array.isArray(filter.value) ? filter.value : [filter.value];
    values.forEach((value, n) =>
      checkValue(object, filter.column, value, Array.isArray(filter.value) ? `filters.${index}.value.${n}` : `filters.${index}.value`),
    );
    if (filter.op === 'in') return { column: filter.column, op: 'in', value: values };
    if (!OPERATORS.includes(filter.op as Condition['op']))
      throw new DataReadError(`filters.${index}.op`, `operator not supported (supported: ${OPERATORS.join(', ')})`);
    return { column: filter.column, op: filter.op as Exclude<Condition['op'], 'in'>, value: values[0] as SqlLiteral };
  });
}

// ---- reads ----

/** Activation (and custom objects): one page of records, ordered by the object's key column. */
export async function queryRecords(context: DataReadContext, query: DataRecordsQuery): Promise<DataRecordsPage> {
  const object = readableObject(context.catalog, query.object);
  const columns = query.columns ?? Object.keys(object.columns);
  columns.forEach((column, index) => checkColumn(object, column, `columns.${index}`));
  const conditions = conditionsFor(object, query.filters);
  const fingerprint = queryFingerprint({ columns, filters: query.filters });
  const expected = { a: context.accountId, o: object.name, q: fingerprint };
  if (query.cursor !== undefined) {
    let after: string | number;
    try {
      after = openCursor(context.cursorKey, query.cursor, expected, context.now());
    } catch (error) {
      if (error instanceof CursorError) throw new DataReadError('cursor', error.message);
      throw error;
    }
    // A signed cursor holds what this gateway wrote; it is checked like any value all the same.
    if (typeof after === 'string' && unsafeValueReason(after)) throw new DataReadError('cursor', 'not a cursor this API returned');
    conditions.push({ column: object.keyColumn, op: 'gt', value: after });
  }
  const selected = columns.includes(object.keyColumn) ? columns : [...columns, object.keyColumn];
  const sql = buildSelect(
    {
      from: object.name,
      select: { kind: 'columns', columns: selected },
      conditions,
      orderBy: { column: object.keyColumn, direction: 'asc' },
      limit: query.limit + 1,
    },
    context.catalog.definitions(),
  );
  const { rows } = await runQuery(context.session, sql, { maxRows: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1)?.[object.keyColumn];
  const more = rows.length > query.limit && (typeof last === 'string' || typeof last === 'number');
  return {
    object: object.name,
    records: page.map((row) => Object.fromEntries(columns.map((column) => [column, row[column] ?? null]))),
    ...(more ? { nextCursor: signCursor(context.cursorKey, { ...expected, k: last as string | number }, context.now()) } : {}),
  };
}

/** Qualification: one person's engagement events, newest first. */
export async function engagementHistory(context: DataReadContext, email: string, query: EngagementHistoryQuery): Promise<EngagementHistory> {
  const object = readableObject(context.catalog, ENGAGEMENT.name);
  const conditions: Condition[] = [{ column: 'customer_email', op: 'eq', value: email }];
  if (query.since) conditions.push({ column: 'event_timestamp', op: 'gte', value: new Date(query.since).toISOString() });
  if (query.eventType !== undefined) conditions.push({ column: 'event_type', op: 'eq', value: query.eventType });
  const columns = ['event_id', 'event_type', 'event_timestamp', 'conversation_id', 'channel'];
  const sql = buildSelect(
    { from: object.name, select: { kind: 'columns', columns }, conditions, orderBy: { column: 'event_timestamp', direction: 'desc' }, limit: query.limit + 1 },
    context.catalog.definitions(),
  );
  const { rows } = await runQuery(context.session, sql, { maxRows: query.limit + 1 });
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  return {
    email,
    events: rows.slice(0, query.limit).map((row) => ({
      event_id: String(row.event_id ?? ''),
      event_type: text(row.event_type),
      event_timestamp: text(row.event_timestamp),
      conversation_id: text(row.conversation_id),
      channel: text(row.channel),
    })),
    truncated: rows.length > query.limit,
  };
}

/** Lead Scoring: COUNT(*), SUM or AVG over the object, optionally grouped. */
export async function aggregate(context: DataReadContext, query: DataAggregateQuery): Promise<DataAggregateAnswer> {
  const object = readableObject(context.catalog, query.object);
  if (query.column !== undefined) {
    checkColumn(object, query.column, 'column');
    if (object.columns[query.column] !== 'number')
      throw new DataReadError('column', `${query.column} is not a number column: SUM and AVG read number columns only`);
  }
  query.groupBy.forEach((column, index) => checkColumn(object, column, `groupBy.${index}`));
  const conditions = conditionsFor(object, query.filters);
  const select = query.function === 'count' ? ({ kind: 'count' } as const) : ({ kind: query.function, column: query.column as string } as const);
  const grouped = query.groupBy.length > 0;
  const sql = buildSelect(
    { from: object.name, select, conditions, ...(grouped ? { groupBy: query.groupBy, limit: query.limit + 1 } : {}) },
    context.catalog.definitions(),
  );
  const { rows } = await runQuery(context.session, sql, { maxRows: query.limit + 1 });
  const groups = rows.slice(0, query.limit).map((row) => {
    const key = Object.fromEntries(query.groupBy.map((column) => [column, row[column] ?? null]));
    // The aggregate is the one column that is not a group column.
    const valueColumn = Object.keys(row).find((column) => !query.groupBy.includes(column));
    const raw = valueColumn === undefined ? null : row[valueColumn];
    const value = raw === null || raw === undefined || raw === '' ? null : Number(raw);
    return { key, value: value === null || Number.isNaN(value) ? null : value };
  });
  return {
    object: object.name,
    function: query.function,
    ...(query.column ? { column: query.column } : {}),
    groups: grouped || groups.length > 0 ? groups : [{ key: {}, value: query.function === 'count' ? 0 : null }],
    truncated: rows.length > query.limit,
  };
}
