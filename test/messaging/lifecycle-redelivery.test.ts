import { describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import type { Gateway } from '../../shared/gateway';
import { log } from '../../shared/log/logger';
import type { TransportMessage } from '../../shared/messaging/conversation-transport';
import { applyEvents } from '../../shared/messaging/message-application';
import { MessagingSettings } from '../../shared/messaging/settings';
import { useTable } from '../support/dynamo';
import { conversation } from '../store/fixtures';
import * as store from '../../shared/store/store';

const db = useTable();
const accountId = 'acct-redeliver';

class Fenced extends Error {}

/** A lifecycle event as the transport reads it. */
function lifecycleEvent(lifecycle: 'queued' | 'agent_joined', details: Record<string, unknown>): TransportMessage {
  return { direction: 'inbound', sentAt: new Date().toISOString(), type: 'system', sender: 'system', lifecycle, details };
}

/**
 * A conversation held by run-1 and an answer to apply twice: first by a run fenced at its Nth
 * guard (after the state change, before the publish), then by the next holder, which gets the same
 * answer again since nothing was acknowledged. Returns what was published and the state in between.
 */
async function fencedThenRedelivered(conversationId: string, events: TransportMessage[], fencedAtGuard: number) {
  await store.putConversation(db.table, conversation(accountId, conversationId, { state: 'starting' }));
  await store.putLiveConversation(db.table, { accountId, conversationId, ack: -1, leaseOwner: 'run-1', leaseExpiresAt: Date.now() + 60_000, startedAt: Date.now() });
  const published: GatewayEvent[] = [];
  const gateway = { table: db.table, now: () => Date.now(), events: { publish: async (batch: GatewayEvent[]) => void published.push(...batch) } } as unknown as Gateway;
  const answer = { events, position: { sequence: events.length - 1 } };
  const context = (guard: () => void) => ({ gateway, log, runId: 'run-1', settings: MessagingSettings.parse({}), guard, stats: { delivered: 0 } });
  const current = async () => (await store.getConversation(db.table, accountId, conversationId))!;

  let guards = 0;
  const fenced = () => {
    if (++guards === fencedAtGuard) throw new Fenced();
  };
  await expect(applyEvents(context(fenced), await current(), -1, answer)).rejects.toBeInstanceOf(Fenced);
  const stateAfterFence = (await current()).state;
  const publishedAtFence = published.length;
  const outcome = await applyEvents(context(() => {}), await current(), -1, answer);
  return { published, stateAfterFence, publishedAtFence, outcome };
}

/**
 * A poller run fenced after it moved the conversation's state but before it published: the next
 * holder must publish what the first could not, under the same event id, so the lifecycle event is
 * neither lost nor doubled.
 */
describe('a lifecycle event redelivered after a fenced run', () => {
  it('publishes conversation.queued and agent.joined once each, under the ids the first run would have used', async () => {
    const conversationId = 'conv-redeliver';
    const run = await fencedThenRedelivered(
      conversationId,
      [lifecycleEvent('queued', { systemEvent: 'queue_update', position: 2 }), lifecycleEvent('agent_joined', { systemEvent: 'chat_established', senderName: 'Ann' })],
      3,
    );
    expect(run.stateAfterFence).toBe('active');
    expect(run.publishedAtFence).toBe(0);
    expect(run.outcome).toBe('ok');
    const lifecycle = run.published.filter((event) => event.type === 'conversation.queued' || event.type === 'agent.joined');
    expect(lifecycle.map((event) => event.type)).toEqual(['conversation.queued', 'agent.joined']);
    expect(lifecycle.map((event) => event.id)).toEqual([`messaging:${conversationId}:conversation.queued:queued-0`, `messaging:${conversationId}:agent.joined:agent-1`]);
  });

  it('publishes conversation.queued when the fenced run had already made the conversation queued', async () => {
    const conversationId = 'conv-queued-only';
    const run = await fencedThenRedelivered(conversationId, [lifecycleEvent('queued', { systemEvent: 'queue_update', position: 1 })], 2);
    expect(run.stateAfterFence).toBe('queued');
    expect(run.published.filter((event) => event.type === 'conversation.queued').map((event) => event.id)).toEqual([`messaging:${conversationId}:conversation.queued:queued-0`]);
  });
});
