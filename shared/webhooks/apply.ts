import type { ApplyingConnector } from '../connections/connector';
import { webhookAppliers } from '../connections/registry';
import { countClaimedDelivery } from '../history/record-history';
import type { EventCustomer } from '../events/playbook-events';
import { playbookEvent } from '../events/playbook-events';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { redactText } from '../log/redaction';
import { recordMetric } from '../metrics/gateway-metrics';
import type { WebhookEventMessage } from '../queues/messages';
import type { Connection, RecordWrite } from '../store/items';
import { recordPlace, type RecordPlace } from '../store/record-layout';
import { recordHash } from '../sync/record-hash';
import type { JsonObject, NormalisedRecord } from '../sync/sync-source';
import { writeDecision, type PublishPlan, type RecordChange, type RecordReference } from './effects';
import type { RecordFetcher } from './platform-records';
import * as store from '../store/store';

/**
 * The event worker: applies one verified platform event, exactly once.
 *
 * 1. Claim: the event's mark goes `pending` (a conditional write; TTL past the platforms' 3-day
 *    retry horizon). A redelivery finding it `applied` or `ignored` is skipped; finding it pending
 *    under another worker's live claim, it is retried later. A retry after a failed attempt
 *    re-applies: every record write is idempotent.
 * 2. Decide: the connection's sync method (API Direct → acknowledged, not applied) and what the
 *    event means (the connector's pure `effects`; unknown types are recorded `ignored`).
 * 3. Apply each record the event carries, in the data objects the settings select: an older copy
 *    never overwrites a newer one (`writeDecision`, and the store's conditional write); a record
 *    the event refers to but does not carry, and which is not stored yet, is fetched from the
 *    platform; so is one whose order cannot be told.
 * 4. Publish the normalised event (its id is derived from the platform's, so a re-publish after a
 *    crash carries the same id for consumers to dedupe on), then mark the event `applied`.
 */

/** The platforms retry for up to 3 days; the marks outlive that by a day. */
export const EVENT_MARK_SECONDS = 4 * 86_400;
/** A claim outlives the worker's 60-second timeout, so a live attempt is never overlapped. */
export const CLAIM_LEASE_SECONDS = 90;

/**
 * Reads one record from the platform through the connection's own client (and rate budget). The
 * credentials are opened only when a record must be fetched: most events need no platform call.
 */
function recordFetcher(gateway: Gateway, connector: ApplyingConnector, connection: Connection): RecordFetcher {
  const webhooks = connector.webhooks;
  return async (object, id) => webhooks.fetcher(await platformClient(gateway, connector, connection), () => gateway.now())(object, id);
}

async function platformClient(gateway: Gateway, connector: ApplyingConnector, connection: Connection) {
  const credentials = await gateway.vault.open({ accountId: connection.accountId, connector: connection.connector }, connection.credentials);
  return connector.client({ env: gateway.env, accountId: connection.accountId, config: connection.config, credentials, rateBuckets: store.rateBucketsIn(gateway.table) });
}

/** The payload to apply: the platform's own copy when the connector confirms events, else the delivered one. Undefined: not confirmed. */
async function confirmedPayload(gateway: Gateway, connector: ApplyingConnector, connection: Connection, message: WebhookEventMessage): Promise<Record<string, unknown> | undefined> {
  const confirm = connector.webhooks.confirm;
  if (!confirm) return message.payload;
  const confirmed = await confirm(await platformClient(gateway, connector, connection), message.eventId);
  recordMetric.webhookConfirmed(connector.name, confirmed !== undefined);
  return confirmed;
}

export type ApplyResult =
  | { outcome: 'applied'; written: number; stale: number; fetched: number; published: number }
  | { outcome: 'ignored'; reason: string }
  | { outcome: 'duplicate' };

export interface ApplyOptions {
  /** Connections read in this invocation (a batch often holds several events of one account). */
  connections?: Map<string, Promise<Connection | undefined>>;
}

export async function applyWebhookEvent(gateway: Gateway, message: WebhookEventMessage, log: Logger, options: ApplyOptions = {}): Promise<ApplyResult> {
  const event = { accountId: message.accountId, connector: message.connector, eventId: message.eventId };
  const eventLog = log.with({ ...event, eventType: message.eventType });
  const now = Math.floor(gateway.now() / 1000);
  const claim = await store.claimWebhookEvent(gateway.table, {
    ...event,
    eventType: message.eventType,
    now,
    leaseSeconds: CLAIM_LEASE_SECONDS,
    expiresAt: now + EVENT_MARK_SECONDS,
  });
  await countClaimedDelivery(gateway, message, claim);
  if (claim.outcome === 'finished') {
    eventLog.info('webhook event already handled; skipped', { state: claim.mark.state });
    return { outcome: 'duplicate' };
  }
  if (claim.outcome === 'busy') throw new Error('another worker is applying this event now; it will be retried');

  let result: ApplyResult;
  try {
    result = await applyClaimed(gateway, message, eventLog, options);
  } catch (error) {
    const reason = redactText(error instanceof Error ? error.message : String(error));
    await store.releaseWebhookEvent(gateway.table, event, reason).catch((releaseError: unknown) => eventLog.warn('could not release the claim', { error: releaseError }));
    throw error;
  }
  const at = new Date(gateway.now());
  if (result.outcome === 'ignored') {
    await store.finishWebhookEvent(gateway.table, event, { state: 'ignored', note: result.reason, at });
    eventLog.info('webhook event ignored', { reason: result.reason, attempts: claim.attempts });
  } else {
    await store.finishWebhookEvent(gateway.table, event, { state: 'applied', at });
    eventLog.info('webhook event applied', { ...result, attempts: claim.attempts });
  }
  return result;
}

async function applyClaimed(gateway: Gateway, message: WebhookEventMessage, log: Logger, options: ApplyOptions): Promise<ApplyResult> {
  const { accountId, connector } = message;
  const definition = webhookAppliers[connector];
  if (!definition) return { outcome: 'ignored', reason: `the ${connector} connector receives no webhooks` };
  const webhooks = definition.webhooks;
  const connections = options.connections ?? new Map<string, Promise<Connection | undefined>>();
  const connectionKey = `${accountId}\n${connector}`;
  if (!connections.has(connectionKey)) connections.set(connectionKey, store.getConnection(gateway.table, accountId, connector));
  const connection = await connections.get(connectionKey);
  if (!connection) return { outcome: 'ignored', reason: `the ${connector} connection was removed` };
  if ((await store.getAccount(gateway.table, accountId))?.integrationsEnabled === false) return { outcome: 'ignored', reason: "the account's Integrations are switched off" };
  const settings = webhooks.settings(connection.syncSettings);
  if (settings.method === 'api') return { outcome: 'ignored', reason: 'sync method API Direct' };
  const payload = await confirmedPayload(gateway, definition, connection, message);
  if (!payload) return { outcome: 'ignored', reason: 'not confirmed: the platform does not know this event' };
  const effects = webhooks.effects(payload);
  if (effects.kind === 'ignored') return { outcome: 'ignored', reason: effects.reason };

  const applying = new RecordApplier(gateway, connection, webhooks.versionAt, recordFetcher(gateway, definition, connection), new Set(settings.dataObjects), settings.keeps);
  for (const change of effects.changes) await applying.change(change, effects.occurredAt);
  for (const reference of effects.references) await applying.reference(reference);
  let published = 0;
  const plan = effects.publish?.plan((reference) => applying.known(reference));
  if (plan) {
    const customer = await applying.customerFor(plan);
    await gateway.events.publish([
      playbookEvent({
        id: `${connector}:${message.eventId}`,
        type: plan.type,
        accountId,
        source: connector,
        occurredAt: new Date(effects.occurredAt * 1000).toISOString(),
        data: eventData(message, plan, customer),
      }),
    ]);
    published = 1;
  } else if (effects.publish) {
    log.warn('nothing to publish: the event’s record could not be read, and it was not fetched (not among the data objects)', { type: effects.publish.type });
  }
  log.debug('webhook event effects', { changes: effects.changes.length, references: effects.references.length });
  return { outcome: 'applied', ...applying.counts, published };
}

/** The published `data`: what the plan has, the customer resolved; the type's schema keeps only its fields. */
function eventData(message: WebhookEventMessage, plan: PublishPlan, customer: EventCustomer | undefined): Record<string, unknown> {
  return {
    platformEventId: message.eventId,
    platformEventType: message.eventType,
    ...(customer ? { customer } : {}),
    ...(plan.subscription ? { subscription: plan.subscription } : {}),
    ...(plan.invoice ? { invoice: plan.invoice } : {}),
    ...(plan.payment ? { payment: plan.payment } : {}),
    ...(plan.dispute ? { dispute: plan.dispute } : {}),
  };
}

/** Writes one event's records for one connection, remembering what it saw for the published event. */
class RecordApplier {
  readonly counts = { written: 0, stale: 0, fetched: 0 };
  /** Bodies known after applying: `object\nid` → the newest copy written or stored. */
  readonly #known = new Map<string, JsonObject>();

  constructor(
    private readonly gateway: Gateway,
    /** The connection whose records these are: its account, connector and record layout. */
    private readonly connection: Connection,
    private readonly versionAt: (epochMs: number) => number,
    private readonly fetch: RecordFetcher,
    private readonly selected: ReadonlySet<string>,
    private readonly keeps: (object: string, fields: JsonObject) => boolean = () => true,
  ) {}

  private placeOf(object: string): RecordPlace {
    return recordPlace(this.connection, object);
  }

  async change(change: RecordChange, occurredAt: number): Promise<void> {
    if (!this.selected.has(change.object)) return;
    const { table } = this.gateway;
    if (change.record && !this.keeps(change.object, change.record.fields)) {
      // Outside the settings' filter (a subscription cancelled under "Active"): not kept, as the sync would not keep it.
      await store.markRecordDeleted(table, this.placeOf(change.object), change.id, { deletedAt: new Date(occurredAt * 1000), sourceVersion: change.version });
      this.counts.stale += 1;
      return;
    }
    if (!change.record) {
      await this.fetchAndStore(change, change.version);
    } else {
      const hash = recordHash(change.record.fields);
      let stored = await store.getRecord(table, this.placeOf(change.object), change.id);
      let decision: ReturnType<typeof writeDecision> | 'skip' = writeDecision(stored, { version: change.version, hash }, this.versionAt);
      if (decision === 'write') {
        const outcome = await store.putRecordIfNewer(table, this.placeOf(change.object), this.toWrite(change.record, hash, change.version));
        if (outcome !== 'stale') {
          this.counts.written += 1;
          this.#known.set(key(change), change.record.fields);
          decision = 'skip';
        } else {
          // Another worker wrote this record between the read and the write (two events of one
          // second, applied side by side): decide again against what it wrote.
          stored = await store.getRecord(table, this.placeOf(change.object), change.id);
          decision = writeDecision(stored, { version: change.version, hash }, this.versionAt);
          if (decision === 'write') decision = 'stale';
        }
      }
      if (decision === 'fetch') {
        await this.fetchAndStore(change, change.version);
      } else if (decision !== 'skip') {
        this.counts.stale += 1;
        if (stored) this.#known.set(key(change), stored.body as JsonObject);
      }
    }
    if (change.deleted) {
      await store.markRecordDeleted(table, this.placeOf(change.object), change.id, { deletedAt: new Date(occurredAt * 1000), sourceVersion: change.version });
    }
  }

  /** The body known for a record after this event's writes and fetches. */
  known(reference: RecordReference): JsonObject | undefined {
    return this.#known.get(key(reference));
  }

  /** A record the event names without carrying it: fetched only when not stored yet. */
  async reference(reference: RecordReference): Promise<void> {
    if (!this.selected.has(reference.object) || this.#known.has(key(reference))) return;
    const stored = await store.getRecord(this.gateway.table, this.placeOf(reference.object), reference.id);
    if (stored) this.#known.set(key(reference), stored.body as JsonObject);
    else await this.fetchAndStore(reference);
  }

  /** Whose event it is: the customer as stored (or just fetched), else what the event says about them. */
  async customerFor(plan: PublishPlan): Promise<EventCustomer | undefined> {
    let customerId = plan.customerId;
    if (!customerId && plan.customerOf) {
      const owner = await this.body(plan.customerOf);
      customerId = typeof owner?.customerId === 'string' && owner.customerId !== '' ? owner.customerId : undefined;
    }
    if (!customerId) return undefined;
    // A customer reached through another record (a dispute's charge) is fetched like any other.
    await this.reference({ object: 'customers', id: customerId });
    const body = await this.body({ object: 'customers', id: customerId });
    const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
    const email = text(body?.email) ?? plan.customerHint?.email;
    const name = text(body?.name) ?? plan.customerHint?.name;
    return { id: customerId, ...(email ? { email } : {}), ...(name ? { name } : {}) };
  }

  private async body(reference: RecordReference): Promise<JsonObject | undefined> {
    const known = this.#known.get(key(reference));
    if (known) return known;
    const stored = await store.getRecord(this.gateway.table, this.placeOf(reference.object), reference.id);
    return stored?.body as JsonObject | undefined;
  }

  /**
   * The platform's copy now. It is at least as new as any event created before the fetch, and as
   * the event that asked for it (`atLeast`, whatever the two clocks say), so it replaces whatever
   * is stored unless that is newer still; a record the platform no longer has is marked deleted.
   */
  private async fetchAndStore(reference: RecordReference, atLeast = 0): Promise<void> {
    const { table } = this.gateway;
    const fetched = await this.fetch(reference.object, reference.id);
    this.counts.fetched += 1;
    if (!fetched.found) {
      const version = Math.max(this.versionAt(this.gateway.now()), atLeast);
      await store.markRecordDeleted(table, this.placeOf(reference.object), reference.id, { deletedAt: new Date(this.gateway.now()), sourceVersion: version });
      return;
    }
    // The platform's own version when it has one (billing); else the fetch time (payment, see platform-records.ts).
    const version = Math.max(fetched.record.sourceVersion ?? this.versionAt(this.gateway.now()), atLeast);
    const hash = recordHash(fetched.record.fields);
    await store.putRecordIfChanged(table, this.placeOf(reference.object), this.toWrite(fetched.record, hash, version));
    this.#known.set(key(reference), fetched.record.fields);
  }

  private toWrite(record: NormalisedRecord, hash: string, version: number): RecordWrite & { sourceVersion: number } {
    return {
      id: record.id,
      hash,
      body: record.fields,
      sourceVersion: version,
      syncedAt: new Date(this.gateway.now()).toISOString(),
      ...(record.email ? { email: record.email } : {}),
      ...(record.customerId ? { customerId: record.customerId } : {}),
      ...(record.updatedAt ? { updatedAt: record.updatedAt } : {}),
    };
  }
}

const key = (reference: RecordReference) => `${reference.object}\n${reference.id}`;
