import { randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { EngagementEvent } from '../queues/messages';
import type { SyncJob } from '../queues/messages';
import type { Connection } from '../store/items';
import type { ScheduledWork, ScheduledWorkContext } from '../sync/scheduled-work';
import type { SyncFrequency } from '../sync/sync-settings';
import { dataClient } from './client';
import { connectionTargets, countOutcomes, groupByAccount, ingestAccount, type IngestionItem, type OpenDataSession } from './ingestion';
import { DataSyncSettings } from './settings';
import * as store from '../store/store';

/**
 * When accepted engagement events are sent, by the connection's Sync frequency:
 * - Real-time (streaming): at once, through the ingestion queue (SQS, batches of up to 50);
 * - Hourly, Daily: held in the table (one partition per account, in acceptance order) and sent
 *   when that schedule fires, in requests of at most 50 records, oldest first.
 *
 * Why the table and not a queue with a delay: SQS delays a message by 15 minutes at most
 * (DelaySeconds, message timers), an hour or a day is out of reach, and a FIFO queue (order) takes
 * no per-message delay and hands Lambda batches of 10, not 50. The table keeps events until they
 * are sent and deleted, across restarts and deployments, and reads back in order.
 *
 * The send runs as a job on the sync queue (FIFO, one group per connection): one connection's
 * held events are never sent by two workers at once, and requests go one after another, so one
 * person's events arrive in the order they were accepted. A request that fails for a reason that
 * passes (429, 5xx, timeout) stops the send: what is left stays held, and the job is retried.
 * A record the platform refuses is handed to the ingestion queue, whose retries and dead-letter
 * queue (alarmed) treat it like a real-time event the platform refuses.
 */

export const HELD_EVENTS_JOB = 'engagement_events';
/** Held events read per round; sent in requests of at most 50. */
const ROUND = 500;
/** Leaves this much of the invocation to hand over to a continuation. */
const STOP_MARGIN_MS = 10_000;

const openSession: OpenDataSession = async ({ accountId, config, credentials, env }) => dataClient({ env, accountId, config, credentials });

/** Queues (Real-time) or holds (Hourly, Daily) events the settings allow writing. */
export async function acceptEngagementEvents(
  gateway: Gateway,
  accountId: string,
  settings: DataSyncSettings,
  events: readonly EngagementEvent[],
): Promise<{ accepted: number; held: boolean }> {
  const held = settings.frequency !== 'real_time';
  if (held) await store.holdEvents(gateway.table, accountId, 'data', events, gateway.now(), randomUUID().slice(0, 8));
  else await gateway.queues.ingestion.send(events.map((event) => ({ accountId, event })));
  await store.addDeliveryCounts(gateway.table, accountId, 'data', gateway.now(), { accepted: events.length, ...(held ? { held: events.length } : {}) });
  return { accepted: events.length, held };
}

/** The jobs a schedule brings: the send of held events when the schedule is the connection's frequency. Pure. */
export function heldEventJobs(settings: DataSyncSettings, frequency: SyncFrequency): string[] {
  return settings.frequency === frequency ? [HELD_EVENTS_JOB] : [];
}

/** Sends what the connection holds, oldest first, until nothing is left or the deadline nears. */
export async function sendHeldEvents(job: Pick<SyncJob, 'accountId'>, context: ScheduledWorkContext, options: { openSession?: OpenDataSession } = {}): Promise<{ more: boolean; sent: number }> {
  const { gateway, log } = context;
  const { accountId } = job;
  if (!(await store.getConnection(gateway.table, accountId, 'data'))) {
    log.warn('held engagement events not sent: the account has no data connection; they stay held until it is connected again');
    return { more: false, sent: 0 };
  }
  const targetFor = connectionTargets(gateway, options.openSession ?? openSession);
  const target = await targetFor(accountId);
  let sent = 0;
  for (;;) {
    if (context.deadline !== undefined && gateway.now() > context.deadline - STOP_MARGIN_MS) return { more: true, sent };
    const held = await store.listHeldEvents(gateway.table, accountId, 'data', ROUND);
    if (held.length === 0) return { more: false, sent };

    const items: IngestionItem[] = [];
    const unreadable: string[] = [];
    for (const { position, payload } of held) {
      const event = EngagementEvent.safeParse(payload);
      if (event.success) items.push({ messageId: position, receiveCount: 1, message: { accountId, event: event.data } });
      else unreadable.push(position);
    }
    if (unreadable.length > 0) log.error('held events that no longer match the schema were dropped', { count: unreadable.length, deadLetter: true });

    const records = groupByAccount(items).get(accountId) ?? [];
    const outcomes = await ingestAccount(accountId, records, { targetFor: async () => target, inOrder: true }, log);
    const byPosition = new Map(items.map((item) => [item.messageId, item.message]));
    const refused = outcomes.filter((o) => o.result === 'rejected').map((o) => byPosition.get(o.messageId)).filter((m) => m !== undefined);
    // Refused records go the dead-letter way of the real-time queue; then they leave the table.
    if (refused.length > 0) await gateway.queues.ingestion.send(refused);
    const done = outcomes.filter((o) => o.result !== 'retry').map((o) => o.messageId);
    await store.releaseHeldEvents(gateway.table, accountId, 'data', [...done, ...unreadable]);
    const counts = countOutcomes(outcomes);
    await store.addDeliveryCounts(gateway.table, accountId, 'data', gateway.now(), { sent: counts.sent, refused: counts.refused + counts.deadLettered, retried: counts.retried });
    sent += counts.sent;
    const retry = outcomes.find((o) => o.result === 'retry');
    if (retry && retry.result === 'retry') {
      // Thrown so the job is retried with the queue's backoff; the events stay held in order.
      throw new Error(`held engagement events not all sent (${sent} sent this run): ${retry.reason}`);
    }
  }
}

export const heldEventsWork: ScheduledWork<DataSyncSettings> = {
  jobsFor: heldEventJobs,
  owns: (object) => object === HELD_EVENTS_JOB,
  run: async (job, context) => {
    const { more, sent } = await sendHeldEvents(job, context);
    context.log.info('held engagement events sent', { sent, more });
    return { more };
  },
};

/** A frequency that no longer holds events: send what was held at once rather than never. */
export async function sendHeldOnFrequencyChange(change: { gateway: Gateway; log: Logger; before: Connection; after: Connection }): Promise<void> {
  const before = DataSyncSettings.safeParse(change.before.syncSettings);
  const after = DataSyncSettings.safeParse(change.after.syncSettings);
  if (!before.success || !after.success || before.data.frequency === after.data.frequency || before.data.frequency === 'real_time') return;
  const requestedAt = new Date(change.gateway.now()).toISOString();
  await change.gateway.queues.syncJobs.send([{ accountId: change.after.accountId, connector: 'data', object: HELD_EVENTS_JOB, trigger: 'manual', requestedAt }]);
  change.log.info('frequency changed: held engagement events are sent now', { from: before.data.frequency, to: after.data.frequency });
}
