import { createHmac, randomBytes } from 'node:crypto';
import { SandboxClock } from './clock';
import {
  addMonths,
  fieldOf,
  latestInvoiceStatus,
  PAYMENT_SUBSCRIPTION_STATUSES,
  PaymentDataset,
  PaymentRecordFactory,
  seededCreated,
  type PaymentCharge,
  type PaymentCustomer,
  type PaymentEvent,
  type PaymentIntent,
  type ListedRecord,
  type PaymentInvoice,
  type PaymentMode,
  type PaymentObjectName,
  type PaymentRecordOf,
  type PaymentSubscription,
  type PaymentSubscriptionStatus,
  type SeedTiming,
} from './payment-records';
import { RateLimiter, type RateLimit } from './rate-limit';
import { snapshot, type RecordCollection, type ScanResult, type SortKey } from './records';
import { startSimulatorServer, type Latency, type RunningSimulator, type SimulatorRequest, type SimulatorResponse } from './simulator-server';
import { deliverWithRetries, postWebhook, type DeliveryOptions } from './webhook-delivery';

/**
 * A stand-in for the payment platform's /v1 API (the Payments API reference; docs/platform-contracts.md, "Payment platform"): secret,
 * restricted and publishable keys, test and live data kept apart, newest-first cursor lists,
 * events for 30 days, rate limits per key, and webhooks signed exactly as the platform signs them.
 */

export * from './payment-records';

/** The stripe package this project tests against pins this version; events carry it. */
const API_VERSION = '2026-10-28.endive';
const EVENT_RETENTION_SECONDS = 30 * 86_400;
const MAX_EVENT_TYPES = 20;

export type PaymentKeyAccess = 'read' | 'write' | 'none';
/** What a restricted key may touch: one level for everything, or per resource (absent means none). */
export type PaymentResource = PaymentObjectName | 'events' | 'balance';

export interface PaymentApiKeyOptions {
  access?: PaymentKeyAccess | Partial<Record<PaymentResource, PaymentKeyAccess>>;
}

export interface PaymentSimulatorOptions {
  port?: number;
  host?: string;
  /** Seed of the id and name generator; the same seed gives the same records. Default 1. */
  seed?: number;
  /** The platform account the keys belong to (it appears in permission errors). */
  accountId?: string;
  /** How long each answer takes (default none); `setLatency` or `POST /__sandbox/latency` changes it later. */
  latency?: Latency;
}

/** A change made through the control methods, and the events the platform recorded for it. */
export interface PaymentMutation<T> {
  record: T;
  events: PaymentEvent[];
}

export interface PaymentWebhookDelivery extends DeliveryOptions {
  url: string;
  event: PaymentEvent;
  /** The endpoint's signing secret (`whsec_...`). */
  secret: string;
  /** Unix seconds to sign with; default the simulator's clock at each attempt. */
  timestamp?: number;
  /** More signing secrets, each adding a `v1` (the platform signs with old and new secrets while one is rolled). */
  extraSignatures?: string[];
}

export type RequestHook = (request: SimulatorRequest, count: number) => void | Promise<void>;

export interface PaymentSimulator extends RunningSimulator {
  state: Record<PaymentMode, PaymentDataset>;
  clock: SandboxClock;
  now(): number;
  setNow(ms: number): void;
  advance(ms: number): void;
  addApiKey(key: string, options?: PaymentApiKeyOptions): void;
  /** Revokes a key, as a user can on the platform at any time. */
  removeApiKey(key: string): void;
  /**
   * Per API key. Default 25/s for test keys and 100/s for live keys; undefined turns limits off
   * (the per-endpoint limit too). `perEndpoint` sets the limit each endpoint (method and path
   * shape, e.g. `GET /v1/customers`) has of its own on top, per key: the documented 25/s unless given.
   */
  setRateLimit(limit: RateLimit | undefined, options?: { mode?: PaymentMode; perEndpoint?: RateLimit }): void;
  /** 429s served by the rate limits, the global and the per-endpoint one (injected faults not included), to every key or to one. */
  rateLimited(key?: string): number;
  /** Called before each API request is answered; returns a function that removes the hook. */
  onRequest(hook: RequestHook): () => void;
  /** The list pages answered (200s of the object lists, events aside), by object and how full they were, since the start or `resetListAnswers`. */
  listAnswers(): Partial<Record<PaymentObjectName, ListAnswers>>;
  resetListAnswers(): void;
  seedCustomers(count: number, options?: PaymentSeedCustomers): PaymentCustomer[];
  seedSubscriptions(options?: PaymentSeedSubscriptions): PaymentSubscription[];
  seedInvoices(options?: PaymentSeedInvoices): PaymentInvoice[];
  createCustomer(fields?: Partial<PaymentCustomer>, options?: { mode?: PaymentMode }): PaymentMutation<PaymentCustomer>;
  createSubscription(customerId: string, fields?: Partial<PaymentSubscription>): PaymentMutation<PaymentSubscription>;
  /** A new invoice for the subscription's current period, with its payment intent and charge. */
  createInvoice(subscriptionId: string, status?: 'paid' | 'open'): PaymentMutation<PaymentInvoice>;
  update<K extends PaymentObjectName>(object: K, id: string, patch: Partial<PaymentRecordOf[K]>): PaymentMutation<PaymentRecordOf[K]>;
  /** Customers are deleted (their subscriptions canceled); subscriptions are canceled. */
  delete(object: 'customers' | 'subscriptions', id: string): PaymentMutation<PaymentCustomer | PaymentSubscription>;
  /** Records an arbitrary event (for webhook tests), as the platform would. */
  recordEvent(type: string, object: Record<string, unknown>, options?: { mode?: PaymentMode; previousAttributes?: Record<string, unknown> }): PaymentEvent;
  /** Recorded events, newest first. */
  events(mode?: PaymentMode): PaymentEvent[];
  /** Delivers an event; answers every status received (0 = no answer). */
  deliverWebhook(delivery: PaymentWebhookDelivery): Promise<number[]>;
}

/**
 * List pages answered, by how full: `empty` (no record), `part` (fewer than the `limit` asked for)
 * with `partShort` (the records they lacked, summed), `full`; `records` summed over them all. A
 * benchmark reads where a client's requests went beyond one per full page.
 */
export interface ListAnswers {
  pages: number;
  records: number;
  empty: number;
  part: number;
  partShort: number;
  full: number;
  /** Pages asked with a `limit` under 100. */
  smallLimit: number;
}

export interface PaymentSeedCustomers extends SeedTiming {
  mode?: PaymentMode;
  fields?: (index: number) => Partial<PaymentCustomer>;
}

export interface PaymentSeedSubscriptions {
  mode?: PaymentMode;
  /** Subscriptions per customer. Default 1. */
  perCustomer?: number;
  /** Only these customers; default every customer of the mode. */
  customerIds?: string[];
  /** Statuses to cycle through; default a realistic mix with every status present. */
  statuses?: PaymentSubscriptionStatus[];
}

export interface PaymentSeedInvoices {
  mode?: PaymentMode;
  /** Invoices per subscription, one per past period, newest first. Default 1. */
  perSubscription?: number;
}

interface ApiKey {
  mode: PaymentMode;
  kind: 'secret' | 'restricted' | 'publishable';
  access: PaymentKeyAccess | Partial<Record<PaymentResource, PaymentKeyAccess>>;
}

const KEY_SHAPE = /^(sk|rk|pk)_(test|live)_[A-Za-z0-9]+$/;
const DEFAULT_LIMITS: Record<PaymentMode, RateLimit> = { test: { perSecond: 25 }, live: { perSecond: 100 } };
/** "API endpoints have a default limit of 25 requests per second" (the platform's rate-limit page), on top of the global one. */
const DEFAULT_ENDPOINT_LIMIT: RateLimit = { perSecond: 25 };

/**
 * The endpoint a request counts against: each named operation is its own (`GET /v1/customers`
 * lists, `GET /v1/customers/{id}` retrieves), whatever the id.
 */
function endpointOf(method: string, segments: readonly string[]): string {
  return `${method} /${segments.map((segment, at) => (at === 2 ? '{id}' : segment)).join('/')}`;
}

// ---------- errors ----------

type ErrorType = 'invalid_request_error' | 'authentication_error' | 'rate_limit_error' | 'api_error';

function paymentError(
  status: number,
  type: ErrorType,
  message: string,
  extra: { code?: string; param?: string } = {},
  headers?: Record<string, string>,
): SimulatorResponse {
  return { status, headers, body: { error: { type, ...extra, message } } };
}

/** The error body for injected faults, by status. */
export function paymentErrorBody(status: number, message: string): unknown {
  if (status === 401) return { error: { type: 'authentication_error', code: 'api_key_expired', message } };
  if (status === 429) return { error: { type: 'rate_limit_error', code: 'rate_limit', message } };
  if (status >= 500) return { error: { type: 'api_error', message } };
  return { error: { type: 'invalid_request_error', message } };
}

/** How the platform shows a key in messages: prefix, stars, last four. */
function maskKey(key: string): string {
  const prefix = key.slice(0, key.indexOf('_', 3) + 1);
  return `${prefix}${'*'.repeat(Math.max(0, key.length - prefix.length - 4))}${key.slice(-4)}`;
}

const SINGULAR: Record<PaymentObjectName | 'events', string> = {
  customers: 'customer',
  subscriptions: 'subscription',
  invoices: 'invoice',
  payment_intents: 'payment_intent',
  charges: 'charge',
  events: 'event',
};

// ---------- pure decisions ----------

/** The key's own words, from the Authorization header (Bearer, or Basic with the key as username). */
export function keyFromAuthorization(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value.trim();
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.slice(0, decoded.includes(':') ? decoded.indexOf(':') : undefined) || undefined;
  }
  return undefined;
}

/** `Stripe-Signature` exactly as the platform writes it: `t=...,v1=...[,v1=...][,v0=...]`. */
export function paymentSignatureHeader(payload: string, timestamp: number, secrets: string[], testModeV0 = false): string {
  const signed = `${timestamp}.${payload}`;
  const parts = [`t=${timestamp}`, ...secrets.map((secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`)];
  // Test-mode deliveries also carry a v0 signed with a throwaway key; receivers must ignore it.
  if (testModeV0) parts.push(`v0=${createHmac('sha256', randomBytes(16)).update(signed).digest('hex')}`);
  return parts.join(',');
}

/** Top-level fields whose value changed, with their old values (`previous_attributes`). */
export function previousAttributes(before: object, after: object): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  const old = before as Record<string, unknown>;
  const now = after as Record<string, unknown>;
  for (const key of Object.keys(now)) {
    if (JSON.stringify(old[key]) !== JSON.stringify(now[key])) previous[key] = old[key] ?? null;
  }
  return previous;
}

/** The event types the platform emits when a record of this kind changes like this. */
export function eventTypesForUpdate(object: PaymentObjectName, before: object, after: object): string[] {
  const was = before as Record<string, unknown>;
  const is = after as Record<string, unknown>;
  const became = (status: string): boolean => is.status === status && was.status !== status;
  switch (object) {
    case 'customers':
      return ['customer.updated'];
    case 'subscriptions': {
      // A subscription that ends is "deleted" in the platform's event names.
      if (became('canceled') || became('incomplete_expired')) return ['customer.subscription.deleted'];
      const types = ['customer.subscription.updated'];
      if (became('paused')) types.push('customer.subscription.paused');
      if (was.status === 'paused' && is.status !== 'paused') types.push('customer.subscription.resumed');
      return types;
    }
    case 'invoices': {
      const types = ['invoice.updated'];
      if (became('paid')) types.push('invoice.paid', 'invoice.payment_succeeded');
      if (became('void')) types.push('invoice.voided');
      if (became('uncollectible')) types.push('invoice.marked_uncollectible');
      if (is.status === 'open' && Number(is.attempt_count) > Number(was.attempt_count)) types.push('invoice.payment_failed');
      return types;
    }
    case 'payment_intents': {
      if (became('succeeded')) return ['payment_intent.succeeded'];
      if (became('requires_payment_method')) return ['payment_intent.payment_failed'];
      if (became('canceled')) return ['payment_intent.canceled'];
      if (became('processing')) return ['payment_intent.processing'];
      return [];
    }
    case 'charges': {
      const types = ['charge.updated'];
      if (became('succeeded')) types.push('charge.succeeded');
      if (became('failed')) types.push('charge.failed');
      if (is.refunded === true && was.refunded !== true) types.push('charge.refunded');
      return types;
    }
  }
}

/** `type` filter with the platform's `*` wildcard, e.g. `customer.subscription.*`. */
export function eventTypeMatcher(pattern: string): (type: string) => boolean {
  if (!pattern.includes('*')) return (type) => type === pattern;
  const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return (type) => regex.test(type);
}

// ---------- list parameters ----------

const COMMON_LIST_PARAMS = ['limit', 'starting_after', 'ending_before', 'created', 'expand'];
const LIST_PARAMS: Record<PaymentObjectName | 'events', string[]> = {
  customers: [...COMMON_LIST_PARAMS, 'email', 'test_clock'],
  subscriptions: [...COMMON_LIST_PARAMS, 'customer', 'status', 'price', 'collection_method', 'current_period_end', 'current_period_start', 'test_clock'],
  invoices: [...COMMON_LIST_PARAMS, 'customer', 'subscription', 'status', 'collection_method', 'due_date'],
  payment_intents: [...COMMON_LIST_PARAMS, 'customer'],
  charges: [...COMMON_LIST_PARAMS, 'customer', 'payment_intent', 'transfer_group'],
  events: [...COMMON_LIST_PARAMS, 'type', 'types', 'delivery_success'],
};

interface ListParams {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
  created: { gt?: number; gte?: number; lt?: number; lte?: number };
  /** Simple equality parameters (customer, email, status, ...), by name. */
  equals: Map<string, string>;
  /** Array parameters (`types[]=a` or `types[0]=a`), by name. */
  arrays: Map<string, string[]>;
}

class ParamError extends Error {
  constructor(
    message: string,
    readonly param: string,
    readonly code: string,
  ) {
    super(message);
  }
}

function parseInteger(value: string, param: string): number {
  if (!/^-?\d+$/.test(value)) throw new ParamError(`Invalid integer: ${value}`, param, 'parameter_invalid_integer');
  return Number(value);
}

/** Reads list parameters as the platform does; unknown parameters are refused, not ignored. */
export function parseListParams(object: PaymentObjectName | 'events', query: URLSearchParams): ListParams {
  const allowed = LIST_PARAMS[object];
  const params: ListParams = { limit: 10, created: {}, equals: new Map(), arrays: new Map() };
  for (const [key, value] of query) {
    const match = /^([a-z_]+)(?:\[([a-z0-9_]*)\])?$/.exec(key);
    const name = match?.[1];
    if (!match || !name || !allowed.includes(name)) {
      throw new ParamError(`Received unknown parameter: ${key}`, key, 'parameter_unknown');
    }
    const inner = match[2];
    if (name === 'created') {
      if (inner === undefined) {
        const exact = parseInteger(value, key);
        params.created.gte = exact;
        params.created.lte = exact;
      } else if (inner === 'gt' || inner === 'gte' || inner === 'lt' || inner === 'lte') {
        params.created[inner] = parseInteger(value, key);
      } else {
        throw new ParamError(`Received unknown parameter: ${key}`, key, 'parameter_unknown');
      }
    } else if (name === 'limit') {
      const limit = parseInteger(value, 'limit');
      if (limit < 1 || limit > 100) {
        throw new ParamError(
          `This value must be ${limit < 1 ? 'greater than or equal to 1' : 'less than or equal to 100'} (it currently is '${limit}').`,
          'limit',
          'parameter_invalid_integer',
        );
      }
      params.limit = limit;
    } else if (name === 'starting_after') {
      params.startingAfter = value;
    } else if (name === 'ending_before') {
      params.endingBefore = value;
    } else if (inner !== undefined) {
      // Arrays: `types[]=a`, `types[0]=a`, `expand[]=...`.
      params.arrays.set(name, [...(params.arrays.get(name) ?? []), value]);
    } else {
      params.equals.set(name, value);
    }
  }
  if (params.startingAfter !== undefined && params.endingBefore !== undefined) {
    throw new ParamError('You may only specify one of these parameters: starting_after, ending_before.', 'ending_before', 'parameter_invalid');
  }
  return params;
}

function createdMatches(created: number, bounds: ListParams['created']): boolean {
  return (
    (bounds.gt === undefined || created > bounds.gt) &&
    (bounds.gte === undefined || created >= bounds.gte) &&
    (bounds.lt === undefined || created < bounds.lt) &&
    (bounds.lte === undefined || created <= bounds.lte)
  );
}

/**
 * Whether a list request expands each record's customer. Only `data.customer` is supported, on the
 * lists whose records carry a customer; anything else is refused as the platform refuses it.
 */
function expandsCustomer(object: PaymentObjectName, params: ListParams): boolean {
  const paths = params.arrays.get('expand') ?? [];
  for (const path of paths) {
    if (path !== 'data.customer' || object === 'customers') {
      throw new ParamError(`This property cannot be expanded (${path}).`, 'expand', 'parameter_invalid');
    }
  }
  return paths.length > 0;
}

/** The record-specific filters of a list request, as one predicate. */
function filterFor(object: PaymentObjectName, params: ListParams): (record: ListedRecord) => boolean {
  const checks: Array<(record: ListedRecord) => boolean> = [(record) => createdMatches(record.created, params.created)];
  for (const name of ['customer', 'email', 'subscription', 'payment_intent'] as const) {
    const wanted = params.equals.get(name);
    if (wanted !== undefined) checks.push((record) => fieldOf(record, name) === wanted);
  }
  const status = params.equals.get('status');
  if (object === 'subscriptions') {
    if (status !== undefined && status !== 'all' && status !== 'ended' && !(PAYMENT_SUBSCRIPTION_STATUSES as readonly string[]).includes(status)) {
      throw new ParamError(
        `Invalid status: must be one of ${[...PAYMENT_SUBSCRIPTION_STATUSES, 'all', 'ended'].join(', ')}`,
        'status',
        'parameter_invalid_string',
      );
    }
    if (status === undefined) checks.push((record) => fieldOf(record, 'status') !== 'canceled');
    else if (status === 'ended') checks.push((record) => ['canceled', 'incomplete_expired'].includes(fieldOf(record, 'status') as string));
    else if (status !== 'all') checks.push((record) => fieldOf(record, 'status') === status);
  } else if (object === 'invoices' && status !== undefined) {
    if (!['draft', 'open', 'paid', 'uncollectible', 'void'].includes(status)) {
      throw new ParamError('Invalid status: must be one of draft, open, paid, uncollectible, or void', 'status', 'parameter_invalid_string');
    }
    checks.push((record) => fieldOf(record, 'status') === status);
  }
  const price = params.equals.get('price');
  if (price !== undefined) {
    checks.push((record) => (fieldOf(record, 'items') as PaymentSubscription['items']).data.some((item) => item.price.id === price));
  }
  return (record) => checks.every((check) => check(record));
}

// ---------- the simulator ----------

export async function startPaymentSimulator(options: PaymentSimulatorOptions = {}): Promise<PaymentSimulator> {
  const clock = new SandboxClock();
  const factory = new PaymentRecordFactory(options.seed ?? 1);
  const accountId = options.accountId ?? factory.id('acct_', 16);
  const state: Record<PaymentMode, PaymentDataset> = { test: new PaymentDataset('test'), live: new PaymentDataset('live') };
  const keys = new Map<string, ApiKey>();
  const limits: Record<PaymentMode, RateLimit | undefined> = { ...DEFAULT_LIMITS };
  const limiter = new RateLimiter((key) => {
    const apiKey = keys.get(key);
    return apiKey ? limits[apiKey.mode] : undefined;
  }, () => clock.now());
  // Buckets per key and endpoint (`<key> <endpoint>`); none while the global limit is off.
  const endpointLimits: Record<PaymentMode, RateLimit | undefined> = { test: DEFAULT_ENDPOINT_LIMIT, live: DEFAULT_ENDPOINT_LIMIT };
  const endpointLimiter = new RateLimiter((bucket) => {
    const apiKey = keys.get(bucket.slice(0, bucket.indexOf(' ')));
    return apiKey && limits[apiKey.mode] ? endpointLimits[apiKey.mode] : undefined;
  }, () => clock.now());
  const endpointRejectedFor = new Map<string, number>();
  const hooks = new Set<RequestHook>();
  let apiRequests = 0;
  const noAnswers = (): ListAnswers => ({ pages: 0, records: 0, empty: 0, part: 0, partShort: 0, full: 0, smallLimit: 0 });
  let answersOf: Partial<Record<PaymentObjectName, ListAnswers>> = {};

  const nowSeconds = (): number => clock.nowSeconds();

  function recordEvent(
    dataset: PaymentDataset,
    type: string,
    object: object,
    previous?: Record<string, unknown>,
  ): PaymentEvent {
    const event: PaymentEvent = {
      id: factory.id('evt_'),
      object: 'event',
      api_version: API_VERSION,
      created: nowSeconds(),
      livemode: dataset.mode === 'live',
      pending_webhooks: 0,
      request: { id: null, idempotency_key: null },
      type,
      data: { object: snapshot(object) as Record<string, unknown> },
    };
    if (previous && Object.keys(previous).length > 0) event.data.previous_attributes = snapshot(previous);
    dataset.events.put(event);
    return event;
  }

  /** Finds a record in either mode (ids are unique across both). */
  function locate<K extends PaymentObjectName>(object: K, id: string): { dataset: PaymentDataset; record: PaymentRecordOf[K] } {
    for (const dataset of [state.test, state.live]) {
      const record = dataset.collection(object).get(id);
      if (record) return { dataset, record };
    }
    throw new Error(`no ${SINGULAR[object]} ${id} in the payment simulator`);
  }

  function cancelSubscription(dataset: PaymentDataset, subscription: PaymentSubscription): PaymentMutation<PaymentSubscription> {
    const now = nowSeconds();
    const canceled: PaymentSubscription = { ...subscription, status: 'canceled', canceled_at: now, ended_at: now, cancel_at_period_end: false };
    dataset.subscriptions.put(canceled);
    const event = recordEvent(dataset, 'customer.subscription.deleted', canceled, previousAttributes(subscription, canceled));
    return { record: canceled, events: [event] };
  }

  // ----- HTTP -----

  async function route(request: SimulatorRequest): Promise<SimulatorResponse | undefined> {
    apiRequests += 1;
    for (const hook of hooks) await hook(request, apiRequests);
    const response = answer(request);
    // Not from the seeded generator: seeded records must not depend on how many requests came first.
    // The Date header tells the platform's clock, as the real one does (the gateway versions listed records by it).
    response.headers = { 'request-id': `req_${randomBytes(7).toString('hex')}`, date: new Date(clock.now()).toUTCString(), ...response.headers };
    return response;
  }

  function answer(request: SimulatorRequest): SimulatorResponse {
    const segments = request.path.split('/').filter(Boolean).map(decodeURIComponent);
    if (segments[0] !== 'v1') return unrecognized(request);

    const key = keyFromAuthorization(request.headers.authorization);
    if (!key) {
      return paymentError(
        401,
        'authentication_error',
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
      );
    }
    const apiKey = keys.get(key);
    if (!apiKey) return paymentError(401, 'authentication_error', `Invalid API Key provided: ${maskKey(key)}`);
    if (apiKey.kind === 'publishable') {
      return paymentError(
        403,
        'invalid_request_error',
        'This API call cannot be made with a publishable API key. Please use a secret API key.',
        { code: 'secret_key_required' },
      );
    }

    const resource = segments[1];
    if (resource !== undefined && isResource(resource)) {
      const needed: PaymentKeyAccess = request.method === 'GET' ? 'read' : 'write';
      if (!allows(apiKey, resource, needed)) {
        const permission = `rak_${resource === 'balance' ? 'balance' : SINGULAR[resource]}_${needed}`;
        return paymentError(
          403,
          'invalid_request_error',
          `The provided key '${maskKey(key)}' does not have the required permissions for this endpoint on account '${accountId}'. Having the '${permission}' permission would allow this request to continue.`,
        );
      }
    }

    // The global limit first; a request it lets through still counts against its endpoint's own.
    let broken = limiter.check(key);
    if (!broken) {
      broken = endpointLimiter.check(`${key} ${endpointOf(request.method, segments)}`);
      if (broken) endpointRejectedFor.set(key, (endpointRejectedFor.get(key) ?? 0) + 1);
    }
    if (broken) {
      const headers = broken.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(broken.retryAfterSeconds) };
      return paymentError(
        429,
        'rate_limit_error',
        'Request rate limit exceeded. Spread your requests out over time, and retry with exponential backoff.',
        { code: 'rate_limit' },
        headers,
      );
    }

    if (request.method !== 'GET' || resource === undefined || !isResource(resource) || segments.length > 3) return unrecognized(request);
    const dataset = state[apiKey.mode];
    try {
      if (resource === 'balance') return segments.length === 2 ? balance(dataset) : unrecognized(request);
      if (segments.length === 2) return resource === 'events' ? listEvents(dataset, request.query) : list(dataset, resource, request.query);
      return retrieve(dataset, resource, segments[2] as string);
    } catch (error) {
      if (error instanceof ParamError) return paymentError(400, 'invalid_request_error', error.message, { code: error.code, param: error.param });
      throw error;
    }
  }

  function tally(object: PaymentObjectName, records: number, limit: number): void {
    const answers = (answersOf[object] ??= noAnswers());
    answers.pages += 1;
    answers.records += records;
    if (records === 0) answers.empty += 1;
    else if (records < limit) {
      answers.part += 1;
      answers.partShort += limit - records;
    } else answers.full += 1;
    if (limit < 100) answers.smallLimit += 1;
  }

  function unrecognized(request: SimulatorRequest): SimulatorResponse {
    return paymentError(404, 'invalid_request_error', `Unrecognized request URL (${request.method}: ${request.path}).`);
  }

  function list(dataset: PaymentDataset, object: PaymentObjectName, query: URLSearchParams): SimulatorResponse {
    const params = parseListParams(object, query);
    const recordFilter = filterFor(object, params);
    const collection = dataset.listed(object);
    const cursor = (id: string, param: string): SortKey => {
      const record = collection.get(id) ?? (object === 'customers' ? dataset.deletedCustomers.get(id) : undefined);
      if (!record) throw new ParamError(`No such ${SINGULAR[object]}: '${id}'`, param, 'resource_missing');
      return collection.keyOf('created', record);
    };
    const page = pageOf(collection, params, recordFilter, cursor);
    const data = expandsCustomer(object, params) ? page.records.map((record) => withCustomerExpanded(dataset, record)) : page.records;
    tally(object, data.length, params.limit);
    return { status: 200, body: { object: 'list', data, has_more: page.hasMore, url: `/v1/${object}` } };
  }

  /** `expand[]=data.customer`: the customer id replaced by the customer (`{id, object, deleted: true}` once deleted). */
  function withCustomerExpanded(dataset: PaymentDataset, record: ListedRecord): ListedRecord {
    const id = fieldOf(record, 'customer');
    if (typeof id !== 'string') return record;
    const customer = dataset.customers.get(id) ?? (dataset.deletedCustomers.has(id) ? { id, object: 'customer', deleted: true } : id);
    return { ...record, customer } as ListedRecord;
  }

  function listEvents(dataset: PaymentDataset, query: URLSearchParams): SimulatorResponse {
    const params = parseListParams('events', query);
    const type = params.equals.get('type');
    const types = params.arrays.get('types');
    if (type !== undefined && types !== undefined) {
      throw new ParamError('You may only specify one of these parameters: type, types.', 'types', 'parameter_invalid');
    }
    if (types && types.length > MAX_EVENT_TYPES) {
      throw new ParamError(`You may only specify up to ${MAX_EVENT_TYPES} types.`, 'types', 'parameter_invalid');
    }
    const matchers = (types ?? (type !== undefined ? [type] : [])).map(eventTypeMatcher);
    const oldest = nowSeconds() - EVENT_RETENTION_SECONDS;
    const page = pageOf(
      dataset.listed('events'),
      params,
      (event) =>
        createdMatches(event.created, params.created) &&
        (matchers.length === 0 || matchers.some((matches) => matches(fieldOf(event, 'type') as string))),
      (id, param) => {
        const event = dataset.events.get(id);
        if (!event) throw new ParamError(`No such event: '${id}'`, param, 'resource_missing');
        return dataset.events.keyOf('created', event);
      },
      oldest,
    );
    return { status: 200, body: { object: 'list', data: page.records, has_more: page.hasMore, url: '/v1/events' } };
  }

  function retrieve(dataset: PaymentDataset, resource: PaymentObjectName | 'events', id: string): SimulatorResponse {
    const record = dataset.listed(resource).get(id);
    // Events older than the retention window are gone.
    const expired = resource === 'events' && record !== undefined && record.created < nowSeconds() - EVENT_RETENTION_SECONDS;
    if (record && !expired) return { status: 200, body: record };
    if (resource === 'customers' && dataset.deletedCustomers.has(id)) {
      return { status: 200, body: { id, object: 'customer', deleted: true } };
    }
    // The platform says when the id exists in the other mode: a test key used for live data, or the reverse.
    const other = state[dataset.mode === 'test' ? 'live' : 'test'];
    const hint = other.listed(resource).get(id)
      ? `; a similar object exists in ${other.mode} mode, but a ${dataset.mode} mode key was used to make this request.`
      : '';
    return paymentError(404, 'invalid_request_error', `No such ${SINGULAR[resource]}: '${id}'${hint}`, { code: 'resource_missing', param: 'id' });
  }

  function balance(dataset: PaymentDataset): SimulatorResponse {
    let available = 0;
    for (const charge of dataset.charges.values()) {
      if (charge.status === 'succeeded') available += charge.amount_captured - charge.amount_refunded;
    }
    return {
      status: 200,
      body: {
        object: 'balance',
        available: [{ amount: available, currency: 'usd', source_types: { card: available } }],
        pending: [{ amount: 0, currency: 'usd', source_types: { card: 0 } }],
        livemode: dataset.mode === 'live',
      },
    };
  }

  const server = await startSimulatorServer({
    name: 'payment',
    route,
    errorBody: paymentErrorBody,
    stats: () => ({ rateLimited: limiter.rejected + endpointLimiter.rejected }),
    ...(options.latency === undefined ? {} : { latency: options.latency }),
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.host === undefined ? {} : { host: options.host }),
  });

  // ----- control -----

  const simulator: PaymentSimulator = {
    ...server,
    state,
    clock,
    now: () => clock.now(),
    setNow: (ms) => clock.setNow(ms),
    advance: (ms) => clock.advance(ms),

    addApiKey(key, keyOptions = {}) {
      const shape = KEY_SHAPE.exec(key);
      if (!shape) throw new Error('payment keys look like sk_test_..., rk_live_... or pk_test_...');
      const kind = shape[1] === 'sk' ? 'secret' : shape[1] === 'rk' ? 'restricted' : 'publishable';
      const access = keyOptions.access ?? (kind === 'restricted' ? 'read' : 'write');
      keys.set(key, { mode: shape[2] as PaymentMode, kind, access });
    },
    removeApiKey(key) {
      keys.delete(key);
    },
    setRateLimit(limit, limitOptions = {}) {
      for (const mode of limitOptions.mode ? [limitOptions.mode] : (['test', 'live'] as const)) {
        limits[mode] = limit;
        endpointLimits[mode] = limitOptions.perEndpoint ?? DEFAULT_ENDPOINT_LIMIT;
      }
      limiter.reset();
      endpointLimiter.reset();
    },
    rateLimited: (key) =>
      key === undefined ? limiter.rejected + endpointLimiter.rejected : (limiter.rejectedFor.get(key) ?? 0) + (endpointRejectedFor.get(key) ?? 0),
    onRequest(hook) {
      hooks.add(hook);
      return () => hooks.delete(hook);
    },
    listAnswers: () => structuredClone(answersOf),
    resetListAnswers: () => {
      answersOf = {};
    },

    seedCustomers(count, seed = {}) {
      const dataset = state[seed.mode ?? 'test'];
      const now = nowSeconds();
      const customers = Array.from({ length: count }, (_, index) =>
        factory.customer(dataset.mode, seededCreated(index, count, now, seed), seed.fields?.(index)),
      );
      dataset.customers.putMany(customers);
      return customers;
    },

    seedSubscriptions(seed = {}) {
      const dataset = state[seed.mode ?? 'test'];
      const now = nowSeconds();
      const customers = seed.customerIds
        ? seed.customerIds.map((id) => locate('customers', id).record)
        : [...dataset.customers.sorted('created')];
      const subscriptions: PaymentSubscription[] = [];
      for (const customer of customers) {
        for (let n = 0; n < (seed.perCustomer ?? 1); n += 1) {
          const created = Math.min(now, customer.created + Math.floor(factory.random() * 3600));
          subscriptions.push(factory.subscription(customer, factory.statusFor(subscriptions.length, seed.statuses), created, now));
        }
      }
      dataset.subscriptions.putMany(subscriptions);
      return subscriptions;
    },

    seedInvoices(seed = {}) {
      const dataset = state[seed.mode ?? 'test'];
      const now = nowSeconds();
      const invoices: PaymentInvoice[] = [];
      const intents: PaymentIntent[] = [];
      const charges: PaymentCharge[] = [];
      const subscriptions: PaymentSubscription[] = [];
      for (const subscription of dataset.subscriptions.values()) {
        const months = subscription.items.data[0]?.price.recurring.interval === 'year' ? 12 : 1;
        let latest: string | null = null;
        for (let back = 0; back < (seed.perSubscription ?? 1); back += 1) {
          const periodStart = addMonths(subscription.current_period_start, -months * back);
          if (periodStart < subscription.created) break;
          const status = back === 0 ? latestInvoiceStatus(subscription.status) : 'paid';
          const chain = factory.invoiceChain(subscription, dataset.customers.get(subscription.customer), status, periodStart, now);
          invoices.push(chain.invoice);
          if (chain.paymentIntent) intents.push(chain.paymentIntent);
          if (chain.charge) charges.push(chain.charge);
          latest ??= chain.invoice.id;
        }
        subscriptions.push({ ...subscription, latest_invoice: latest });
      }
      dataset.invoices.putMany(invoices);
      dataset.payment_intents.putMany(intents);
      dataset.charges.putMany(charges);
      dataset.subscriptions.putMany(subscriptions);
      return invoices;
    },

    createCustomer(fields = {}, createOptions = {}) {
      const dataset = state[createOptions.mode ?? 'test'];
      const customer = factory.customer(dataset.mode, nowSeconds(), fields);
      dataset.customers.put(customer);
      return { record: customer, events: [recordEvent(dataset, 'customer.created', customer)] };
    },

    createSubscription(customerId, fields = {}) {
      const { dataset, record: customer } = locate('customers', customerId);
      const subscription = factory.subscription(customer, fields.status ?? 'active', nowSeconds(), nowSeconds(), fields);
      dataset.subscriptions.put(subscription);
      return { record: subscription, events: [recordEvent(dataset, 'customer.subscription.created', subscription)] };
    },

    createInvoice(subscriptionId, status = 'paid') {
      const { dataset, record: subscription } = locate('subscriptions', subscriptionId);
      const now = nowSeconds();
      const chain = factory.invoiceChain(subscription, dataset.customers.get(subscription.customer), status, now, now);
      const events = [recordEvent(dataset, 'invoice.created', chain.invoice)];
      dataset.invoices.put(chain.invoice);
      if (chain.paymentIntent && chain.charge) {
        dataset.payment_intents.put(chain.paymentIntent);
        dataset.charges.put(chain.charge);
        const paid = status === 'paid';
        events.push(
          recordEvent(dataset, paid ? 'charge.succeeded' : 'charge.failed', chain.charge),
          recordEvent(dataset, paid ? 'payment_intent.succeeded' : 'payment_intent.payment_failed', chain.paymentIntent),
          ...(paid
            ? [recordEvent(dataset, 'invoice.paid', chain.invoice), recordEvent(dataset, 'invoice.payment_succeeded', chain.invoice)]
            : [recordEvent(dataset, 'invoice.payment_failed', chain.invoice)]),
        );
      }
      dataset.subscriptions.put({ ...subscription, latest_invoice: chain.invoice.id });
      return { record: chain.invoice, events };
    },

    update(object, id, patch) {
      const { dataset, record } = locate(object, id);
      let updated = { ...record, ...patch, id: record.id } as PaymentRecordOf[typeof object];
      const types = eventTypesForUpdate(object, record, updated);
      if (object === 'subscriptions' && types.includes('customer.subscription.deleted')) {
        const subscription = updated as PaymentSubscription;
        const now = nowSeconds();
        updated = { ...subscription, canceled_at: subscription.canceled_at ?? now, ended_at: subscription.ended_at ?? now } as typeof updated;
      }
      dataset.collection(object).put(updated);
      const previous = previousAttributes(record, updated);
      return { record: updated, events: types.map((type) => recordEvent(dataset, type, updated, previous)) };
    },

    delete(object, id) {
      if (object === 'subscriptions') {
        const { dataset, record } = locate('subscriptions', id);
        return cancelSubscription(dataset, record);
      }
      const { dataset, record: customer } = locate('customers', id);
      // Deleting a customer cancels its subscriptions first, as the platform does.
      const events: PaymentEvent[] = [];
      for (const subscription of dataset.subscriptions.values()) {
        if (subscription.customer === id && subscription.status !== 'canceled' && subscription.status !== 'incomplete_expired') {
          events.push(...cancelSubscription(dataset, subscription).events);
        }
      }
      dataset.customers.remove(id);
      dataset.deletedCustomers.set(id, customer);
      events.push(recordEvent(dataset, 'customer.deleted', customer));
      return { record: customer, events };
    },

    recordEvent(type, object, eventOptions = {}) {
      return recordEvent(state[eventOptions.mode ?? 'test'], type, object, eventOptions.previousAttributes);
    },

    events(mode = 'test') {
      return [...state[mode].events.sorted('created')].reverse();
    },

    deliverWebhook(delivery) {
      const body = JSON.stringify(delivery.event, null, 2);
      const secrets = [delivery.secret, ...(delivery.extraSignatures ?? [])];
      return deliverWithRetries(() => {
        const timestamp = delivery.timestamp ?? nowSeconds();
        const signature = paymentSignatureHeader(body, timestamp, secrets, !delivery.event.livemode);
        return postWebhook(
          delivery.url,
          body,
          { 'stripe-signature': signature, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
          delivery.timeoutMs,
        );
      }, delivery);
    },
  };
  return simulator;

  function isResource(word: string): word is PaymentResource {
    return word === 'events' || word === 'balance' || (['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'] as string[]).includes(word);
  }

  function allows(apiKey: ApiKey, resource: PaymentResource, needed: PaymentKeyAccess): boolean {
    const granted = typeof apiKey.access === 'string' ? apiKey.access : (apiKey.access[resource] ?? 'none');
    return granted === 'write' || (granted === 'read' && needed === 'read');
  }
}

/**
 * One page of a newest-first list: `starting_after` walks on to older records,
 * `ending_before` to newer ones (answered newest first all the same).
 */
function pageOf(
  collection: RecordCollection<ListedRecord, 'created'>,
  params: ListParams,
  matches: (record: ListedRecord) => boolean,
  cursor: (id: string, param: string) => SortKey,
  oldest?: number,
): ScanResult<ListedRecord> {
  const bounds = [params.created.gte, params.created.gt === undefined ? undefined : params.created.gt + 1, oldest];
  const defined = bounds.filter((bound): bound is number => bound !== undefined);
  const lowest = defined.length > 0 ? Math.max(...defined) : undefined;
  const filter = (record: ListedRecord): boolean => (lowest === undefined || record.created >= lowest) && matches(record);
  if (params.endingBefore !== undefined) {
    const page = collection.scan('created', { direction: 'asc', after: cursor(params.endingBefore, 'ending_before'), limit: params.limit, matches: filter });
    return { records: page.records.reverse(), hasMore: page.hasMore };
  }
  // Newest first from the upper `created` bound, if any: nothing above it can match.
  const uppers = [params.created.lt, params.created.lte === undefined ? undefined : params.created.lte + 1].filter((bound): bound is number => bound !== undefined);
  const highest = uppers.length > 0 ? Math.min(...uppers) : undefined;
  return collection.scan('created', {
    direction: 'desc',
    ...(params.startingAfter === undefined ? {} : { after: cursor(params.startingAfter, 'starting_after') }),
    ...(highest === undefined ? {} : { startBound: [highest, ''] as const }),
    limit: params.limit,
    matches: filter,
    // Newest first: once past the lower `created` bound nothing further can match.
    ...(lowest === undefined ? {} : { stopAt: (record: ListedRecord) => record.created < lowest }),
  });
}
