import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { IdentityService } from './identity-simulator';
import { bearerToken, oauthError, platformError, readForm, readJson } from './identity-simulator';
import type { SimulatorRequest, SimulatorResponse } from './simulator-server';

/**
 * Sandbox stand-in for the customer data platform's APIs, on the instance host:
 * - `POST /services/a360/token`: identity token -> data-platform token;
 * - `POST /services/data/v61.0/ssot/queryv2` (and `GET .../queryv2/{nextBatchId}`): a small
 *   ANSI SQL subset over unified individuals and engagement events, answered in batches;
 * - `POST /api/v1/ingest/sources/{connector}/{object}`: streaming ingestion (the spec writes
 *   `/api/v1/ingest/{stream_name}`; this is the platform's real path).
 *
 * Data-platform tokens open only these data APIs; identity tokens are refused here (401).
 */

const TOKEN_EXCHANGE_GRANT = 'urn:salesforce:grant-type:external:cdp';
const DEFAULT_BATCH_SIZE = 49_999;
/** The platform's limits for one streaming ingestion request. */
export const INGESTION_MAX_BYTES = 200 * 1024;
export const INGESTION_MAX_RECORDS = 200;
/** Batches are forward only, fetched within 3 minutes of the last one, the whole result within an hour. */
const BATCH_GAP_LIMIT_MS = 3 * 60 * 1000;
const RESULT_LIFETIME_MS = 60 * 60 * 1000;

export interface UnifiedIndividual {
  IndividualId: string;
  FirstName: string;
  LastName: string;
  Email: string;
}

type CellValue = string | number | null;
type Row = Record<string, CellValue>;

interface Column {
  name: string;
  /** Other spellings accepted in SQL, e.g. the `ssot__` field names. */
  aliases: string[];
  type: string;
  /** java.sql.Types code, as the platform reports it. */
  typeCode: number;
}

interface DataModelObject {
  name: string;
  aliases: string[];
  columns: Column[];
  rows: Row[];
}

const varchar = (name: string, ...aliases: string[]): Column => ({ name, aliases, type: 'VARCHAR', typeCode: 12 });

/** The engagement-event schema of the spec, as the engagement DMO's columns. */
export const ENGAGEMENT_EVENT_FIELDS = ['event_id', 'customer_email', 'event_type', 'event_timestamp', 'conversation_id', 'channel'] as const;

// ---- The SQL subset ----
// SELECT cols | * | aggregates [, group cols] FROM obj [WHERE c <op> lit [AND ...]] [GROUP BY cols]
// [ORDER BY col [ASC|DESC]] [LIMIT n], aggregates COUNT(*), SUM(col), AVG(col), <op> one of
// = <> != < <= > >= IN (lit, ...). What the platform refuses is refused: bind parameters, comments,
// several statements, unknown objects or columns, SUM/AVG of a non-numeric column, a bare column
// beside an aggregate without GROUP BY. What the sandbox does not implement (OR, JOIN, HAVING,
// OFFSET...) is refused too, saying so.

export class QueryError extends Error {}

type Literal = string | number;
export type ComparisonOperator = '=' | '<>' | '<' | '<=' | '>' | '>=';

export type SelectItem =
  | { kind: 'column'; name: string; label: string }
  | { kind: 'count'; label: string }
  | { kind: 'sum' | 'avg'; column: string; label: string };

export interface ParsedQuery {
  object: string;
  selection: { kind: 'all' } | { kind: 'count'; label: string } | { kind: 'columns'; columns: Array<{ name: string; label: string }> } | { kind: 'items'; items: SelectItem[] };
  conditions: Array<{ column: string; op: ComparisonOperator; value: Literal } | { column: string; op: 'IN'; values: Literal[] }>;
  groupBy: string[];
  orderBy: { column: string; direction: 'ASC' | 'DESC' } | undefined;
  limit: number | undefined;
}

type Token = { kind: 'word' | 'quoted' | 'string' | 'number' | 'symbol'; text: string };

const KEYWORDS = new Set(['SELECT', 'FROM', 'WHERE', 'AND', 'OR', 'NOT', 'LIMIT', 'AS', 'COUNT', 'SUM', 'AVG', 'MIN', 'MAX', 'ORDER', 'GROUP', 'BY', 'HAVING', 'JOIN', 'OFFSET', 'IN', 'ASC', 'DESC', 'UNION', 'LIKE']);

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  const word = /[A-Za-z_][A-Za-z0-9_]*/y;
  const number = /-?\d+(\.\d+)?/y;
  let i = 0;
  while (i < sql.length) {
    const ch = sql.charAt(i);
    if (/\s/.test(ch)) {
      i += 1;
    } else if (ch === "'" || ch === '"') {
      // 'text' is a literal, "name" a quoted identifier; a doubled quote escapes itself in both.
      let value = '';
      i += 1;
      for (;;) {
        if (i >= sql.length) throw new QueryError(`unterminated ${ch === "'" ? 'string literal' : 'quoted identifier'}`);
        if (sql.charAt(i) === ch) {
          if (sql.charAt(i + 1) !== ch) break;
          i += 1;
        }
        value += sql.charAt(i);
        i += 1;
      }
      i += 1;
      tokens.push({ kind: ch === "'" ? 'string' : 'quoted', text: value });
    } else if (sql.startsWith('--', i) || sql.startsWith('/*', i)) {
      throw new QueryError(`syntax error at position ${i + 1}: comments are not accepted in a query`);
    } else if (ch === '?' || (ch === ':' && /[A-Za-z_]/.test(sql.charAt(i + 1)))) {
      throw new QueryError(`syntax error at position ${i + 1}: the query API takes no bind parameters`);
    } else if (['<=', '>=', '<>', '!='].includes(sql.slice(i, i + 2))) {
      tokens.push({ kind: 'symbol', text: sql.slice(i, i + 2) === '!=' ? '<>' : sql.slice(i, i + 2) });
      i += 2;
    } else if ('(),*=;<>'.includes(ch)) {
      tokens.push({ kind: 'symbol', text: ch });
      i += 1;
    } else {
      word.lastIndex = i;
      number.lastIndex = i;
      const match = word.exec(sql) ?? number.exec(sql);
      if (!match) throw new QueryError(`syntax error at position ${i + 1}: unexpected '${ch}'`);
      tokens.push({ kind: /[-\d]/.test(ch) ? 'number' : 'word', text: match[0] });
      i += match[0].length;
    }
  }
  return tokens;
}

export function parseQuery(sql: string): ParsedQuery {
  const tokens = tokenize(sql);
  let position = 0;
  const peek = (offset = 0): Token | undefined => tokens[position + offset];
  const isKeyword = (keyword: string, offset = 0): boolean => {
    const token = peek(offset);
    return token?.kind === 'word' && token.text.toUpperCase() === keyword;
  };
  const isSymbol = (symbol: string, offset = 0): boolean => peek(offset)?.kind === 'symbol' && peek(offset)?.text === symbol;
  const describe = (token: Token | undefined): string => (token ? `'${token.text}'` : 'end of query');
  const expectKeyword = (keyword: string): void => {
    if (!isKeyword(keyword)) throw new QueryError(`syntax error: expected ${keyword} but found ${describe(peek())}`);
    position += 1;
  };
  const expectSymbol = (symbol: string): void => {
    if (!isSymbol(symbol)) throw new QueryError(`syntax error: expected '${symbol}' but found ${describe(peek())}`);
    position += 1;
  };
  const identifier = (what: string): string => {
    const token = peek();
    if (token?.kind === 'quoted' || (token?.kind === 'word' && !KEYWORDS.has(token.text.toUpperCase()))) {
      position += 1;
      return token.text;
    }
    throw new QueryError(`syntax error: expected ${what} but found ${describe(token)}`);
  };
  const optionalAlias = (): string | undefined => {
    if (!isKeyword('AS')) return undefined;
    position += 1;
    return identifier('an alias');
  };
  const literal = (): Literal => {
    const token = peek();
    position += 1;
    if (token?.kind === 'string') return token.text;
    if (token?.kind === 'number') return Number(token.text);
    throw new QueryError(`syntax error: expected a quoted literal but found ${describe(token)}`);
  };
  const selectItem = (): SelectItem => {
    for (const fn of ['COUNT', 'SUM', 'AVG'] as const) {
      if (isKeyword(fn) && isSymbol('(', 1)) {
        position += 2;
        if (fn === 'COUNT') {
          expectSymbol('*');
          expectSymbol(')');
          return { kind: 'count', label: optionalAlias() ?? 'COUNT(*)' };
        }
        const column = identifier('a column name');
        expectSymbol(')');
        return { kind: fn === 'SUM' ? 'sum' : 'avg', column, label: optionalAlias() ?? `${fn}(${column})` };
      }
    }
    if (isKeyword('MIN') || isKeyword('MAX')) throw new QueryError(`${peek()?.text.toUpperCase()} is not supported by the sandbox`);
    const name = identifier('a column name');
    return { kind: 'column', name, label: optionalAlias() ?? name };
  };

  expectKeyword('SELECT');
  let selection: ParsedQuery['selection'];
  if (isSymbol('*')) {
    position += 1;
    selection = { kind: 'all' };
  } else {
    const items: SelectItem[] = [];
    do {
      if (isSymbol(',')) position += 1;
      items.push(selectItem());
    } while (isSymbol(','));
    const only = items[0];
    if (items.length === 1 && only?.kind === 'count') selection = { kind: 'count', label: only.label };
    else if (items.every((item) => item.kind === 'column')) selection = { kind: 'columns', columns: items.map((item) => ({ name: (item as { name: string }).name, label: item.label })) };
    else selection = { kind: 'items', items };
  }

  expectKeyword('FROM');
  const object = identifier('an object name');

  const conditions: ParsedQuery['conditions'] = [];
  if (isKeyword('WHERE')) {
    position += 1;
    do {
      if (isKeyword('AND')) position += 1;
      const column = identifier('a column name');
      if (isKeyword('IN')) {
        position += 1;
        expectSymbol('(');
        const values: Literal[] = [literal()];
        while (isSymbol(',')) {
          position += 1;
          values.push(literal());
        }
        expectSymbol(')');
        conditions.push({ column, op: 'IN', values });
      } else {
        const op = peek();
        if (op?.kind !== 'symbol' || !['=', '<>', '<', '<=', '>', '>='].includes(op.text)) throw new QueryError(`syntax error: expected a comparison but found ${describe(op)}`);
        position += 1;
        conditions.push({ column, op: op.text as ComparisonOperator, value: literal() });
      }
    } while (isKeyword('AND'));
  }

  const groupBy: string[] = [];
  if (isKeyword('GROUP')) {
    position += 1;
    expectKeyword('BY');
    do {
      if (isSymbol(',')) position += 1;
      groupBy.push(identifier('a column name'));
    } while (isSymbol(','));
  }

  let orderBy: ParsedQuery['orderBy'];
  if (isKeyword('ORDER')) {
    position += 1;
    expectKeyword('BY');
    const column = identifier('a column name');
    let direction: 'ASC' | 'DESC' = 'ASC';
    if (isKeyword('ASC') || isKeyword('DESC')) {
      direction = peek()?.text.toUpperCase() as 'ASC' | 'DESC';
      position += 1;
    }
    if (isSymbol(',')) throw new QueryError('ORDER BY more than one column is not supported by the sandbox');
    orderBy = { column, direction };
  }

  let limit: number | undefined;
  if (isKeyword('LIMIT')) {
    position += 1;
    const count = peek();
    if (count?.kind !== 'number' || !/^\d+$/.test(count.text)) throw new QueryError(`syntax error: LIMIT takes a whole number, found ${describe(count)}`);
    limit = Number(count.text);
    position += 1;
  }
  if (isSymbol(';')) {
    position += 1;
    if (position < tokens.length) throw new QueryError('one statement per query: nothing may follow the semicolon');
  }
  if (position < tokens.length) {
    const extra = peek();
    const supported = extra?.kind === 'word' && KEYWORDS.has(extra.text.toUpperCase()) ? ' (not supported by the sandbox)' : '';
    throw new QueryError(`syntax error: unexpected ${describe(extra)}${supported}`);
  }
  return { object, selection, conditions, groupBy, orderBy, limit };
}

interface QueryResult {
  rows: CellValue[][];
  metadata: Record<string, { type: string; placeInOrder: number; typeCode: number }>;
}

function findByName<T extends { name: string; aliases: string[] }>(items: T[], name: string): T | undefined {
  const wanted = name.toLowerCase();
  return items.find((item) => item.name.toLowerCase() === wanted || item.aliases.some((alias) => alias.toLowerCase() === wanted));
}

const NUMERIC_TYPES = new Set(['DECIMAL', 'BIGINT', 'INTEGER', 'DOUBLE']);

function compare(a: CellValue, b: CellValue): number {
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const [x, y] = [String(a), String(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Runs a parsed query against the data model objects; QueryError for what the platform refuses. */
export function runQuery(query: ParsedQuery, objects: DataModelObject[]): QueryResult {
  const object = findByName(objects, query.object);
  if (!object) {
    throw new QueryError(`object '${query.object}' is not found: verify the object name (known: ${objects.map((o) => o.name).join(', ')})`);
  }
  const column = (name: string): Column => {
    const found = findByName(object.columns, name);
    if (!found) throw new QueryError(`column '${name}' is not found in '${object.name}'`);
    return found;
  };
  const typed = (c: Column, value: Literal): CellValue => (NUMERIC_TYPES.has(c.type) ? Number(value) : String(value));

  const conditions = query.conditions.map((condition) => ({ ...condition, column: column(condition.column) }));
  let matches = object.rows.filter((row) =>
    conditions.every((condition) => {
      const cell = row[condition.column.name] ?? null;
      if (cell === null) return false;
      if (condition.op === 'IN') return condition.values.some((value) => compare(cell, typed(condition.column, value)) === 0);
      const order = compare(cell, typed(condition.column, condition.value));
      switch (condition.op) {
        case '=':
          return order === 0;
        case '<>':
          return order !== 0;
        case '<':
          return order < 0;
        case '<=':
          return order <= 0;
        case '>':
          return order > 0;
        case '>=':
          return order >= 0;
      }
    }),
  );
  if (query.orderBy) {
    const by = column(query.orderBy.column);
    const sign = query.orderBy.direction === 'DESC' ? -1 : 1;
    matches = [...matches].sort((a, b) => sign * compare(a[by.name] ?? null, b[by.name] ?? null));
  }

  const metadata: QueryResult['metadata'] = {};
  const items: SelectItem[] =
    query.selection.kind === 'all' ? object.columns.map((c) => ({ kind: 'column' as const, name: c.name, label: c.name }))
    : query.selection.kind === 'count' ? [{ kind: 'count', label: query.selection.label }]
    : query.selection.kind === 'columns' ? query.selection.columns.map((c) => ({ kind: 'column' as const, ...c }))
    : query.selection.items;
  const aggregated = items.some((item) => item.kind !== 'column') || query.groupBy.length > 0;
  const groupColumns = query.groupBy.map(column);

  items.forEach((item, index) => {
    if (item.kind === 'column') {
      const c = column(item.name);
      if (aggregated && !groupColumns.includes(c)) throw new QueryError(`column '${item.name}' must appear in the GROUP BY clause or be used in an aggregate function`);
      metadata[item.label] = { type: c.type, placeInOrder: index, typeCode: c.typeCode };
    } else if (item.kind === 'count') {
      metadata[item.label] = { type: 'BIGINT', placeInOrder: index, typeCode: -5 };
    } else {
      const c = column(item.column);
      if (!NUMERIC_TYPES.has(c.type)) throw new QueryError(`${item.kind.toUpperCase()} needs a numeric column; '${item.column}' is ${c.type}`);
      metadata[item.label] = { type: 'DECIMAL', placeInOrder: index, typeCode: 3 };
    }
  });

  let rows: CellValue[][];
  if (!aggregated) {
    rows = matches.map((row) => items.map((item) => (item.kind === 'column' ? (row[column(item.name).name] ?? null) : null)));
  } else {
    const groups = new Map<string, Row[]>();
    for (const row of matches) {
      const key = JSON.stringify(groupColumns.map((c) => row[c.name] ?? null));
      groups.set(key, [...(groups.get(key) ?? []), row]);
    }
    // Without GROUP BY an aggregate makes one row, even over no rows.
    if (groupColumns.length === 0 && groups.size === 0) groups.set('[]', []);
    rows = [...groups.values()].map((group) =>
      items.map((item) => {
        if (item.kind === 'column') return group[0]?.[column(item.name).name] ?? null;
        if (item.kind === 'count') return group.length;
        const values = group.map((row) => row[column(item.column).name]).filter((v): v is number => typeof v === 'number');
        if (values.length === 0) return null;
        const sum = values.reduce((a, b) => a + b, 0);
        return item.kind === 'sum' ? sum : sum / values.length;
      }),
    );
  }
  const limited = query.limit === undefined ? rows : rows.slice(0, query.limit);
  return { rows: limited, metadata };
}

// ---- The data platform's state and routes ----

interface QueryCursor {
  queryId: string;
  rows: CellValue[][];
  offset: number;
  metadata: QueryResult['metadata'];
  lastBatchAt: number;
  startedAt: number;
}

const IngestionBody = z.object({ data: z.array(z.record(z.string(), z.unknown())) });

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Katherine', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'Edsger', 'Radia'];
const LAST_NAMES = ['Lovelace', 'Hopper', 'Turing', 'Johnson', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Dijkstra', 'Perlman'];

export interface DataPlatformOptions {
  identity: IdentityService;
  /** Rows per query batch; the platform's is 49,999. Tests set it small. */
  batchSize?: number;
}

export class DataPlatform {
  batchSize: number;
  private readonly identity: IdentityService;
  private readonly unifiedIndividuals: DataModelObject = {
    name: 'UnifiedIndividual__dlm',
    // The spec writes the bare name; the platform's DMO API name ends in __dlm.
    aliases: ['UnifiedIndividual', 'ssot__UnifiedIndividual__dlm'],
    columns: [
      varchar('IndividualId', 'ssot__Id__c'),
      varchar('FirstName', 'ssot__FirstName__c'),
      varchar('LastName', 'ssot__LastName__c'),
      varchar('Email', 'ssot__Email__c'),
    ],
    rows: [],
  };
  private readonly engagementEvents: DataModelObject = {
    name: 'EngagementEvent__dlm',
    aliases: ['EngagementEvent'],
    columns: ENGAGEMENT_EVENT_FIELDS.map((field) =>
      field === 'event_timestamp' ? { name: field, aliases: [], type: 'TIMESTAMP', typeCode: 93 } : varchar(field),
    ),
    rows: [],
  };
  private readonly customObjects: DataModelObject[] = [];
  private readonly schemas = new Map<string, { required: string[]; maxLengths: Record<string, number> }>();
  private readonly ingestion = new Map<string, { records: Array<Record<string, unknown>>; processed: number }>();
  private readonly cursors = new Map<string, QueryCursor>();
  private queryCount = 0;
  /** The largest ingestion request body received, in bytes. */
  largestIngestionBytes = 0;
  /** The SQL of every query received, latest last (tests read what the gateway sent). */
  readonly sqlReceived: string[] = [];

  constructor(options: DataPlatformOptions) {
    this.identity = options.identity;
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  }

  /** Adds n unified individuals with unique emails; returns them. */
  seedUnifiedIndividuals(n: number): UnifiedIndividual[] {
    const start = this.unifiedIndividuals.rows.length;
    const added: UnifiedIndividual[] = [];
    for (let i = 0; i < n; i += 1) {
      const index = start + i;
      const firstName = FIRST_NAMES[index % FIRST_NAMES.length] ?? 'Ada';
      const lastName = LAST_NAMES[Math.floor(index / FIRST_NAMES.length) % LAST_NAMES.length] ?? 'Lovelace';
      added.push({
        IndividualId: randomUUID().replaceAll('-', ''),
        FirstName: firstName,
        LastName: lastName,
        Email: `${firstName}.${lastName}.${index}@example.com`.toLowerCase(),
      });
    }
    this.addUnifiedIndividuals(added);
    return added;
  }

  addUnifiedIndividuals(individuals: UnifiedIndividual[]): void {
    for (const individual of individuals) this.unifiedIndividuals.rows.push({ ...individual });
  }

  /**
   * Records of this connector and object must carry these fields, or the request is refused;
   * `maxLengths`: text fields the data stream maps to shorter fields refuse longer values.
   */
  registerIngestionSchema(connector: string, object: string, requiredFields: string[], options: { maxLengths?: Record<string, number> } = {}): void {
    this.schemas.set(ingestionKey(connector, object), { required: [...requiredFields], maxLengths: { ...options.maxLengths } });
  }

  /** A custom data model object (a Custom DMO) with its columns and rows. */
  defineObject(definition: { name: string; aliases?: string[]; columns: Array<{ name: string; type: 'VARCHAR' | 'DECIMAL' | 'TIMESTAMP' }> }, rows: Row[] = []): void {
    const typeCodes = { VARCHAR: 12, DECIMAL: 3, TIMESTAMP: 93 } as const;
    this.customObjects.push({
      name: definition.name,
      aliases: definition.aliases ?? [],
      columns: definition.columns.map((c) => ({ name: c.name, aliases: [], type: c.type, typeCode: typeCodes[c.type] })),
      rows: rows.map((row) => ({ ...row })),
    });
  }

  /** Rows of the engagement DMO, as processed ingestion would leave them. */
  addEngagementEvents(rows: Array<Record<(typeof ENGAGEMENT_EVENT_FIELDS)[number], string>>): void {
    for (const row of rows) this.engagementEvents.rows.push({ ...row });
  }

  /** `perPerson` engagement rows for each individual, an hour apart from `from` (ISO), types cycling. */
  seedEngagement(individuals: UnifiedIndividual[], perPerson: number, from = '2030-01-01T00:00:00.000Z'): void {
    const types = ['message_sent', 'link_clicked', 'qualified', 'meeting_booked'];
    const start = Date.parse(from);
    individuals.forEach((individual, p) => {
      for (let i = 0; i < perPerson; i += 1) {
        this.engagementEvents.rows.push({
          event_id: `seed-${individual.IndividualId}-${i}`,
          customer_email: individual.Email,
          event_type: types[(p + i) % types.length] ?? 'message_sent',
          event_timestamp: new Date(start + i * 3_600_000).toISOString(),
          conversation_id: `conv-${p}-${Math.floor(i / 2)}`,
          channel: i % 2 === 0 ? 'chat' : 'email',
        });
      }
    });
  }

  /** Queries the platform answered (POST), for tests that check nothing was sent. */
  get queriesReceived(): number {
    return this.queryCount;
  }

  /** Records accepted for this connector and object, in arrival order. */
  ingested(connector: string, object: string): Array<Record<string, unknown>> {
    return [...(this.ingestion.get(ingestionKey(connector, object))?.records ?? [])];
  }

  /**
   * The platform processes ingested records asynchronously (minutes). The sandbox does it when
   * asked: every record not yet processed becomes a row of the engagement DMO. Returns the count.
   */
  processIngestion(): number {
    let count = 0;
    for (const stream of this.ingestion.values()) {
      for (const record of stream.records.slice(stream.processed)) {
        const row: Row = {};
        for (const field of ENGAGEMENT_EVENT_FIELDS) row[field] = toCell(record[field]);
        this.engagementEvents.rows.push(row);
        count += 1;
      }
      stream.processed = stream.records.length;
    }
    return count;
  }

  route(request: SimulatorRequest): SimulatorResponse | undefined {
    const { method, path } = request;
    if (method === 'POST' && path === '/services/a360/token') return this.exchangeToken(request);
    if (method === 'POST' && (/^\/services\/data\/v\d+\.\d+\/ssot\/queryv2\/?$/.test(path) || path === '/api/v2/query')) {
      return this.query(request);
    }
    const batch = /^\/services\/data\/v\d+\.\d+\/ssot\/queryv2\/([^/]+)$/.exec(path) ?? /^\/api\/v2\/query\/([^/]+)$/.exec(path);
    if (method === 'GET' && batch?.[1]) return this.nextBatch(request, decodeURIComponent(batch[1]));
    const ingest = /^\/api\/v1\/ingest\/sources\/([^/]+)\/([^/]+)$/.exec(path);
    if (method === 'POST' && ingest?.[1] && ingest[2]) return this.ingest(request, decodeURIComponent(ingest[1]), decodeURIComponent(ingest[2]));
    return undefined;
  }

  private exchangeToken(request: SimulatorRequest): SimulatorResponse {
    const form = readForm(request);
    const grantType = form.get('grant_type');
    if (grantType !== null && grantType !== TOKEN_EXCHANGE_GRANT) return oauthError(400, 'unsupported_grant_type', 'grant type not supported');
    // The Data 360 token exchange sends the identity token as `subject_token`; the spec as a Bearer header. Take both.
    const subject = this.identity.authenticateToken(form.get('subject_token') ?? bearerToken(request), 'identity');
    if (!subject.ok) return subject.response;

    const user = this.identity.user(subject.grant.username);
    if (!user?.hasDataPlatformPermissionSet) {
      return oauthError(
        403,
        'access_denied',
        'the user does not have the data platform permission set required for token exchange (assign the data platform admin permission set)',
      );
    }
    const dataspace = form.get('dataspace') ?? 'default';
    const { token } = this.identity.issueAccessToken({
      audience: 'data-platform',
      clientId: subject.grant.clientId,
      username: subject.grant.username,
      scopes: subject.grant.scopes,
      dataspace,
    });
    return {
      status: 200,
      body: {
        access_token: token,
        // Like the real one: the data tenant's host with no scheme.
        instance_url: new URL(this.identity.instanceUrl).host,
        token_type: 'Bearer',
        issued_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        expires_in: Math.round(this.identity.accessTokenLifetimeMs / 1000),
      },
    };
  }

  /** Authenticates a data-platform token that carries `scope`; the refusal otherwise. */
  private authorizeDataCall(request: SimulatorRequest, scope: string): SimulatorResponse | undefined {
    const auth = this.identity.authenticate(request, 'data-platform');
    if (!auth.ok) return auth.response;
    if (!auth.grant.scopes.includes(scope)) {
      return platformError(403, 'FORBIDDEN', `this API needs the '${scope}' OAuth scope, which the connected app was not granted`);
    }
    return undefined;
  }

  private query(request: SimulatorRequest): SimulatorResponse {
    const refused = this.authorizeDataCall(request, 'cdp_query_api');
    if (refused) return refused;
    const body = z.object({ sql: z.string().min(1) }).safeParse(readJson(request));
    if (!body.success) return platformError(400, 'INVALID_INPUT', 'the request body must be JSON {"sql": "<ANSI SQL>"}');

    const startedAt = this.identity.now();
    this.queryCount += 1;
    this.sqlReceived.push(body.data.sql);
    if (this.sqlReceived.length > 1000) this.sqlReceived.shift();
    let result: QueryResult;
    try {
      result = runQuery(parseQuery(body.data.sql), [this.unifiedIndividuals, this.engagementEvents, ...this.customObjects]);
    } catch (error) {
      if (error instanceof QueryError) return platformError(400, 'INVALID_SQL', error.message);
      throw error;
    }
    const cursor: QueryCursor = { queryId: randomUUID(), rows: result.rows, offset: 0, metadata: result.metadata, lastBatchAt: startedAt, startedAt };
    return this.batchAnswer(cursor, startedAt);
  }

  private nextBatch(request: SimulatorRequest, batchId: string): SimulatorResponse {
    const refused = this.authorizeDataCall(request, 'cdp_query_api');
    if (refused) return refused;
    const cursor = this.cursors.get(batchId);
    // Forward only: a batch id is good for one fetch.
    this.cursors.delete(batchId);
    const now = this.identity.now();
    if (!cursor || now - cursor.lastBatchAt > BATCH_GAP_LIMIT_MS || now - cursor.startedAt > RESULT_LIFETIME_MS) {
      return platformError(404, 'NOT_FOUND', 'the batch id is unknown, already used or expired: run the query again');
    }
    return this.batchAnswer(cursor, now);
  }

  private batchAnswer(cursor: QueryCursor, startedAt: number): SimulatorResponse {
    const batch = cursor.rows.slice(cursor.offset, cursor.offset + this.batchSize);
    const offset = cursor.offset + batch.length;
    const done = offset >= cursor.rows.length;
    const body: Record<string, unknown> = {
      data: batch,
      metadata: cursor.metadata,
      rowCount: batch.length,
      done,
      queryId: cursor.queryId,
      startTime: new Date(startedAt).toISOString(),
      endTime: new Date(this.identity.now()).toISOString(),
    };
    if (!done) {
      const nextBatchId = randomUUID();
      this.cursors.set(nextBatchId, { ...cursor, offset, lastBatchAt: this.identity.now() });
      body.nextBatchId = nextBatchId;
    }
    return { status: 200, body };
  }

  private ingest(request: SimulatorRequest, connector: string, object: string): SimulatorResponse {
    const refused = this.authorizeDataCall(request, 'cdp_ingest_api');
    if (refused) return refused;
    this.largestIngestionBytes = Math.max(this.largestIngestionBytes, request.rawBody.length);
    if (request.rawBody.length > INGESTION_MAX_BYTES) {
      return platformError(413, 'PAYLOAD_TOO_LARGE', `the payload is ${request.rawBody.length} bytes; the limit is 200 KB per request`);
    }
    const body = IngestionBody.safeParse(readJson(request));
    if (!body.success) return platformError(400, 'INVALID_INPUT', 'the request body must be JSON {"data": [records]}');
    const records = body.data.data;
    if (records.length === 0) return platformError(400, 'INVALID_INPUT', 'data must hold at least one record');
    if (records.length > INGESTION_MAX_RECORDS) {
      return platformError(400, 'INVALID_INPUT', `${records.length} records in one request; the limit is ${INGESTION_MAX_RECORDS}`);
    }
    // Objects with no registered schema are accepted as they come (sandbox convenience).
    const schema = this.schemas.get(ingestionKey(connector, object)) ?? { required: [], maxLengths: {} };
    for (const [index, record] of records.entries()) {
      const missing = schema.required.find((field) => !(field in record));
      if (missing) return platformError(400, 'INVALID_INPUT', `record ${index} is missing required field '${missing}' of ${connector}/${object}`);
      const tooLong = Object.entries(schema.maxLengths).find(([field, max]) => String(record[field] ?? '').length > max);
      if (tooLong) return platformError(400, 'INVALID_INPUT', `record ${index} has field '${tooLong[0]}' longer than ${tooLong[1]} characters in ${connector}/${object}`);
    }

    const key = ingestionKey(connector, object);
    const stream = this.ingestion.get(key) ?? { records: [], processed: 0 };
    stream.records.push(...records);
    this.ingestion.set(key, stream);
    return { status: 202, body: { accepted: true } };
  }
}

function toCell(value: unknown): CellValue {
  if (typeof value === 'string' || typeof value === 'number') return value;
  return value === undefined || value === null ? null : JSON.stringify(value);
}

function ingestionKey(connector: string, object: string): string {
  return `${connector}/${object}`;
}
