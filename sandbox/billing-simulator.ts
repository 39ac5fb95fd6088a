import { SandboxClock } from './clock';
import {
  BILLING_INVOICE_STATUSES,
  BILLING_SINGULAR,
  BILLING_SUBSCRIPTION_STATUSES,
  BILLING_TRANSACTION_STATUSES,
  BILLING_TRANSACTION_TYPES,
  BillingRecordFactory,
  BillingSiteData,
  lacksUpdatedAt,
  type BillingCustomer,
  type BillingEvent,
  type BillingInvoice,
  type BillingObjectName,
  type BillingOrdering,
  type BillingRecordOf,
  type BillingSeedOptions,
  type BillingSubscription,
  type BillingSubscriptionStatus,
  type BillingTransaction,
} from './billing-records';
import { RateLimiter, type RateLimit } from './rate-limit';
import { addMonths, seededCreated, snapshot, type RecordCollection, type SortKey } from './records';
import { startSimulatorServer, type Latency, type RunningSimulator, type SimulatorRequest, type SimulatorResponse } from './simulator-server';
import { deliverWithRetries, postWebhook, type DeliveryOptions } from './webhook-delivery';

/**
 * A stand-in for the billing platform's API v2 (the Billing API v2 reference; docs/platform-contracts.md, "Billing platform"). Each site
 * lives under `<simulator url>/sites/<site>` (the real one is `https://<site>.chargebee.com`):
 * Basic auth with the key as username, `{list, next_offset}` pages with opaque offsets,
 * `attr[op]=value` filters, deleted rows behind `include_deleted`, events and webhooks.
 */

export * from './billing-records';

export type BillingKeyType = 'full' | 'read-only' | 'publishable';

export interface BillingSimulatorOptions {
  port?: number;
  host?: string;
  /** Seed of the name and amount generator; the same seed gives the same records. Default 1. */
  seed?: number;
  /** How long each answer takes (default none); `setLatency` or `POST /__sandbox/latency` changes it later. */
  latency?: Latency;
}

/** A change made through the control methods, and the event the platform recorded for it. */
export interface BillingMutation<T> {
  record: T;
  events: BillingEvent[];
}

export interface BillingWebhookDelivery extends DeliveryOptions {
  url: string;
  event: BillingEvent;
  /** The platform's optional webhook Basic auth. */
  basicAuth?: { username: string; password: string };
}

export type RequestHook = (request: SimulatorRequest, count: number) => void | Promise<void>;

export interface BillingSeedSubscriptions extends BillingSeedOptions {
  /** Subscriptions per customer. Default 1. */
  perCustomer?: number;
  customerIds?: string[];
  /** Statuses to cycle through; default a realistic mix with every status present. */
  statuses?: BillingSubscriptionStatus[];
}

export interface BillingSeedInvoices extends BillingSeedOptions {
  /** Invoices per subscription that has billed, one per past term, newest first. Default 1. */
  perSubscription?: number;
}

/** Control of one site's data. */
export interface BillingSite {
  name: string;
  data: BillingSiteData;
  /** The site's base URL: what BILLING_BASE_URL_TEMPLATE gives for this site locally. */
  url: string;
  seedCustomers(count: number, options?: BillingSeedOptions & { fields?: (index: number) => Partial<BillingCustomer> }): BillingCustomer[];
  seedSubscriptions(options?: BillingSeedSubscriptions): BillingSubscription[];
  /** Invoices with their payment transactions. */
  seedInvoices(options?: BillingSeedInvoices): BillingInvoice[];
  createCustomer(fields?: Partial<BillingCustomer>): BillingMutation<BillingCustomer>;
  createSubscription(customerId: string, fields?: Partial<BillingSubscription>): BillingMutation<BillingSubscription>;
  /** A new invoice for the subscription with its payment transaction, paid or failed. */
  createInvoice(subscriptionId: string, options?: { paid?: boolean }): BillingMutation<BillingInvoice>;
  /** Applies a change, bumps `updated_at` and `resource_version`, records the event. */
  update<K extends BillingObjectName>(object: K, id: string, patch: Partial<BillingRecordOf[K]>): BillingMutation<BillingRecordOf[K]>;
  /** Marks the record `deleted: true` (visible with `include_deleted=true`). */
  delete<K extends BillingObjectName>(object: K, id: string): BillingMutation<BillingRecordOf[K]>;
  recordEvent(eventType: string, content: Record<string, unknown>, options?: { source?: BillingEvent['source'] }): BillingEvent;
  /** Recorded events, newest first. */
  events(): BillingEvent[];
}

export interface BillingSimulator extends RunningSimulator {
  state: { sites: Map<string, BillingSiteData> };
  clock: SandboxClock;
  now(): number;
  setNow(ms: number): void;
  advance(ms: number): void;
  addSite(site: string): BillingSite;
  site(site: string): BillingSite;
  addApiKey(site: string, key: string, options: { type: BillingKeyType }): void;
  removeApiKey(site: string, key: string): void;
  /** Per API key. Default 150 per minute (test sites and small plans); undefined turns limits off. */
  setRateLimit(limit: RateLimit | undefined): void;
  /** 429s served by the rate limit (injected faults not included). */
  rateLimited(): number;
  onRequest(hook: RequestHook): () => void;
  deliverWebhook(delivery: BillingWebhookDelivery): Promise<number[]>;
}

const SITE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const DEFAULT_LIMIT: RateLimit = { perMinute: 150 };
const TEN_DIGITS = /^\d{10}$/;

// ---------- errors ----------

interface BillingErrorFields {
  message: string;
  api_error_code: string;
  type?: 'invalid_request' | 'payment' | 'operation_failed';
  param?: string;
}

function errorBodyOf(status: number, fields: BillingErrorFields): Record<string, unknown> {
  // The deprecated error_* fields still come with every real error.
  return {
    message: fields.message,
    ...(fields.type ? { type: fields.type } : {}),
    api_error_code: fields.api_error_code,
    ...(fields.param ? { param: fields.param } : {}),
    error_code: fields.api_error_code,
    error_msg: fields.message,
    ...(fields.param ? { error_param: fields.param } : {}),
    http_status_code: status,
  };
}

function billingError(status: number, fields: BillingErrorFields, headers?: Record<string, string>): SimulatorResponse {
  return { status, headers, body: errorBodyOf(status, fields) };
}

/** The error body for injected faults, by status. */
export function billingErrorBody(status: number, message: string): unknown {
  const code: Record<number, string> = {
    400: 'param_wrong_value',
    401: 'api_authentication_failed',
    403: 'api_authorization_failed',
    404: 'resource_not_found',
    429: 'api_request_limit_exceeded',
    503: 'internal_temporary_error',
  };
  return errorBodyOf(status, { message, api_error_code: code[status] ?? 'internal_error', ...(status === 400 ? { type: 'invalid_request' as const } : {}) });
}

class ParamError extends Error {
  constructor(
    readonly param: string,
    reason: string,
  ) {
    super(`${param} : ${reason}`);
  }
}

const NOT_FOUND: BillingErrorFields = { message: "Sorry, we couldn't find that resource", api_error_code: 'resource_not_found' };

// ---------- list parameters (pure) ----------

type FilterKind = { kind: 'string' } | { kind: 'enum'; values: readonly string[] } | { kind: 'timestamp' };
const text: FilterKind = { kind: 'string' };
const time: FilterKind = { kind: 'timestamp' };
const oneOf = (values: readonly string[]): FilterKind => ({ kind: 'enum', values });

export type BillingListName = BillingObjectName | 'events';

interface ListSpec {
  sortable: BillingOrdering[];
  defaultSort: { field: BillingOrdering; direction: 'asc' | 'desc' };
  filters: Record<string, FilterKind>;
}

const LIST_SPECS: Record<BillingListName, ListSpec> = {
  customers: {
    sortable: ['created_at', 'updated_at'],
    defaultSort: { field: 'created_at', direction: 'asc' },
    filters: { id: text, email: text, first_name: text, last_name: text, created_at: time, updated_at: time, auto_collection: oneOf(['on', 'off']) },
  },
  subscriptions: {
    sortable: ['created_at', 'updated_at'],
    defaultSort: { field: 'created_at', direction: 'asc' },
    filters: {
      id: text,
      customer_id: text,
      status: oneOf(BILLING_SUBSCRIPTION_STATUSES),
      created_at: time,
      updated_at: time,
      next_billing_at: time,
      cancelled_at: time,
    },
  },
  invoices: {
    sortable: ['date', 'updated_at'],
    defaultSort: { field: 'date', direction: 'asc' },
    filters: { id: text, customer_id: text, subscription_id: text, status: oneOf(BILLING_INVOICE_STATUSES), date: time, updated_at: time, paid_at: time },
  },
  transactions: {
    sortable: ['date', 'updated_at'],
    defaultSort: { field: 'date', direction: 'asc' },
    filters: {
      id: text,
      customer_id: text,
      subscription_id: text,
      type: oneOf(BILLING_TRANSACTION_TYPES),
      status: oneOf(BILLING_TRANSACTION_STATUSES),
      payment_method: oneOf(['card', 'direct_debit', 'bank_transfer', 'other']),
      date: time,
      updated_at: time,
    },
  },
  // Newest first by default (an assumption: the platform's documentation does not say).
  events: {
    sortable: ['occurred_at'],
    defaultSort: { field: 'occurred_at', direction: 'desc' },
    filters: { id: text, event_type: text, source: oneOf(['admin_console', 'api', 'scheduled_job', 'system']), webhook_status: oneOf(['not_configured', 'scheduled', 'succeeded', 're_scheduled', 'failed']), occurred_at: time },
  },
};

const OPERATORS: Record<FilterKind['kind'], string[]> = {
  string: ['is', 'is_not', 'starts_with', 'in', 'not_in'],
  enum: ['is', 'is_not', 'in', 'not_in'],
  timestamp: ['after', 'before', 'on', 'between'],
};

export interface BillingListParams {
  limit: number;
  offset?: SortKey;
  sort: { field: BillingOrdering; direction: 'asc' | 'desc' };
  includeDeleted: boolean;
  matches: (record: Record<string, unknown>) => boolean;
}

function parseJsonArray(param: string, value: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ParamError(param, 'invalid JSON array');
  }
  if (!Array.isArray(parsed)) throw new ParamError(param, 'should be a JSON array');
  return parsed;
}

function parseTimestamp(param: string, value: unknown): number {
  const raw = String(value);
  if (!TEN_DIGITS.test(raw)) throw new ParamError(param, `invalid timestamp '${raw}', expected Unix seconds`);
  return Number(raw);
}

/** One `attr[op]=value` filter as a predicate on the record's field. */
export function filterPredicate(attribute: string, operator: string, value: string, kind: FilterKind): (field: unknown) => boolean {
  const param = `${attribute}[${operator}]`;
  if (!OPERATORS[kind.kind].includes(operator)) throw new ParamError(param, `unsupported operator '${operator}'`);
  const checkEnum = (candidate: unknown): string => {
    const word = String(candidate);
    if (kind.kind === 'enum' && !kind.values.includes(word)) throw new ParamError(param, `invalid value '${word}'`);
    return word;
  };
  switch (operator) {
    case 'is': {
      const wanted = checkEnum(value);
      return (field) => field === wanted;
    }
    case 'is_not': {
      const unwanted = checkEnum(value);
      return (field) => field !== unwanted;
    }
    case 'starts_with':
      return (field) => typeof field === 'string' && field.startsWith(value);
    case 'in':
    case 'not_in': {
      const values = new Set(parseJsonArray(param, value).map(checkEnum));
      const wanted = operator === 'in';
      return (field) => (field !== undefined && values.has(String(field))) === wanted;
    }
    case 'after': {
      const bound = parseTimestamp(param, value);
      return (field) => typeof field === 'number' && field > bound;
    }
    case 'before': {
      const bound = parseTimestamp(param, value);
      return (field) => typeof field === 'number' && field < bound;
    }
    case 'on': {
      // The same UTC day as the given timestamp.
      const day = Math.floor(parseTimestamp(param, value) / 86_400);
      return (field) => typeof field === 'number' && Math.floor(field / 86_400) === day;
    }
    default: {
      const range = parseJsonArray(param, value);
      if (range.length !== 2) throw new ParamError(param, 'should be a JSON array of two timestamps');
      const from = parseTimestamp(param, range[0]);
      const to = parseTimestamp(param, range[1]);
      return (field) => typeof field === 'number' && field >= from && field <= to;
    }
  }
}

/** `next_offset`: the last row's sort value and id, as a JSON array string (opaque to clients). */
export function encodeOffset(key: SortKey): string {
  return JSON.stringify([key[0] === null ? '' : String(key[0]), key[1]]);
}

export function decodeOffset(offset: string): SortKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(offset);
  } catch {
    throw new ParamError('offset', 'invalid value');
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') {
    throw new ParamError('offset', 'invalid value');
  }
  const [value, id] = parsed as [string, string];
  if (!/^(-?\d+)?$/.test(value) || id.length === 0) throw new ParamError('offset', 'invalid value');
  return [value === '' ? null : Number(value), id];
}

/** Reads a list request's parameters; anything the platform would refuse throws a ParamError. */
export function parseBillingListParams(list: BillingListName, query: URLSearchParams): BillingListParams {
  const spec = LIST_SPECS[list];
  const params: BillingListParams = { limit: 10, sort: spec.defaultSort, includeDeleted: false, matches: () => true };
  const checks: Array<(record: Record<string, unknown>) => boolean> = [];
  let sortGiven = false;
  for (const [key, value] of query) {
    if (key === 'limit') {
      if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new ParamError('limit', 'The value must be between 1 and 100');
      params.limit = Number(value);
      continue;
    }
    if (key === 'offset') {
      params.offset = decodeOffset(value);
      continue;
    }
    if (key === 'include_deleted') {
      if (value !== 'true' && value !== 'false') throw new ParamError(key, 'invalid boolean');
      params.includeDeleted = value === 'true';
      continue;
    }
    const bracket = /^([a-z_]+)\[([a-z_]+)\]$/.exec(key);
    if (!bracket) throw new ParamError(key, 'unknown parameter');
    const [, attribute, operator] = bracket as unknown as [string, string, string];
    if (attribute === 'sort_by') {
      if (sortGiven || (operator !== 'asc' && operator !== 'desc')) throw new ParamError(key, 'invalid sort');
      if (!spec.sortable.includes(value as BillingOrdering)) throw new ParamError(key, `cannot sort by '${value}'`);
      params.sort = { field: value as BillingOrdering, direction: operator };
      sortGiven = true;
      continue;
    }
    const kind = spec.filters[attribute];
    if (!kind) throw new ParamError(key, 'unknown parameter');
    const predicate = filterPredicate(attribute, operator, value, kind);
    checks.push((record) => predicate(record[attribute]));
  }
  params.matches = (record) => checks.every((check) => check(record));
  return params;
}

/** The event a change of this kind records. */
export function billingEventTypeForUpdate(object: BillingObjectName, before: object, after: object): string {
  const was = (before as Record<string, unknown>).status;
  const is = (after as Record<string, unknown>).status;
  const became = (status: string): boolean => is === status && was !== status;
  switch (object) {
    case 'customers':
      return 'customer_changed';
    case 'subscriptions':
      if (became('cancelled')) return 'subscription_cancelled';
      if (became('paused')) return 'subscription_paused';
      if (became('non_renewing')) return 'subscription_cancellation_scheduled';
      if (became('active') && was === 'paused') return 'subscription_resumed';
      if (became('active') && was === 'non_renewing') return 'subscription_scheduled_cancellation_removed';
      if (became('active')) return 'subscription_activated';
      return 'subscription_changed';
    case 'invoices':
      return 'invoice_updated';
    case 'transactions':
      if ((after as BillingTransaction).type === 'payment' && became('success')) return 'payment_succeeded';
      if ((after as BillingTransaction).type === 'payment' && became('failure')) return 'payment_failed';
      return 'transaction_updated';
  }
}

// ---------- the simulator ----------

export async function startBillingSimulator(options: BillingSimulatorOptions = {}): Promise<BillingSimulator> {
  const clock = new SandboxClock();
  const factory = new BillingRecordFactory(options.seed ?? 1);
  const sites = new Map<string, BillingSiteData>();
  const siteControls = new Map<string, BillingSite>();
  /** site -> key -> type */
  const keys = new Map<string, Map<string, BillingKeyType>>();
  let limit: RateLimit | undefined = DEFAULT_LIMIT;
  const limiter = new RateLimiter(() => limit, () => clock.now());
  const hooks = new Set<RequestHook>();
  let apiRequests = 0;

  const nowSeconds = (): number => clock.nowSeconds();

  // ----- HTTP -----

  async function route(request: SimulatorRequest): Promise<SimulatorResponse | undefined> {
    apiRequests += 1;
    for (const hook of hooks) await hook(request, apiRequests);
    return answer(request);
  }

  function answer(request: SimulatorRequest): SimulatorResponse {
    const segments = request.path.split('/').filter(Boolean).map(decodeURIComponent);
    if (segments[0] !== 'sites' || segments.length < 2) return billingError(404, NOT_FOUND);
    const siteName = segments[1] as string;
    const data = sites.get(siteName);
    if (!data) return billingError(404, { message: "Sorry, we couldn't find that site", api_error_code: 'site_not_found' });

    const key = basicUsername(request.headers.authorization);
    const keyType = key === undefined ? undefined : keys.get(siteName)?.get(key);
    if (!key || !keyType) {
      return billingError(401, { message: 'Sorry, authentication failed. Invalid api key', api_error_code: 'api_authentication_failed' });
    }
    if (keyType === 'publishable' || (keyType === 'read-only' && request.method !== 'GET')) {
      return billingError(403, {
        message: 'Sorry, authorization failed. The key used does not have the permission to perform this operation',
        api_error_code: 'api_authorization_failed',
      });
    }
    const broken = limiter.check(`${siteName}\u0000${key}`);
    if (broken) {
      const headers = broken.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(broken.retryAfterSeconds) };
      return billingError(
        429,
        {
          message: 'Sorry, access has been blocked temporarily due to request count exceeding acceptable limits. Please try after some time.',
          api_error_code: 'api_request_limit_exceeded',
        },
        headers,
      );
    }

    const [api, version, resource, id, sub] = segments.slice(2);
    if (api !== 'api' || version !== 'v2' || request.method !== 'GET' || resource === undefined) return billingError(404, NOT_FOUND);
    // There is no /api/v2/payments on the platform: payments are transactions.
    if (!isListName(resource)) return billingError(404, NOT_FOUND);
    try {
      if (id === undefined) return list(data, resource, request.query);
      if (sub === undefined) return retrieve(data, resource, id);
      if (resource === 'invoices' && sub === 'payments' && segments.length === 7) return invoicePayments(data, id, request.query);
      return billingError(404, NOT_FOUND);
    } catch (error) {
      if (error instanceof ParamError) {
        return billingError(400, { message: error.message, api_error_code: 'param_wrong_value', type: 'invalid_request', param: error.param });
      }
      throw error;
    }
  }

  function collectionOf(data: BillingSiteData, name: BillingListName): RecordCollection<{ id: string }, BillingOrdering> {
    return (name === 'events' ? data.events : data.collection(name)) as unknown as RecordCollection<{ id: string }, BillingOrdering>;
  }

  function rowOf(data: BillingSiteData, name: BillingListName, record: object): Record<string, unknown> {
    const row: Record<string, unknown> = { [BILLING_SINGULAR[name]]: record };
    if (name === 'subscriptions') {
      const customer = data.customers.get((record as BillingSubscription).customer_id);
      if (customer) row.customer = customer;
    }
    return row;
  }

  function page(
    data: BillingSiteData,
    name: BillingListName,
    params: BillingListParams,
    extra?: (record: Record<string, unknown>) => boolean,
  ): SimulatorResponse {
    const collection = collectionOf(data, name);
    const result = collection.scan(params.sort.field, {
      direction: params.sort.direction,
      ...(params.offset ? { after: params.offset } : {}),
      limit: params.limit,
      matches: (record) => {
        const fields = record as unknown as Record<string, unknown>;
        return (params.includeDeleted || fields.deleted !== true) && params.matches(fields) && (!extra || extra(fields));
      },
    });
    const body: Record<string, unknown> = { list: result.records.map((record) => rowOf(data, name, record)) };
    const last = result.records.at(-1);
    if (result.hasMore && last) body.next_offset = encodeOffset(collection.keyOf(params.sort.field, last));
    return { status: 200, body };
  }

  function list(data: BillingSiteData, name: BillingListName, query: URLSearchParams): SimulatorResponse {
    return page(data, name, parseBillingListParams(name, query));
  }

  function invoicePayments(data: BillingSiteData, invoiceId: string, query: URLSearchParams): SimulatorResponse {
    const invoice = data.invoices.get(invoiceId);
    if (!invoice || invoice.deleted) return billingError(404, { ...NOT_FOUND, message: `${invoiceId} not found` });
    return page(data, 'transactions', parseBillingListParams('transactions', query), (record) =>
      (record as unknown as BillingTransaction).linked_invoices.some((link) => link.invoice_id === invoiceId),
    );
  }

  function retrieve(data: BillingSiteData, name: BillingListName, id: string): SimulatorResponse {
    const record = collectionOf(data, name).get(id) as Record<string, unknown> | undefined;
    if (!record || record.deleted === true) return billingError(404, { ...NOT_FOUND, message: `${id} not found` });
    return { status: 200, body: rowOf(data, name, record) };
  }

  const server = await startSimulatorServer({
    name: 'billing',
    route,
    errorBody: billingErrorBody,
    stats: () => ({ rateLimited: limiter.rejected }),
    ...(options.latency === undefined ? {} : { latency: options.latency }),
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.host === undefined ? {} : { host: options.host }),
  });

  // ----- control -----

  function siteControl(data: BillingSiteData): BillingSite {
    function recordEvent(eventType: string, content: Record<string, unknown>, source: BillingEvent['source'] = 'api'): BillingEvent {
      const event: BillingEvent = {
        id: factory.eventId(),
        object: 'event',
        occurred_at: nowSeconds(),
        source,
        api_version: 'v2',
        event_type: eventType,
        webhook_status: 'scheduled',
        content: snapshot(content),
      };
      data.events.put(event);
      return event;
    }

    /** What an event about this record carries: the record, and the resources the platform adds. */
    function contentFor(object: BillingObjectName, record: object): Record<string, unknown> {
      const content: Record<string, unknown> = { [BILLING_SINGULAR[object]]: record };
      const fields = record as Record<string, unknown>;
      const customer = typeof fields.customer_id === 'string' ? data.customers.get(fields.customer_id) : undefined;
      if (customer) content.customer = customer;
      if (object === 'transactions' || object === 'invoices') {
        const subscription = typeof fields.subscription_id === 'string' ? data.subscriptions.get(fields.subscription_id) : undefined;
        if (subscription) content.subscription = subscription;
      }
      if (object === 'transactions') {
        const invoiceId = (record as BillingTransaction).linked_invoices[0]?.invoice_id;
        const invoice = invoiceId ? data.invoices.get(invoiceId) : undefined;
        if (invoice) content.invoice = invoice;
      }
      return content;
    }

    function locate<K extends BillingObjectName>(object: K, id: string): BillingRecordOf[K] {
      const record = data.collection(object).get(id);
      if (!record) throw new Error(`no ${BILLING_SINGULAR[object]} ${id} on billing site ${data.site}`);
      return record;
    }

    /** The version fields of a record changed now: `updated_at` is now, `resource_version` only grows. */
    function touched(record: { resource_version: number }): { updated_at: number; resource_version: number } {
      return { updated_at: nowSeconds(), resource_version: Math.max(record.resource_version + 1, clock.now()) };
    }

    function seedVersion(index: number, createdAt: number, seed: BillingSeedOptions) {
      return factory.version(createdAt, nowSeconds(), lacksUpdatedAt(index, seed.withoutUpdatedAt ?? 0.01));
    }

    const control: BillingSite = {
      name: data.site,
      data,
      url: `${server.url}/sites/${data.site}`,

      seedCustomers(count, seed = {}) {
        const now = nowSeconds();
        const customers = Array.from({ length: count }, (_, index) => {
          const createdAt = seededCreated(index, count, now, seed);
          return factory.customer(data, createdAt, seedVersion(index, createdAt, seed), seed.fields?.(index));
        });
        data.customers.putMany(customers);
        return customers;
      },

      seedSubscriptions(seed = {}) {
        const now = nowSeconds();
        const customers = seed.customerIds ? seed.customerIds.map((id) => locate('customers', id)) : [...data.customers.sorted('created_at')];
        const subscriptions: BillingSubscription[] = [];
        for (const customer of customers) {
          for (let n = 0; n < (seed.perCustomer ?? 1); n += 1) {
            const index = subscriptions.length;
            const createdAt = Math.min(now, customer.created_at + Math.floor(factory.random() * 3600));
            subscriptions.push(
              factory.subscription(data, customer.id, factory.statusFor(index, seed.statuses), createdAt, now, seedVersion(index, createdAt, seed)),
            );
          }
        }
        data.subscriptions.putMany(subscriptions);
        return subscriptions;
      },

      seedInvoices(seed = {}) {
        const now = nowSeconds();
        const invoices: BillingInvoice[] = [];
        const transactions: BillingTransaction[] = [];
        for (const subscription of data.subscriptions.sorted('created_at')) {
          if (subscription.status === 'future') continue;
          const months = subscription.billing_period_unit === 'year' ? 12 : 1;
          const latest = subscription.current_term_start ?? subscription.started_at ?? subscription.created_at;
          for (let back = 0; back < (seed.perSubscription ?? 1); back += 1) {
            const date = addMonths(latest, -months * back);
            if (date < subscription.created_at || date > now) break;
            // In trial nothing is charged; a failed latest payment on some active subscriptions gives dunning data.
            if (subscription.status === 'in_trial') break;
            const paid = !(back === 0 && invoices.length % 10 === 9);
            const index = invoices.length;
            const { invoice, transaction } = factory.invoiceWithPayment(data, subscription, paid, date, seedVersion(index, date, seed));
            invoices.push(invoice);
            transactions.push(transaction);
          }
        }
        data.invoices.putMany(invoices);
        data.transactions.putMany(transactions);
        return invoices;
      },

      createCustomer(fields = {}) {
        const now = nowSeconds();
        const customer = factory.customer(data, now, { updated_at: now, resource_version: clock.now() }, fields);
        data.customers.put(customer);
        return { record: customer, events: [recordEvent('customer_created', contentFor('customers', customer))] };
      },

      createSubscription(customerId, fields = {}) {
        locate('customers', customerId);
        const now = nowSeconds();
        const subscription = factory.subscription(data, customerId, fields.status ?? 'active', now, now, { updated_at: now, resource_version: clock.now() }, fields);
        data.subscriptions.put(subscription);
        return { record: subscription, events: [recordEvent('subscription_created', contentFor('subscriptions', subscription))] };
      },

      createInvoice(subscriptionId, invoiceOptions = {}) {
        const subscription = locate('subscriptions', subscriptionId);
        const now = nowSeconds();
        const paid = invoiceOptions.paid ?? true;
        const { invoice, transaction } = factory.invoiceWithPayment(data, subscription, paid, now, { updated_at: now, resource_version: clock.now() });
        data.invoices.put(invoice);
        data.transactions.put(transaction);
        return {
          record: invoice,
          events: [
            recordEvent('invoice_generated', contentFor('invoices', invoice)),
            recordEvent(paid ? 'payment_succeeded' : 'payment_failed', contentFor('transactions', transaction)),
          ],
        };
      },

      update(object, id, patch) {
        const record = locate(object, id);
        const updated = { ...record, ...patch, id: record.id, ...touched(record) } as BillingRecordOf[typeof object];
        if (object === 'subscriptions') {
          const subscription = updated as BillingSubscription;
          if (subscription.status === 'cancelled' && subscription.cancelled_at === undefined) subscription.cancelled_at = nowSeconds();
          if (subscription.status === 'cancelled') delete subscription.next_billing_at;
        }
        data.collection(object).put(updated);
        const eventType = billingEventTypeForUpdate(object, record, updated);
        return { record: updated, events: [recordEvent(eventType, contentFor(object, updated))] };
      },

      delete(object, id) {
        const record = locate(object, id);
        const deleted = { ...record, deleted: true, ...touched(record) } as BillingRecordOf[typeof object];
        data.collection(object).put(deleted);
        return { record: deleted, events: [recordEvent(`${BILLING_SINGULAR[object]}_deleted`, contentFor(object, deleted))] };
      },

      recordEvent(eventType, content, eventOptions = {}) {
        return recordEvent(eventType, content, eventOptions.source);
      },

      events() {
        return [...data.events.sorted('occurred_at')].reverse();
      },
    };
    return control;
  }

  function findSite(site: string): BillingSite {
    const control = siteControls.get(site);
    if (!control) throw new Error(`no billing site ${site}: addSite first`);
    return control;
  }

  return {
    ...server,
    state: { sites },
    clock,
    now: () => clock.now(),
    setNow: (ms) => clock.setNow(ms),
    advance: (ms) => clock.advance(ms),

    addSite(site) {
      if (!SITE_NAME.test(site)) throw new Error('a site name is lower-case letters, digits and dashes');
      const existing = siteControls.get(site);
      if (existing) return existing;
      const data = new BillingSiteData(site);
      sites.set(site, data);
      keys.set(site, new Map());
      const control = siteControl(data);
      siteControls.set(site, control);
      return control;
    },
    site: findSite,
    addApiKey(site, key, keyOptions) {
      findSite(site);
      if (key.length === 0 || key.includes(':')) throw new Error('a billing key is a non-empty string without ":"');
      keys.get(site)?.set(key, keyOptions.type);
    },
    removeApiKey(site, key) {
      keys.get(site)?.delete(key);
    },
    setRateLimit(newLimit) {
      limit = newLimit;
      limiter.reset();
    },
    rateLimited: () => limiter.rejected,
    onRequest(hook) {
      hooks.add(hook);
      return () => hooks.delete(hook);
    },

    async deliverWebhook(delivery) {
      const body = JSON.stringify(delivery.event);
      const headers: Record<string, string> = { 'user-agent': 'ChargeBee' };
      if (delivery.basicAuth) {
        headers.authorization = `Basic ${Buffer.from(`${delivery.basicAuth.username}:${delivery.basicAuth.password}`).toString('base64')}`;
      }
      const statuses = await deliverWithRetries(() => postWebhook(delivery.url, body, headers, delivery.timeoutMs), delivery);
      markDelivered(delivery.event, statuses);
      return statuses;
    },
  };

  /** The platform shows each event's webhook outcome; keep the stored copy in step. */
  function markDelivered(event: BillingEvent, statuses: number[]): void {
    const last = statuses.at(-1) ?? 0;
    for (const data of sites.values()) {
      const stored = data.events.get(event.id);
      if (stored) data.events.put({ ...stored, webhook_status: last >= 200 && last < 300 ? 'succeeded' : 'failed' });
    }
  }
}

function isListName(word: string): word is BillingListName {
  return word === 'events' || word === 'customers' || word === 'subscriptions' || word === 'invoices' || word === 'transactions';
}

/** The key from `Authorization: Basic base64(key:)`; the platform takes no other scheme. */
function basicUsername(header: string | undefined): string | undefined {
  if (!header?.toLowerCase().startsWith('basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const username = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
  return username || undefined;
}
