import * as z from 'zod/mini';
import type { PlatformClient, QueryValue } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import {
  FullSyncNeeded,
  listLimit,
  type ConnectorSync,
  type NormalisedRecord,
  type PageCursor,
  type SliceRange,
  type SyncPage,
  type SyncSource,
  type SyncWindow,
} from '../sync/sync-source';
import { PLATFORM_OBJECT_TYPE, readPaymentRecord } from './objects';
import { PAYMENT_OBJECTS, type PaymentObject, type PaymentSyncSettings } from './settings';

/**
 * How the payment platform is paged, object by object (the Payments API reference; docs/platform-contracts.md, "Payment platform").
 *
 * FULL: `GET /v1/<object>?limit=100`, then `starting_after=<last id>` until `has_more` is false.
 * Lists are newest first and ordered by creation, which an update does not change, so a record
 * updated mid-run is neither skipped nor repeated; records created mid-run sit above the first
 * page and are picked up by the next incremental run (its window starts before this run did).
 * Subscriptions are listed with `status=all`, or canceled ones would be left out.
 * Customers under the "active subscriptions" / "by status" filter are read through
 * `/v1/subscriptions?status=<s>&expand[]=data.customer`, one status after another.
 *
 * INCREMENTAL (`since`): the lists have no "updated since" filter, so changes come from
 * `GET /v1/events?created[gte]=<since>`, newest first, each carrying a snapshot of the record.
 * - A snapshot gets `sourceVersion` = the event's `created`; an older snapshot of a record already
 *   taken in this run is left out, so a newer state is never followed by a staler one.
 * - Several changes to one record in the same second (an invoice is created, finalized and paid
 *   within one) cannot be ordered from the list, so that record is read as it is now.
 * - `customer.deleted` and `invoice.deleted` (a draft removed) are deletions; a
 *   `customer.subscription.deleted` is a cancellation and yields the canceled subscription.
 * - Events reach back 30 days: an older `since` throws `EventWindowExceeded` and the engine
 *   runs a full sync instead.
 * - Filtered customers: a customer event cannot say whether the customer has a matching
 *   subscription, so customer events are all taken as they come; besides, a subscription event in
 *   a matching status brings its customer in (read as it is now), so a returning subscriber is
 *   not missed until the next full sync.
 *
 * Cursors are JSON (the engine stores them after every page) and carry all a new process needs to
 * continue: the last id and its second, and for events the ids already taken in the boundary
 * second. A cursor this source cannot use (another kind of run, settings changed) restarts the
 * paging: records may come twice, which the engine tolerates; none are lost.
 */

export const PAGE_SIZE = 100;
export const EVENT_RETENTION_SECONDS = 30 * 86_400;
/** Events at the window's edge must not expire while a run pages toward them. */
export const EVENT_WINDOW_MARGIN_SECONDS = 3_600;

/** The incremental window starts before the oldest event the platform keeps (30 days). */
export class EventWindowExceeded extends FullSyncNeeded {
  override readonly name = 'EventWindowExceeded';
  constructor(
    readonly since: number,
    readonly oldestReachable: number,
  ) {
    super(
      `payment platform: events reach back 30 days only; changes since ${new Date(since * 1000).toISOString()} cannot be read from them, a full sync is needed`,
    );
  }
}

/**
 * Deleted ids are remembered for the rest of an events run (so an older snapshot on a later page
 * cannot bring a deleted record back); past this many the cursor would grow too big for its
 * checkpoint, and a full sync (which sweeps deletions) is cheaper anyway.
 */
export const MAX_DELETIONS_PER_EVENTS_RUN = 2_000;

/** Throws `EventWindowExceeded` when `since` (epoch seconds) is older than the events the platform keeps. */
export function checkEventWindow(since: number, nowMs: number): void {
  const oldestReachable = Math.floor(nowMs / 1000) - EVENT_RETENTION_SECONDS + EVENT_WINDOW_MARGIN_SECONDS;
  if (since < oldestReachable) throw new EventWindowExceeded(since, oldestReachable);
}

// ---------- which events belong to which object ----------

/** Only these are deletions; everything else carries a record to keep (a canceled subscription included). */
const DELETION_EVENTS = new Set(['customer.deleted', 'invoice.deleted']);
/** Objects the platform can delete: retrieving one that is gone answers 404. */
const DELETABLE = new Set<PaymentObject>(['customers', 'invoices']);

const CUSTOMER_EVENTS = ['customer.created', 'customer.updated', 'customer.deleted'];
/** Subscription changes that can put a customer into a status filter. */
const SUBSCRIPTION_STATUS_EVENTS = [
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.paused',
  'customer.subscription.resumed',
];

/**
 * The events query for an object. `type` takes the platform's `*` wildcard; `types[]` (up to 20)
 * takes exact names only.
 */
export function eventFilter(object: PaymentObject, filteredStatuses: readonly string[] | undefined): Record<string, string> {
  switch (object) {
    case 'customers': {
      const types = filteredStatuses ? [...CUSTOMER_EVENTS, ...SUBSCRIPTION_STATUS_EVENTS] : CUSTOMER_EVENTS;
      return Object.fromEntries(types.map((type, index) => [`types[${index}]`, type]));
    }
    case 'subscriptions':
      return { type: 'customer.subscription.*' };
    case 'invoices':
      return { type: 'invoice.*' };
    case 'payment_intents':
      return { type: 'payment_intent.*' };
    case 'charges':
      return { type: 'charge.*' };
  }
}

/** The subscription statuses a customer filter asks for; undefined when every customer is wanted. */
export function customerFilterStatuses(settings: Pick<PaymentSyncSettings, 'customerFilter' | 'subscriptionStatuses'>): string[] | undefined {
  if (settings.customerFilter === 'active_subscriptions') return ['active'];
  if (settings.customerFilter === 'by_status') return [...new Set(settings.subscriptionStatuses ?? [])];
  return undefined;
}

// ---------- platform shapes read here (records themselves are read by objects.ts) ----------

const Id = z.string().check(z.minLength(1));
const Created = z.number().check(z.int());

function makeListOf<T extends z.ZodMiniType>(item: T) {
  return z.looseObject({ object: z.optional(z.literal('list')), data: z.array(item), has_more: z.boolean() });
}

/**
 * A list page of `item`, one schema per item schema: zod compiles a schema's checks on its first
 * parse, so a schema made per request was compiled again for every page.
 */
const listSchemas = new WeakMap<z.ZodMiniType, ReturnType<typeof makeListOf>>();
function listOf<T extends z.ZodMiniType>(item: T): ReturnType<typeof makeListOf<T>> {
  let schema = listSchemas.get(item);
  if (!schema) listSchemas.set(item, (schema = makeListOf(item)));
  return schema as ReturnType<typeof makeListOf<T>>;
}

/** What a listed record must have for the cursor and the slice span: an id and its creation second. */
export function isListedItem(value: unknown): value is { id: string; created: number } & Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const { id, created } = value as { id?: unknown; created?: unknown };
  return typeof id === 'string' && id.length > 0 && Number.isInteger(created);
}

/**
 * Checked without copying: a looseObject schema copies every field of every listed record (a
 * twentieth of a page's CPU), and each record is read in full by objects.ts right after.
 */
const ListedItem = z.custom<{ id: string; created: number } & Record<string, unknown>>(
  isListedItem,
  'expected a record with an id and a whole-second created time',
);

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
/** A subscription with its customer expanded (`{id, object, deleted: true}` once the customer is deleted). */
const SubscriptionWithCustomer = z.lazy(() =>
  z.looseObject({ id: Id, created: Created, customer: z.looseObject({ id: Id, deleted: z.optional(z.boolean()) }) }),
);

export const PlatformEvent = z.lazy(() =>
  z.looseObject({
    id: Id,
    type: z.string(),
    created: Created,
    data: z.looseObject({
      // `invoice.upcoming` carries an invoice without an id: such events are skipped.
      object: z.looseObject({ object: z.optional(z.string()), id: z.optional(z.string()), customer: z.optional(z.unknown()), status: z.optional(z.unknown()) }),
    }),
  }),
);
export type PlatformEvent = z.infer<typeof PlatformEvent>;

const Retrieved = z.lazy(() => z.looseObject({ id: Id, deleted: z.optional(z.boolean()) }));

// ---------- cursors ----------

/** Where the previous page ended: its last id, and that record's second for when the id is gone. */
const Position = z.object({ after: Id, afterCreated: Created });
type Position = z.infer<typeof Position>;

const ListCursor = z.extend(Position, { kind: z.literal('list') });
const SubscribersCursor = z.object({ kind: z.literal('subscribers'), statusIndex: z.number().check(z.int(), z.minimum(0)), position: z.optional(Position) });
/** Ids already handled in the second the previous page ended in: `emitted` from a snapshot, `resolved` read as they are now. */
const Tie = z.object({ second: Created, emitted: z.array(Id), resolved: z.array(Id) });
export type Tie = z.infer<typeof Tie>;
/** `deleted`: ids deleted earlier in this run; any later (older) event about them is stale. */
const EventsCursor = z.extend(Position, { kind: z.literal('events'), tie: Tie, deleted: z._default(z.array(Id), []) });

function positionOf(item: { id: string; created: number } | undefined): Position | undefined {
  return item ? { after: item.id, afterCreated: item.created } : undefined;
}

// ---------- what a page of events means ----------

/** What one event asks of this source: keep its snapshot, record a deletion, or read the record as it is now. */
type EventAction = 'snapshot' | 'deletion' | 'current';
/** Per record id while a page is read; `emitted`/`resolved` were handled on an earlier page. */
type Pending = { second: number; action: EventAction | 'emitted' | 'resolved'; event?: PlatformEvent };

export interface EventChange {
  id: string;
  second: number;
  action: EventAction;
  /** The event whose snapshot to keep, for `snapshot`. */
  event?: PlatformEvent;
}

/** Whether an event concerns this source, and how; undefined to skip it. */
export function eventMeaning(
  event: PlatformEvent,
  object: PaymentObject,
  filteredStatuses: readonly string[] | undefined,
): { id: string; action: EventAction } | undefined {
  const record = event.data.object;
  if (record.object === PLATFORM_OBJECT_TYPE[object] && record.id) {
    return { id: record.id, action: DELETION_EVENTS.has(event.type) ? 'deletion' : 'snapshot' };
  }
  // Filtered customers: a subscription now in a wanted status brings its customer in.
  if (object === 'customers' && filteredStatuses && record.object === 'subscription' && typeof record.status === 'string') {
    const customer = record.customer;
    const customerId = typeof customer === 'string' ? customer : (customer as { id?: unknown } | null | undefined)?.id;
    if (filteredStatuses.includes(record.status) && typeof customerId === 'string' && customerId) {
      return { id: customerId, action: 'current' };
    }
  }
  return undefined;
}

/**
 * Decides, for one page of events (newest first), what to do per record id, and what the next
 * page must know about the second this one ended in. Pure.
 */
export function eventChanges(
  events: readonly PlatformEvent[],
  meaning: (event: PlatformEvent) => { id: string; action: EventAction } | undefined,
  carried: Tie | undefined,
  deletedEarlier: ReadonlySet<string> = new Set(),
): { changes: EventChange[]; tie: Tie | undefined } {
  const pending = new Map<string, Pending>();
  for (const id of carried?.emitted ?? []) pending.set(id, { second: carried!.second, action: 'emitted' });
  for (const id of carried?.resolved ?? []) pending.set(id, { second: carried!.second, action: 'resolved' });
  // A record deleted on an earlier page: everything listed after its deletion is older, or stale.
  for (const id of deletedEarlier) pending.set(id, { second: Number.POSITIVE_INFINITY, action: 'resolved' });

  for (const event of events) {
    const meant = meaning(event);
    if (!meant) continue;
    const seen = pending.get(meant.id);
    if (!seen) {
      pending.set(meant.id, { second: event.created, action: meant.action, event });
    } else if (seen.second === event.created && (seen.action === 'snapshot' || seen.action === 'deletion' || seen.action === 'emitted')) {
      // Two changes in one second: the list cannot say which came last, so read the record as it is now.
      seen.action = 'current';
    }
    // Otherwise an older change of a record already taken (or already read as it is now): left out.
  }

  const changes: EventChange[] = [];
  for (const [id, seen] of pending) {
    if (seen.action === 'emitted' || seen.action === 'resolved') continue;
    changes.push({ id, second: seen.second, action: seen.action, ...(seen.event && seen.action === 'snapshot' ? { event: seen.event } : {}) });
  }

  const last = events.at(-1);
  if (!last) return { changes, tie: undefined };
  const tie: Tie = { second: last.created, emitted: [], resolved: [] };
  for (const [id, seen] of pending) {
    if (seen.second !== last.created) continue;
    if (seen.action === 'current' || seen.action === 'resolved') tie.resolved.push(id);
    else tie.emitted.push(id);
  }
  return { changes, tie };
}

// ---------- the source ----------

export interface PaymentSourceOptions {
  /** Milliseconds since the epoch; for the 30-day event window. */
  now?: () => number;
}

const PaymentObjectName = z.enum(PAYMENT_OBJECTS);

export function paymentSource(object: string, client: PlatformClient, settings: PaymentSyncSettings, options: PaymentSourceOptions = {}): SyncSource {
  const parsedObject = PaymentObjectName.safeParse(object);
  if (!parsedObject.success) throw new TypeError(`the payment connector has no data object '${object}'`);
  const dataObject = parsedObject.data;
  const now = options.now ?? Date.now;
  const filteredStatuses = dataObject === 'customers' ? customerFilterStatuses(settings) : undefined;

  return {
    async fetchPage(window: SyncWindow, cursor: PageCursor | undefined, range?: SliceRange): Promise<SyncPage> {
      if (window.mode === 'incremental') {
        checkEventWindow(window.since, now());
        return eventsPage(client, dataObject, filteredStatuses, window.since, cursor);
      }
      if (filteredStatuses) return subscribersPage(client, filteredStatuses, cursor);
      return listedPage(client, dataObject, cursor, range);
    },
    // Lists are newest first by `created`, which never changes: ranges of it split a listing
    // (`created[gte]`, `created[lt]`). The customers-through-subscriptions listing is not split.
    ...(filteredStatuses ? {} : { slicing: { order: 'newest_first' as const } }),
    listing: { method: 'GET', path: filteredStatuses ? '/v1/subscriptions' : `/v1/${dataObject}` },
  };
}

export const paymentSync: ConnectorSync<PaymentSyncSettings> = {
  objects: PAYMENT_OBJECTS,
  // Charges first: every attempt, including legacy charges without an intent.
  paymentObjects: ['charges', 'payment_intents'],
  source: (object, client, settings) => paymentSource(object, client, settings),
};

// ---------- pages ----------

/** A page of a platform list after `position`. */
async function fetchList<T extends z.ZodMiniType>(
  client: PlatformClient,
  path: string,
  query: Record<string, QueryValue>,
  position: Position | undefined,
  item: T,
  limit = PAGE_SIZE,
): Promise<{ page: z.infer<ReturnType<typeof listOf<T>>>; attempts: number; listedAt: number }> {
  const schema = listOf(item);
  try {
    const response = await client.request({ method: 'GET', path, query: { ...query, limit, starting_after: position?.after }, schema });
    return { page: response.body, attempts: response.attempts, listedAt: listedVersion(response.headers) };
  } catch (error) {
    if (!position || !cursorRecordGone(error)) throw error;
    // The record the cursor names is gone (a deleted draft invoice): go on from its second instead.
    // Records of that second come again, which is harmless.
    const response = await client.request({ method: 'GET', path, query: { ...query, limit: PAGE_SIZE, 'created[lte]': position.afterCreated }, schema });
    return { page: response.body, attempts: response.attempts, listedAt: listedVersion(response.headers) };
  }
}

/** Seconds a listed record's version stays below the platform's clock: no event after the listing can rank older. */
export const LISTING_VERSION_MARGIN_SECONDS = 60;

/**
 * The version of records read from a list: the platform's own clock at the answer (its Date
 * header; ours if absent), less a margin. A listing shows state at least that recent, and an
 * event that happened after it always ranks newer, whatever the skew between the two clocks.
 */
function listedVersion(headers: Headers): number {
  const platformTime = Date.parse(headers.get('date') ?? '');
  const seconds = Math.floor((Number.isFinite(platformTime) ? platformTime : Date.now()) / 1000);
  return seconds - LISTING_VERSION_MARGIN_SECONDS;
}

function cursorRecordGone(error: unknown): boolean {
  return error instanceof PlatformError && (error.status === 400 || error.status === 404) && error.platformCode === 'resource_missing';
}

function unreadable(path: string, attempts: number, what: string, problem: string): PlatformError {
  return new PlatformError({
    platform: 'payment',
    kind: 'invalid_response',
    status: 200,
    attempts,
    method: 'GET',
    path,
    retryable: false,
    reason: `${what} does not have the expected shape (${problem})`,
  });
}

/** `what` names the record in the error; a function when it is worth writing only for a refusal. */
function readOrFail(
  object: PaymentObject,
  raw: unknown,
  sourceVersion: number | undefined,
  where: { path: string; attempts: number; what: string | (() => string) },
): NormalisedRecord {
  const reading = readPaymentRecord(object, raw, sourceVersion);
  if (!reading.ok) throw unreadable(where.path, where.attempts, typeof where.what === 'string' ? where.what : where.what(), reading.problem);
  return reading.record;
}

/** A range of `created` as the list filters take it. */
export function createdRange(range: SliceRange | undefined): Record<string, QueryValue> {
  return { 'created[gte]': range?.from, 'created[lt]': range?.to };
}

async function listedPage(client: PlatformClient, object: PaymentObject, cursor: PageCursor | undefined, range?: SliceRange): Promise<SyncPage> {
  const path = `/v1/${object}`;
  const position = ListCursor.safeParse(cursor).data;
  // Without status=all the platform leaves canceled subscriptions out.
  const query = { ...(object === 'subscriptions' ? { status: 'all' } : {}), ...createdRange(range) };
  const { page, attempts, listedAt } = await fetchList(client, path, query, position, ListedItem, listLimit(range, PAGE_SIZE, !position));
  const records = page.data.map((raw, index) => readOrFail(object, raw, listedAt, { path, attempts, what: () => `record ${index} (${raw.id})` }));
  const next = page.has_more ? positionOf(page.data.at(-1)) : undefined;
  const first = page.data[0];
  const last = page.data.at(-1);
  return {
    records,
    deletedIds: [],
    ...(next ? { next: { kind: 'list', ...next } } : {}),
    ...(first && last ? { span: { first: first.created, last: last.created }, keys: page.data.map((item) => item.created) } : {}),
  };
}

/** Customers with a subscription in one of `statuses`, read through their subscriptions. */
async function subscribersPage(client: PlatformClient, statuses: readonly string[], cursor: PageCursor | undefined): Promise<SyncPage> {
  const path = '/v1/subscriptions';
  const state = SubscribersCursor.safeParse(cursor).data ?? { kind: 'subscribers' as const, statusIndex: 0 };
  const status = statuses[state.statusIndex];
  if (status === undefined) return { records: [], deletedIds: [] };

  const { page, attempts, listedAt } = await fetchList(client, path, { status, 'expand[0]': 'data.customer' }, state.position, SubscriptionWithCustomer);
  const records: NormalisedRecord[] = [];
  const deletedIds: string[] = [];
  const seen = new Set<string>();
  for (const [index, subscription] of page.data.entries()) {
    const customer = subscription.customer;
    if (seen.has(customer.id)) continue;
    seen.add(customer.id);
    if (customer.deleted) deletedIds.push(customer.id);
    else records.push(readOrFail('customers', customer, listedAt, { path, attempts, what: `the customer of record ${index} (${subscription.id})` }));
  }

  const position = page.has_more ? positionOf(page.data.at(-1)) : undefined;
  const next: PageCursor | undefined = position
    ? { kind: 'subscribers', statusIndex: state.statusIndex, position }
    : state.statusIndex + 1 < statuses.length
      ? { kind: 'subscribers', statusIndex: state.statusIndex + 1 }
      : undefined;
  return { records, deletedIds, deletedVersions: Object.fromEntries(deletedIds.map((id) => [id, listedAt])), ...(next ? { next } : {}) };
}

async function eventsPage(
  client: PlatformClient,
  object: PaymentObject,
  filteredStatuses: readonly string[] | undefined,
  since: number,
  cursor: PageCursor | undefined,
): Promise<SyncPage> {
  const path = '/v1/events';
  const state = EventsCursor.safeParse(cursor).data;
  const query = { 'created[gte]': since, ...eventFilter(object, filteredStatuses) };
  const { page, attempts } = await fetchList(client, path, query, state, PlatformEvent);
  const deletedEarlier = new Set(state?.deleted ?? []);
  const { changes, tie } = eventChanges(page.data, (event) => eventMeaning(event, object, filteredStatuses), state?.tie, deletedEarlier);

  const records: NormalisedRecord[] = [];
  const deletedIds: string[] = [];
  const deletedVersions: Record<string, number> = {};
  for (const change of changes) {
    if (change.action === 'deletion') {
      deletedIds.push(change.id);
      deletedVersions[change.id] = change.second;
    } else if (change.action === 'snapshot' && change.event) {
      const what = `the ${change.event.type} event ${change.event.id}`;
      records.push(readOrFail(object, change.event.data.object, change.second, { path, attempts, what }));
    } else {
      const current = await currentRecord(client, object, change.id, change.second);
      if (current === 'deleted') {
        deletedIds.push(change.id);
        deletedVersions[change.id] = change.second;
      } else records.push(current);
    }
  }

  // The engine wants the oldest change first; each id comes at most once per page anyway.
  records.reverse();
  const position = page.has_more ? positionOf(page.data.at(-1)) : undefined;
  if (!position || !tie) return { records, deletedIds, deletedVersions };
  const deleted = [...deletedEarlier, ...deletedIds];
  if (deleted.length > MAX_DELETIONS_PER_EVENTS_RUN) {
    throw new FullSyncNeeded(`payment platform: more than ${MAX_DELETIONS_PER_EVENTS_RUN} deletions since the last sync; a full sync is needed`);
  }
  return { records, deletedIds, deletedVersions, next: { kind: 'events', ...position, tie, deleted } };
}

/** The record as it is now, versioned with the second of the change that sent us to read it. */
async function currentRecord(client: PlatformClient, object: PaymentObject, id: string, second: number): Promise<NormalisedRecord | 'deleted'> {
  const path = `/v1/${object}/${encodeURIComponent(id)}`;
  try {
    const { body, attempts } = await client.request({ method: 'GET', path, schema: Retrieved });
    if (body.deleted) return 'deleted';
    return readOrFail(object, body, second, { path, attempts, what: `${object} ${id}` });
  } catch (error) {
    if (DELETABLE.has(object) && error instanceof PlatformError && error.status === 404 && error.platformCode === 'resource_missing') return 'deleted';
    throw error;
  }
}
