import * as z from 'zod';
import { ConnectorName } from '../connectors';
import { DataObjectName } from '../store/items';
import { HISTORY_DAYS, REFUSAL_REASONS } from './history-terms';

export { HISTORY_DAYS } from './history-terms';

/**
 * What the dashboard's history views read: one schema per shape, used to check what the table
 * holds, as the API's response types, and in the OpenAPI document.
 */

const Time = z.iso.datetime({ offset: true });
const Count = z.number().int().nonnegative();

export const SyncRunStatus = z.enum(['running', 'finished', 'failed']).describe('running: handed over to a continuation; failed: stopped with an error (it may be retried, and then finish)');

/** One run of one data object: written at the end of each invocation of the run (usually one). */
export const SyncRun = z
  .object({
    connector: ConnectorName,
    object: DataObjectName,
    startedAt: Time,
    finishedAt: Time.optional().describe('When the run finished or last failed'),
    durationMs: Count.optional().describe('From the start to the finish (or the last failure), continuations included'),
    status: SyncRunStatus,
    mode: z.enum(['full', 'incremental']).optional(),
    trigger: z.string().optional().describe('schedule, manual, retry, ...'),
    requests: Count.describe('Platform requests (first attempts)'),
    retries: Count.describe('Platform requests sent again after a 429, 5xx or timeout'),
    pages: Count,
    created: Count,
    updated: Count,
    deleted: Count,
    failures: Count.describe('Failed attempts of this run (a retried run that then finished keeps its count)'),
    error: z.object({ reason: z.string(), remedy: z.string().optional() }).optional().describe('The last failure, in the user’s words'),
  })
  .meta({ id: 'SyncRun' });
export type SyncRun = z.infer<typeof SyncRun>;

export const SyncHistoryPage = z
  .object({
    runs: z.array(SyncRun).describe('Newest first, the last 30 days'),
    nextCursor: z.string().optional().describe('Pass as `cursor` for the next (older) page; absent on the last page'),
  })
  .meta({ id: 'SyncHistoryPage' });

export const SyncHistoryQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Runs per page'),
  cursor: z.string().max(2000).optional().describe('The `nextCursor` of the previous page'),
  object: DataObjectName.optional().describe('Only this data object'),
});

/** Why a webhook delivery was refused, in the words the dashboard shows. */
export const RefusalReason = z.enum(REFUSAL_REASONS);
export type RefusalReason = z.infer<typeof RefusalReason>;

export const RefusedCounts = z.object(Object.fromEntries(RefusalReason.options.map((reason) => [reason, Count])) as Record<RefusalReason, typeof Count>);

export const DeliveryHour = z
  .object({
    hour: Time.describe('The hour’s start (UTC)'),
    verified: Count.describe('Deliveries whose signature or credentials checked out (duplicates included)'),
    duplicates: Count.describe('Verified deliveries of an event already received'),
    refused: RefusedCounts,
  })
  .meta({ id: 'WebhookDeliveryHour' });
export type DeliveryHour = z.infer<typeof DeliveryHour>;

export const RecentRefusal = z
  .object({
    at: Time.describe('The latest refusal of this reason in its hour'),
    reason: RefusalReason,
    count: Count.describe('Refusals of this reason in the same hour'),
  })
  .meta({ id: 'RecentWebhookRefusal' });
export type RecentRefusal = z.infer<typeof RecentRefusal>;

export const WebhookDeliveries = z
  .object({
    hours: z.array(DeliveryHour).describe('Every hour of the last 7 days, oldest first (zeros where nothing came)'),
    lastRefused: z.array(RecentRefusal).describe('Newest first: the reason and time only, never a payload or a secret'),
  })
  .meta({ id: 'WebhookDeliveries' });

export const ConversationDay = z
  .object({
    day: z.iso.date(),
    started: Count,
    handedOff: Count,
    ended: Count.describe('Ended for any reason other than an expired session'),
    expired: Count.describe('Ended because the session token expired'),
    firstAgentMessages: Count.describe('Conversations ended this day that had an agent message'),
  })
  .meta({ id: 'ConversationDay' });
export type ConversationDay = z.infer<typeof ConversationDay>;

export const ConversationStats = z
  .object({
    days: z.array(ConversationDay).describe('Every day of the period, oldest first'),
    live: Count.describe('Conversations live now'),
    medianFirstAgentMessageSeconds: z
      .number()
      .nonnegative()
      .optional()
      .describe('Median time from the start to the first agent message, over the period (estimated within its bucket of a fixed histogram); absent when no conversation had one'),
  })
  .meta({ id: 'ConversationStats' });

export const ConversationStatsQuery = z.object({
  days: z.coerce.number().int().min(1).max(HISTORY_DAYS.conversations).default(14).describe('Days to show, today included'),
});
