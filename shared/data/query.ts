import * as z from 'zod/mini';
import type { PlatformClient } from '../http/platform-client';
import { buildSelect, MAX_QUERY_LIMIT } from './sql';

/**
 * Running a query on the data platform (Query API v2): `POST /services/data/v61.0/ssot/queryv2`
 * `{sql}`, then `GET .../queryv2/{nextBatchId}` while `done` is false (forward only). Rows come as
 * arrays; `metadata[column].placeInOrder` says which column each cell is. The query is read-only,
 * so the client may retry it (`idempotent: true`). SQL comes from ./sql, never from input.
 */

const QUERY_PATH = '/services/data/v61.0/ssot/queryv2';

/** Rows a query returns at most unless the caller asks for fewer. */
export const DEFAULT_MAX_ROWS = 10_000;

type CellValue = string | number | boolean | null;

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
const QueryBatch = z.lazy(() =>
  z.object({
    data: z.array(z.array(z.union([z.string(), z.number(), z.boolean(), z.null()]))),
    metadata: z.record(z.string(), z.looseObject({ placeInOrder: z.number().check(z.int(), z.nonnegative()), type: z.optional(z.string()) })),
    done: z.boolean(),
    nextBatchId: z.optional(z.string().check(z.minLength(1))),
    queryId: z.optional(z.string()),
  }),
);
type QueryBatch = z.infer<typeof QueryBatch>;

export interface QueryResult {
  rows: Array<Record<string, CellValue>>;
  /** True when the result had more rows than `maxRows`; the rest were not fetched. */
  truncated: boolean;
}

/** Each row as an object, by the columns' `placeInOrder`. */
export function rowsAsObjects(batch: Pick<QueryBatch, 'data' | 'metadata'>): Array<Record<string, CellValue>> {
  const columns = Object.entries(batch.metadata).map(([name, { placeInOrder }]) => [name, placeInOrder] as const);
  return batch.data.map((cells) => Object.fromEntries(columns.map(([name, index]) => [name, cells[index] ?? null])));
}

/** At most this many batches per query (a batch holds up to 49,999 rows). */
const MAX_BATCHES = 100;

export async function runQuery(session: Pick<PlatformClient, 'request'>, sql: string, options: { maxRows?: number } = {}): Promise<QueryResult> {
  const maxRows = Math.max(0, options.maxRows ?? DEFAULT_MAX_ROWS);
  let batch = (await session.request({ method: 'POST', path: QUERY_PATH, body: { sql }, idempotent: true, schema: QueryBatch })).body;
  const rows = rowsAsObjects(batch);
  // Bounded even if the platform kept answering "not done" with empty batches.
  for (let batches = 1; !batch.done && batch.nextBatchId && rows.length < maxRows && batches < MAX_BATCHES; batches += 1) {
    const path = `${QUERY_PATH}/${encodeURIComponent(batch.nextBatchId)}`;
    batch = (await session.request({ method: 'GET', path, schema: QueryBatch })).body;
    rows.push(...rowsAsObjects(batch));
  }
  const more = rows.length > maxRows || !batch.done;
  return { rows: rows.slice(0, maxRows), truncated: more };
}

// ---- unified profiles, for playbooks ----

export const UnifiedProfile = z
  .object({
    individualId: z.string(),
    firstName: z.nullable(z.string()),
    lastName: z.nullable(z.string()),
    email: z.nullable(z.string()),
  })
  .register(z.globalRegistry, { id: 'UnifiedProfile' });
export type UnifiedProfile = z.infer<typeof UnifiedProfile>;

const PROFILE_COLUMNS = ['IndividualId', 'FirstName', 'LastName', 'Email'];

function toProfile(row: Record<string, CellValue>): UnifiedProfile {
  const text = (value: CellValue | undefined) => (value === null || value === undefined ? null : String(value));
  return { individualId: String(row.IndividualId ?? ''), firstName: text(row.FirstName), lastName: text(row.LastName), email: text(row.Email) };
}

/** The unified profile with this email, if any. */
export async function profileByEmail(session: Pick<PlatformClient, 'request'>, email: string): Promise<UnifiedProfile | undefined> {
  const sql = buildSelect({ from: 'UnifiedIndividual__dlm', select: { kind: 'columns', columns: PROFILE_COLUMNS }, where: { Email: email }, limit: 1 });
  const { rows } = await runQuery(session, sql, { maxRows: 1 });
  return rows[0] ? toProfile(rows[0]) : undefined;
}

/** Up to `limit` unified profiles (Activation broadcasts, lead scoring feeds). */
export async function profiles(session: Pick<PlatformClient, 'request'>, options: { limit: number }): Promise<UnifiedProfile[]> {
  const limit = Math.min(options.limit, MAX_QUERY_LIMIT);
  const sql = buildSelect({ from: 'UnifiedIndividual__dlm', select: { kind: 'columns', columns: PROFILE_COLUMNS }, limit });
  const { rows } = await runQuery(session, sql, { maxRows: limit });
  return rows.map(toProfile);
}
