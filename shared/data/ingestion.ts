import { Buffer } from 'node:buffer';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import type { PlatformClient } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { log as rootLogger, type Logger } from '../log/logger';
import { IngestionMessage, type EngagementEvent } from '../queues/messages';
import type { Credentials } from '../vault/sealed-credentials';
import type { DeliveryCounts } from '../store/store';
import { DEFAULT_INGESTION_OBJECT, ENGAGEMENT_EVENT_FIELDS } from './ingestion-schema';
import * as store from '../store/store';

/**
 * Streaming ingestion of engagement events into the data platform: the ingestion queue's worker.
 *
 * `POST /api/v1/ingest/sources/{connector}/{object}` with `{data: [records]}` answers 202 and
 * processes the records minutes later. The platform takes payloads under 200 KB; the gateway also
 * caps a request at 50 records (the spec's batch limit). Every record carries every schema field
 * (blank when unknown) and its timestamp in UTC.
 *
 * What happens to each message (reported per SQS message id, so the handler answers with a partial
 * batch failure):
 * - accepted by the platform: done;
 * - 429, 5xx, timeout, network error: the request's messages fail and SQS retries them with its
 *   backoff. A 429 ("slow down") or an auth/permission/unknown-object answer also stops the rest of
 *   that account's requests in this batch: they fail unsent;
 * - a 400 naming a record (`record 3 ...`): only that record is refused; the others are sent again
 *   without it. A 400 or 413 naming none: the request is split in halves until the refused record
 *   is alone, within a budget of extra requests per account (then the rest is retried later);
 * - a refused record is failed, not acknowledged, so it goes the dead-letter way: SQS redelivers it
 *   until the queue's maxReceiveCount (5) and then moves it to the dead-letter queue (alarmed). A
 *   schema being fixed meanwhile lets a retry succeed. On its last receive it is logged with
 *   `deadLetter: true` (ids and the field only, never the event's contents), the marker to look
 *   for next to the alarm;
 * - an account without a data connection: its messages fail with that reason (retried, then kept
 *   in the dead-letter queue for a redrive after connecting).
 * Within one batch nothing is sent twice: duplicate messages of one event share one record, and a
 * split or a retry without a refused record re-sends only records the platform did not take (a
 * refused request takes none).
 */

export const DEFAULT_INGESTION_CONNECTOR = 'integration_gateway';

/** The gateway's per-request limits: the spec's 50 records, and a margin under the platform's 200 KB. */
export const INGESTION_LIMITS: IngestionLimits = { maxRecords: 50, maxBytes: 200_000 };

/** Matches `maxReceiveCount` of the ingestion queue (lib/work-queue.ts). */
export const INGESTION_MAX_RECEIVES = 5;

/** Extra requests (splits, re-sends without a refused record) one account may make per batch. */
export const MAX_ISOLATION_REQUESTS = 16;

export interface IngestionLimits {
  maxRecords: number;
  maxBytes: number;
}

/** One SQS message of the ingestion queue, parsed. */
export interface IngestionItem {
  messageId: string;
  /** SQS's ApproximateReceiveCount: 1 on the first delivery. */
  receiveCount: number;
  message: IngestionMessage;
}

export type IngestionRecord = Record<(typeof ENGAGEMENT_EVENT_FIELDS)[number], string>;

export type IngestionOutcome =
  | { messageId: string; result: 'sent' }
  | { messageId: string; result: 'retry'; reason: string }
  | { messageId: string; result: 'rejected'; reason: string; deadLetter: boolean };

/** Where an account's records go: a session on its data tenant and the connector's names. */
export interface IngestionTarget {
  session: Pick<PlatformClient, 'request'>;
  connector: string;
  object: string;
}

/** The account's target, or undefined when the account has no data connection. */
export type TargetFor = (accountId: string) => Promise<IngestionTarget | undefined>;

/** One event to send, with every message that carried it (duplicates share one record). */
export interface PendingRecord {
  eventId: string;
  messages: Array<{ messageId: string; receiveCount: number }>;
  record: IngestionRecord;
  /** Its JSON size in bytes, as it goes in the payload. */
  bytes: number;
}

// ---- pure planning ----

function utcTimestamp(text: string): string {
  const time = Date.parse(text);
  return Number.isNaN(time) ? '' : new Date(time).toISOString();
}

/** The record the platform receives: every schema field present, blank when unknown, the timestamp in UTC. */
export function toIngestionRecord(event: EngagementEvent): IngestionRecord {
  const record = Object.fromEntries(ENGAGEMENT_EVENT_FIELDS.map((field) => [field, String(event[field] ?? '')])) as IngestionRecord;
  record.event_timestamp = utcTimestamp(event.event_timestamp);
  return record;
}

/** Messages grouped by account, one pending record per event id (the first message's event wins). */
export function groupByAccount(items: IngestionItem[]): Map<string, PendingRecord[]> {
  const accounts = new Map<string, Map<string, PendingRecord>>();
  for (const { messageId, receiveCount, message } of items) {
    const records = accounts.get(message.accountId) ?? new Map<string, PendingRecord>();
    accounts.set(message.accountId, records);
    const existing = records.get(message.event.event_id);
    if (existing) {
      existing.messages.push({ messageId, receiveCount });
      continue;
    }
    const record = toIngestionRecord(message.event);
    records.set(message.event.event_id, {
      eventId: message.event.event_id,
      messages: [{ messageId, receiveCount }],
      record,
      bytes: Buffer.byteLength(JSON.stringify(record)),
    });
  }
  return new Map([...accounts].map(([accountId, records]) => [accountId, [...records.values()]]));
}

/** `{"data":[` and `]}` around the records. */
const ENVELOPE_BYTES = Buffer.byteLength(JSON.stringify({ data: [] }));

/** The request body's size in bytes for these records. */
export function payloadBytes(records: Array<Pick<PendingRecord, 'bytes'>>): number {
  const commas = Math.max(0, records.length - 1);
  return ENVELOPE_BYTES + commas + records.reduce((sum, r) => sum + r.bytes, 0);
}

/** Splits records into requests of at most `maxRecords` records and `maxBytes` bytes, in order. */
export function planRequests<R extends Pick<PendingRecord, 'bytes'>>(records: R[], limits: IngestionLimits = INGESTION_LIMITS): R[][] {
  const requests: R[][] = [];
  let current: R[] = [];
  let bytes = ENVELOPE_BYTES;
  for (const record of records) {
    const added = record.bytes + (current.length > 0 ? 1 : 0);
    if (current.length > 0 && (current.length >= limits.maxRecords || bytes + added > limits.maxBytes)) {
      requests.push(current);
      current = [];
      bytes = ENVELOPE_BYTES;
    }
    bytes += record.bytes + (current.length > 0 ? 1 : 0);
    current.push(record);
  }
  if (current.length > 0) requests.push(current);
  return requests;
}

/** What to do after a request failed. */
export type FailedRequestVerdict =
  /** Try these messages again later (SQS backoff); `stopAccount`: do not send the account's other requests now. */
  | { kind: 'retry'; reason: string; stopAccount: boolean }
  /** The platform named the refused record: refuse it, send the others again. */
  | { kind: 'refuse-record'; index: number; reason: string }
  /** Refused without saying which record: split to find it. */
  | { kind: 'split'; reason: string }
  /** Accepted (a 2xx), though its body could not be read: the ingestion call needs no body. */
  | { kind: 'sent' };

/** The field a refusal names (`missing required field 'channel'`), if any: a name, never a value. */
function refusedField(message: string | undefined): string | undefined {
  return /field '([A-Za-z0-9_]{1,80})'/.exec(message ?? '')?.[1];
}

export function verdictFor(error: unknown, requestSize: number): FailedRequestVerdict {
  if (!(error instanceof PlatformError)) return { kind: 'retry', reason: 'unexpected error while sending', stopAccount: true };
  switch (error.kind) {
    case 'rate_limited':
      return { kind: 'retry', reason: 'the data platform asked to slow down (429)', stopAccount: true };
    case 'invalid_response':
      if (error.status !== undefined && error.status >= 200 && error.status < 300) return { kind: 'sent' };
      return { kind: 'retry', reason: `the data platform did not take the request (${error.status ?? error.kind})`, stopAccount: false };
    case 'unavailable':
    case 'timeout':
    case 'network':
      return { kind: 'retry', reason: `the data platform did not take the request (${error.status ?? error.kind})`, stopAccount: false };
    case 'auth':
    case 'permission':
    case 'not_found':
      return {
        kind: 'retry',
        reason: `the data connection cannot ingest (${error.status ?? error.kind}): reconnect it, or check the ingestion connector and object names`,
        stopAccount: true,
      };
    case 'invalid_request': {
      const field = refusedField(error.platformMessage);
      const reason = `the data platform refused the record (${error.status ?? 400}${field ? `, field ${field}` : ''})`;
      const index = /\brecord (\d+)\b/i.exec(error.platformMessage ?? '')?.[1];
      if (error.status === 400 && index !== undefined && Number(index) < requestSize) return { kind: 'refuse-record', index: Number(index), reason };
      return { kind: 'split', reason };
    }
  }
}

/** The outcome for each message of records that were not sent, or were refused. */
function outcomesFor(records: PendingRecord[], result: 'sent'): IngestionOutcome[];
function outcomesFor(records: PendingRecord[], result: 'retry' | 'rejected', reason: string, maxReceives?: number): IngestionOutcome[];
function outcomesFor(records: PendingRecord[], result: IngestionOutcome['result'], reason = '', maxReceives = INGESTION_MAX_RECEIVES): IngestionOutcome[] {
  return records.flatMap((r) =>
    r.messages.map(({ messageId, receiveCount }): IngestionOutcome => {
      if (result === 'sent') return { messageId, result };
      if (result === 'retry') return { messageId, result, reason };
      return { messageId, result, reason, deadLetter: receiveCount >= maxReceives };
    }),
  );
}

/** Outcomes as delivery counters (per message: a duplicate message counts as sent too). */
export function countOutcomes(outcomes: readonly IngestionOutcome[]): Required<Pick<DeliveryCounts, 'sent' | 'retried' | 'refused' | 'deadLettered'>> {
  const counts = { sent: 0, retried: 0, refused: 0, deadLettered: 0 };
  for (const outcome of outcomes) {
    if (outcome.result === 'sent') counts.sent += 1;
    else if (outcome.result === 'retry') counts.retried += 1;
    else if (outcome.deadLetter) counts.deadLettered += 1;
    else counts.refused += 1;
  }
  return counts;
}

/** SQS partial batch response: every message not sent fails (retried, and dead-lettered at maxReceiveCount). */
export function batchItemFailures(outcomes: IngestionOutcome[]): SQSBatchResponse['batchItemFailures'] {
  return outcomes.filter((o) => o.result !== 'sent').map((o) => ({ itemIdentifier: o.messageId }));
}

// ---- the thin I/O layer ----

export interface IngestionOptions {
  targetFor: TargetFor;
  log?: Logger;
  limits?: IngestionLimits;
  maxReceives?: number;
  maxIsolationRequests?: number;
  /**
   * Keep the records' order: after any failure that is retried later, send nothing more of this
   * account (a later event of a person never overtakes an earlier one). Held events are sent so.
   */
  inOrder?: boolean;
  /** Adds each account's outcome counts to its delivery counters (best effort). */
  recordCounts?: (accountId: string, counts: DeliveryCounts) => Promise<void>;
}

function ingestionPath(target: IngestionTarget): string {
  return `/api/v1/ingest/sources/${encodeURIComponent(target.connector)}/${encodeURIComponent(target.object)}`;
}

/** Sends one account's records; returns each message's outcome. */
export async function ingestAccount(accountId: string, records: PendingRecord[], options: IngestionOptions, log: Logger): Promise<IngestionOutcome[]> {
  let target: IngestionTarget | undefined;
  try {
    target = await options.targetFor(accountId);
  } catch (error) {
    log.warn('ingestion: the data connection could not be opened', { error });
    return outcomesFor(records, 'retry', 'the data connection could not be opened');
  }
  if (!target) {
    log.warn('ingestion: the account has no data connection', { messages: records.length });
    return outcomesFor(records, 'retry', 'the account has no data connection: connect the data platform, then redrive the dead-letter queue');
  }

  const outcomes: IngestionOutcome[] = [];
  const pending = planRequests(records, options.limits);
  let extraRequests = options.maxIsolationRequests ?? MAX_ISOLATION_REQUESTS;
  const refuse = (record: PendingRecord, reason: string) => {
    const refused = outcomesFor([record], 'rejected', reason, options.maxReceives);
    for (const outcome of refused) {
      if (outcome.result !== 'rejected') continue;
      // Ids only: the event's contents (an email address) stay out of the logs.
      log.warn(
        outcome.deadLetter
          ? 'ingestion: record refused; last receive, it goes to the dead-letter queue'
          : 'ingestion: record refused; retried until the dead-letter queue takes it',
        {
          eventId: record.eventId,
          messageId: outcome.messageId,
          reason,
          deadLetter: outcome.deadLetter,
        },
      );
    }
    outcomes.push(...refused);
  };
  const again = (request: PendingRecord[], reason: string): void => {
    if (request.length === 0) return;
    if (extraRequests <= 0) {
      outcomes.push(...outcomesFor(request, 'retry', `${reason}; not isolated within this batch`));
      return;
    }
    extraRequests -= 1;
    pending.unshift(request);
  };

  for (let request = pending.shift(); request; request = pending.shift()) {
    try {
      await target.session.request({ method: 'POST', path: ingestionPath(target), body: { data: request.map((r) => r.record) } });
      outcomes.push(...outcomesFor(request, 'sent'));
      continue;
    } catch (error) {
      const verdict = verdictFor(error, request.length);
      if (verdict.kind === 'sent') {
        outcomes.push(...outcomesFor(request, 'sent'));
      } else if (verdict.kind === 'retry') {
        log.warn('ingestion request failed; its messages will be retried', { records: request.length, reason: verdict.reason });
        outcomes.push(...outcomesFor(request, 'retry', verdict.reason));
        if (verdict.stopAccount || options.inOrder) {
          outcomes.push(...outcomesFor(pending.flat(), 'retry', `not sent: ${verdict.reason}`));
          pending.length = 0;
        }
      } else if (verdict.kind === 'refuse-record') {
        const refused = request[verdict.index];
        if (refused) refuse(refused, verdict.reason);
        again(
          request.filter((_, i) => i !== verdict.index),
          verdict.reason,
        );
      } else if (request.length === 1 && request[0]) {
        refuse(request[0], verdict.reason);
      } else {
        const half = Math.ceil(request.length / 2);
        // The second half first onto the front, so the first half is sent next.
        again(request.slice(half), verdict.reason);
        again(request.slice(0, half), verdict.reason);
      }
    }
  }
  return outcomes;
}

/** Sends a batch of ingestion messages (several accounts, each with its own session); one outcome per message. */
export async function ingestBatch(items: IngestionItem[], options: IngestionOptions): Promise<IngestionOutcome[]> {
  const log = options.log ?? rootLogger;
  const accounts = [...groupByAccount(items)];
  const perAccount = await Promise.all(
    accounts.map(async ([accountId, records]) => {
      const accountLog = log.with({ accountId });
      const outcomes = await ingestAccount(accountId, records, options, accountLog);
      await options
        .recordCounts?.(accountId, countOutcomes(outcomes))
        .catch((error: unknown) => accountLog.warn('ingestion: delivery counters not updated', { error }));
      return outcomes;
    }),
  );
  return perAccount.flat();
}

/** The SQS batch, parsed, sent, and answered as a partial batch response. */
export async function ingestSqsBatch(event: SQSEvent, options: IngestionOptions): Promise<SQSBatchResponse> {
  const log = options.log ?? rootLogger;
  const items: IngestionItem[] = [];
  const unreadable: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      body = undefined;
    }
    const parsed = IngestionMessage.safeParse(body);
    if (!parsed.success) {
      log.warn('ingestion message does not match its schema; it goes the dead-letter way', { messageId: record.messageId });
      unreadable.push({ itemIdentifier: record.messageId });
      continue;
    }
    const receiveCount = Number(record.attributes.ApproximateReceiveCount);
    items.push({ messageId: record.messageId, receiveCount: Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1, message: parsed.data });
  }
  const outcomes = await ingestBatch(items, options);
  const sent = outcomes.filter((o) => o.result === 'sent').length;
  log.info('ingestion batch done', { messages: event.Records.length, sent, failed: event.Records.length - sent });
  return { batchItemFailures: [...unreadable, ...batchItemFailures(outcomes)] };
}

// ---- the account's data connection ----

/** The ingestion connector's names in the data connection's config (non-secret), with their defaults. */
export const IngestionConfig = z.looseObject({
  ingestionConnector: z._default(z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/)), DEFAULT_INGESTION_CONNECTOR),
  ingestionObject: z._default(z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/)), DEFAULT_INGESTION_OBJECT),
});

/** Makes a data-platform session from a stored connection (the data connector's `dataClient`). */
export type OpenDataSession = (connection: {
  accountId: string;
  config: Record<string, unknown>;
  credentials: Credentials;
  env: Gateway['env'];
}) => Promise<Pick<PlatformClient, 'request'>>;

/** Targets from the store: the account's data connection, its credentials opened by the vault. */
export function connectionTargets(gateway: Gateway, openSession: OpenDataSession): TargetFor {
  return async (accountId) => {
    const connection = await store.getConnection(gateway.table, accountId, 'data');
    if (!connection) return undefined;
    const config = IngestionConfig.parse(connection.config);
    const credentials = await gateway.vault.open({ accountId, connector: 'data' }, connection.credentials);
    const session = await openSession({ accountId, config: connection.config, credentials, env: gateway.env });
    return { session, connector: config.ingestionConnector, object: config.ingestionObject };
  };
}
