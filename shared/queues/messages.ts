import * as z from 'zod/mini';
import { AccountId, ConnectorName } from '../connectors';

// Built on first use (z.lazy): the consumers parse their own queue's messages; other functions load this module for its types.
/** One sync job: page one data object of one connection from its checkpoint. */
export const SyncJob = z.lazy(() =>
  z
    .object({
      accountId: AccountId,
      connector: ConnectorName,
      object: z.string().check(z.minLength(1), z.maxLength(64)),
      /**
       * Which schedule asked for it, `manual` for a sync started from the dashboard, `connected` for
       * the sync Connect Account starts once its test passed, `retry` for the next try of a sync that
       * failed on something time fixes (shared/sync/sync-retry.ts), or `purge`: the connection was
       * disconnected, delete what was synced for it.
       */
      trigger: z.enum(['hourly', 'daily', 'weekly', 'manual', 'connected', 'retry', 'purge']),
      requestedAt: z.iso.datetime(),
      /** Set on a continuation: the run that stopped at its time budget and carries on from its checkpoint. */
      runId: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
      /** A manual "sync everything again" from the dashboard. */
      full: z.optional(z.boolean()),
    })
    .register(z.globalRegistry, { id: 'SyncJob' }),
);
export type SyncJob = z.infer<typeof SyncJob>;

export { syncJobGroup } from './sync-job-group';

/** A verified platform webhook waiting to be applied (the worker dedupes by event id). */
export const WebhookEventMessage = z.lazy(() =>
  z
    .object({
      accountId: AccountId,
      connector: ConnectorName,
      eventId: z.string().check(z.minLength(1), z.maxLength(255)),
      eventType: z.string().check(z.minLength(1), z.maxLength(255)),
      receivedAt: z.iso.datetime(),
      /** The platform's event body, parsed; applied by the event worker. */
      payload: z.record(z.string(), z.unknown()),
    })
    .register(z.globalRegistry, { id: 'WebhookEventMessage' }),
);
export type WebhookEventMessage = z.infer<typeof WebhookEventMessage>;

/** The spec's engagement-event schema (Data-platform records), plus the account it belongs to. */
export const EngagementEvent = z
  .object({
    event_id: z.string().check(z.minLength(1), z.maxLength(255)),
    customer_email: z.email(),
    event_type: z.string().check(z.minLength(1), z.maxLength(255)),
    event_timestamp: z.iso.datetime({ offset: true }),
    conversation_id: z.string().check(z.maxLength(255)),
    channel: z.string().check(z.maxLength(255)),
  })
  .register(z.globalRegistry, { id: 'EngagementEvent' });
export type EngagementEvent = z.infer<typeof EngagementEvent>;

export const IngestionMessage = z.lazy(() => z.object({ accountId: AccountId, event: EngagementEvent }).register(z.globalRegistry, { id: 'IngestionMessage' }));
export type IngestionMessage = z.infer<typeof IngestionMessage>;

/** Messages on each queue, by queue name; both the SQS and the in-process queue use it. */
export const queueMessages = {
  syncJobs: SyncJob,
  webhookEvents: WebhookEventMessage,
  ingestion: IngestionMessage,
} as const;
export type QueueName = keyof typeof queueMessages;
export type QueueMessage<Q extends QueueName> = z.infer<(typeof queueMessages)[Q]>;

/** Where a handler sends work it will not do itself. */
export interface JobQueue<T> {
  send(messages: T[]): Promise<void>;
  /**
   * Makes a message this consumer received visible again after `seconds` (SQS
   * ChangeMessageVisibility, which FIFO queues allow), instead of after the queue's visibility timeout.
   */
  changeVisibility?(receiptHandle: string, seconds: number): Promise<void>;
}
