import type { ConnectorPlatform } from '../connections/connector';
import type { ClientOptions } from '../connections/connector-platform';
import { AccountId, type ConnectorName } from '../connectors';
import type { GatewayEvent } from '../events/gateway-event';
import type { Gateway } from '../gateway';
import type { PlatformCall } from '../http/platform-client';
import { log as rootLog, type Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import type { SyncRunResult } from '../sync/run-sync-job';
import { bucketOf, dayOf, deliveryOfClaim, firstAgentMessageSeconds, refusalReasonOf, tallyConversationEvents } from './history-decisions';
import * as store from '../store/store';
import * as history from './history-store';

/**
 * What the functions that do the work call to keep history: one call each, at the point where the
 * outcome is known (the sync job's end, the receiver's refusal, the event worker's claim, the
 * conversation's published lifecycle events). History is a record of the work, never part of it:
 * a failed history write is logged and the work goes on.
 */

async function bestEffort(what: string, write: () => Promise<void>, log: Logger = rootLog): Promise<void> {
  try {
    await write();
  } catch (error) {
    log.warn(`could not keep ${what} in the history`, { error });
  }
}

type Platforms = Readonly<Record<string, ConnectorPlatform>>;

/**
 * Counts one sync job invocation's platform requests and retries (through the clients' `onCall`),
 * and records the run when the job returns: one read of the checkpoint (the run's start, mode and
 * counts) and one write.
 */
export function syncRunRecorder(gateway: Gateway, platforms: Platforms, job: SyncJob) {
  const calls = { requests: 0, retries: 0 };
  const onCall = (call: PlatformCall) => (call.attempt === 1 ? (calls.requests += 1) : (calls.retries += 1));
  const counted: Platforms = Object.fromEntries(
    Object.entries(platforms).map(([name, platform]) => [name, { ...platform, client: (options: ClientOptions) => platform.client(Object.assign({}, options, { onCall })) }]),
  );
  return {
    platforms: counted,
    record: (result: SyncRunResult, log?: Logger) =>
      bestEffort(
        'the sync run',
        async () => {
          if (result.outcome === 'skipped') return;
          const checkpoint = await store.getSyncCheckpoint(gateway.table, job.accountId, job.connector, job.object);
          if (!checkpoint?.lastRunStartedAt) return;
          const pages = result.outcome === 'failed' ? 0 : result.pages;
          await history.recordSyncRun(gateway.table, {
            accountId: job.accountId,
            connector: job.connector,
            object: job.object,
            startedAt: checkpoint.lastRunStartedAt,
            status: result.outcome === 'continued' ? 'running' : result.outcome,
            at: new Date(gateway.now()),
            mode: checkpoint.mode,
            trigger: job.trigger,
            added: { ...calls, pages },
            counts: { created: checkpoint.counts.created, updated: checkpoint.counts.updated, deleted: checkpoint.counts.deleted },
            ...(result.outcome === 'failed' ? { error: { reason: result.problem.reason, remedy: result.problem.remedy } } : {}),
          });
        },
        log,
      ),
  };
}

/** The receiver refused a delivery: counted under the account the address names (when it can be one). */
export function countWebhookRefusal(gateway: Gateway, accountId: string | undefined, connector: ConnectorName, error: unknown): Promise<void> {
  const problem = typeof error === 'object' && error !== null && 'problem' in error ? (error as { problem: { type?: string; status?: number } }).problem : undefined;
  const reason = refusalReasonOf(problem);
  if (!reason || !accountId || !AccountId.safeParse(accountId).success) return Promise.resolve();
  return bestEffort('a refused webhook', () => history.countDelivery(gateway.table, accountId, connector, gateway.now(), { refused: reason }));
}

/** The event worker claimed a verified delivery: a new event, or a duplicate of one handled before. */
export function countClaimedDelivery(gateway: Gateway, message: { accountId: string; connector: ConnectorName; receivedAt: string }, claim: { outcome: string; attempts?: number }): Promise<void> {
  const delivery = deliveryOfClaim(claim);
  if (!delivery) return Promise.resolve();
  return bestEffort('a webhook delivery', () => history.countDelivery(gateway.table, message.accountId, message.connector, Date.parse(message.receivedAt), delivery));
}

/**
 * Conversation lifecycle events as they are published: started, handed off, ended, expired per
 * day; an ended conversation also adds its time to the first agent message (read from its stored
 * messages, once). Message events cost nothing here.
 */
export async function countConversationEvents(gateway: Gateway, events: readonly GatewayEvent[]): Promise<void> {
  const tallies = tallyConversationEvents(events);
  if (tallies.length === 0) return;
  await bestEffort('conversation counts', async () => {
    for (const tally of tallies) {
      const buckets: number[] = [];
      for (const event of events) {
        if (event.type !== 'conversation.ended' || event.accountId !== tally.accountId || dayOf(Date.parse(event.occurredAt)) !== tally.day) continue;
        const { conversationId, startedAt } = event.data as { conversationId?: string; startedAt?: string };
        if (!conversationId || !startedAt) continue;
        const seconds = firstAgentMessageSeconds(startedAt, await store.listMessages(gateway.table, tally.accountId, conversationId));
        if (seconds !== undefined) buckets.push(bucketOf(seconds));
      }
      await history.countConversations(gateway.table, tally, buckets);
    }
  });
}
