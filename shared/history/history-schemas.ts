import * as z from 'zod/mini';
import { ConnectorName } from '../connectors';
import { DataObjectName } from '../store/items';
import { HISTORY_DAYS, REFUSAL_REASONS } from './history-terms';

export { HISTORY_DAYS } from './history-terms';

/**
 * What the dashboard's history views read: one schema per shape, used to check what the table
 * holds, as the API's response types, and in the OpenAPI document.
 */

const Time = z.iso.datetime({ offset: true });
const Count = z.number().check(z.int(), z.nonnegative());

export const SyncRunStatus = z
  .enum(['running', 'finished', 'failed'])
  .check(z.describe('running: handed over to a continuation; failed: stopped with an error (it may be retried, and then finish)'));

/** One run of one data object: written at the end of each invocation of the run (usually one). */
export const SyncRun = z
  .object({
    connector: ConnectorName,
    object: DataObjectName,
    startedAt: Time,
    finishedAt: z.optional(Time).check(z.describe('When the run finished or last failed')),
    durationMs: z.optional(Count).check(z.describe('From the start to the finish (or the last failure), continuations included')),
    status: SyncRunStatus,
    mode: z.optional(z.enum(['full', 'incremental'])),
    trigger: z.optional(z.string()).check(z.describe('schedule, manual, retry, ...')),
    requests: Count.check(z.describe('Platform requests (first attempts)')),
    retries: Count.check(z.describe('Platform requests sent again after a 429, 5xx or timeout')),
    pages: Count,
    created: Count,
    updated: Count,
    deleted: Count,
    failures: Count.check(z.describe('Failed attempts of this run (a retried run that then finished keeps its count)')),
    error: z.optional(z.object({ reason: z.string(), remedy: z.optional(z.string()) })).check(z.describe('The last failure, in the user’s words')),
  })
  .register(z.globalRegistry, { id: 'SyncRun' });
export type SyncRun = z.infer<typeof SyncRun>;

export const SyncHistoryPage = z
  .object({
    runs: z.array(SyncRun).check(z.describe('Newest first, the last 30 days')),
    nextCursor: z.optional(z.string()).check(z.describe('Pass as `cursor` for the next (older) page; absent on the last page')),
  })
  .register(z.globalRegistry, { id: 'SyncHistoryPage' });

export const SyncHistoryQuery = z.object({
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(200)), 50).check(z.describe('Runs per page')),
  cursor: z.optional(z.string().check(z.maxLength(2000))).check(z.describe('The `nextCursor` of the previous page')),
  object: z.optional(DataObjectName).check(z.describe('Only this data object')),
});

/** Why a webhook delivery was refused, in the words the dashboard shows. */
export const RefusalReason = z.enum(REFUSAL_REASONS);
export type RefusalReason = z.infer<typeof RefusalReason>;

export const RefusedCounts = z.object(Object.fromEntries(RefusalReason.options.map((reason) => [reason, Count])) as Record<RefusalReason, typeof Count>);

export const DeliveryHour = z
  .object({
    hour: Time.check(z.describe('The hour’s start (UTC)')),
    verified: Count.check(z.describe('Deliveries whose signature or credentials checked out (duplicates included)')),
    duplicates: Count.check(z.describe('Verified deliveries of an event already received')),
    refused: RefusedCounts,
  })
  .register(z.globalRegistry, { id: 'WebhookDeliveryHour' });
export type DeliveryHour = z.infer<typeof DeliveryHour>;

export const RecentRefusal = z
  .object({
    at: Time.check(z.describe('The latest refusal of this reason in its hour')),
    reason: RefusalReason,
    count: Count.check(z.describe('Refusals of this reason in the same hour')),
  })
  .register(z.globalRegistry, { id: 'RecentWebhookRefusal' });
export type RecentRefusal = z.infer<typeof RecentRefusal>;

export const WebhookDeliveries = z
  .object({
    hours: z.array(DeliveryHour).check(z.describe('Every hour of the last 7 days, oldest first (zeros where nothing came)')),
    lastRefused: z.array(RecentRefusal).check(z.describe('Newest first: the reason and time only, never a payload or a secret')),
  })
  .register(z.globalRegistry, { id: 'WebhookDeliveries' });

export const ConversationDay = z
  .object({
    day: z.iso.date(),
    started: Count,
    handedOff: Count,
    ended: Count.check(z.describe('Ended for any reason other than an expired session')),
    expired: Count.check(z.describe('Ended because the session token expired')),
    firstAgentMessages: Count.check(z.describe('Conversations ended this day that had an agent message')),
  })
  .register(z.globalRegistry, { id: 'ConversationDay' });
export type ConversationDay = z.infer<typeof ConversationDay>;

export const ConversationStats = z
  .object({
    days: z.array(ConversationDay).check(z.describe('Every day of the period, oldest first')),
    live: Count.check(z.describe('Conversations live now')),
    medianFirstAgentMessageSeconds: z
      .optional(z.number().check(z.nonnegative()))
      .check(
        z.describe(
          'Median time from the start to the first agent message, over the period (estimated within its bucket of a fixed histogram); absent when no conversation had one',
        ),
      ),
  })
  .register(z.globalRegistry, { id: 'ConversationStats' });

export const ConversationStatsQuery = z.object({
  days: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(HISTORY_DAYS.conversations)), 14).check(z.describe('Days to show, today included')),
});
