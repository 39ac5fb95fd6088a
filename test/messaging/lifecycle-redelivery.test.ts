import { describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import type { Gateway } from '../../shared/gateway';
import { log } from '../../shared/log/logger';
import { applyEvents } from '../../shared/messaging/message-application';
import { MessagingSettings } from '../../shared/messaging/settings';
import { useStore } from '../support/dynamo';
import { conversation } from '../store/fixtures';

const db = useStore();

class Fenced extends Error {}

/**
 * A poller run fenced after it moved the conversation's state but before it published: the next
 * holder gets the same answer again (nothing was acknowledged) and must publish what the first
 * could not, under the same event id, so the lifecycle event is neither lost nor doubled.
 */
describe('a lifecycle event redelivered after a fenced run', () => {
  it('publishes conversation.queued and agent.joined once each, under the ids the first run would have used', async () => {
    const accountId = 'acct-redeliver';
    const conversationId = 'conv-redeliver';
    await db.store.putConversation(conversation(accountId, conversationId, { state: 'starting' }));
    await db.store.putLiveConversation({ accountId, conversationId, ack: -1, leaseOwner: 'run-1', leaseExpiresAt: Date.now() + 60_000, startedAt: Date.now() });
    const published: GatewayEvent[] = [];
    const gateway = { store: db.store, now: () => Date.now(), events: { publish: async (events: GatewayEvent[]) => void published.push(...events) } } as unknown as Gateway;
    const sentAt = new Date().toISOString();
    const answer = {
      events: [
        { direction: 'inbound' as const, sentAt, type: 'system' as const, sender: 'system' as const, lifecycle: 'queued' as const, details: { systemEvent: 'queue_update', position: 2 } },
        { direction: 'inbound' as const, sentAt, type: 'system' as const, sender: 'system' as const, lifecycle: 'agent_joined' as const, details: { systemEvent: 'chat_established', senderName: 'Ann' } },
      ],
      position: { sequence: 1 },
    };
    const context = (guard: () => void) => ({ gateway, log, runId: 'run-1', settings: MessagingSettings.parse({}), guard, stats: { delivered: 0 } });

    // The first run is fenced at its publish: the state moved, nothing went out.
    let guards = 0;
    const fencedAtPublish = () => {
      if (++guards === 3) throw new Fenced();
    };
    await expect(applyEvents(context(fencedAtPublish), (await db.store.getConversation(accountId, conversationId))!, -1, answer)).rejects.toBeInstanceOf(Fenced);
    expect((await db.store.getConversation(accountId, conversationId))!.state).toBe('active');
    expect(published).toEqual([]);

    // The next holder gets the same answer: both lifecycle events are published, once.
    const again = await applyEvents(context(() => {}), (await db.store.getConversation(accountId, conversationId))!, -1, answer);
    expect(again).toBe('ok');
    const lifecycle = published.filter((event) => event.type === 'conversation.queued' || event.type === 'agent.joined');
    expect(lifecycle.map((event) => event.type)).toEqual(['conversation.queued', 'agent.joined']);
    expect(lifecycle.map((event) => event.id)).toEqual([`messaging:${conversationId}:conversation.queued:queued-0`, `messaging:${conversationId}:agent.joined:agent-1`]);
  });

  it('publishes conversation.queued when the fenced run had already made the conversation queued', async () => {
    const accountId = 'acct-redeliver';
    const conversationId = 'conv-queued-only';
    await db.store.putConversation(conversation(accountId, conversationId, { state: 'starting' }));
    await db.store.putLiveConversation({ accountId, conversationId, ack: -1, leaseOwner: 'run-1', leaseExpiresAt: Date.now() + 60_000, startedAt: Date.now() });
    const published: GatewayEvent[] = [];
    const gateway = { store: db.store, now: () => Date.now(), events: { publish: async (events: GatewayEvent[]) => void published.push(...events) } } as unknown as Gateway;
    const answer = {
      events: [{ direction: 'inbound' as const, sentAt: new Date().toISOString(), type: 'system' as const, sender: 'system' as const, lifecycle: 'queued' as const, details: { systemEvent: 'queue_update', position: 1 } }],
      position: { sequence: 0 },
    };
    const context = (guard: () => void) => ({ gateway, log, runId: 'run-1', settings: MessagingSettings.parse({}), guard, stats: { delivered: 0 } });
    let guards = 0;
    const fencedAtPublish = () => {
      if (++guards === 2) throw new Fenced();
    };
    await expect(applyEvents(context(fencedAtPublish), (await db.store.getConversation(accountId, conversationId))!, -1, answer)).rejects.toBeInstanceOf(Fenced);
    expect((await db.store.getConversation(accountId, conversationId))!.state).toBe('queued');
    await applyEvents(context(() => {}), (await db.store.getConversation(accountId, conversationId))!, -1, answer);
    expect(published.filter((event) => event.type === 'conversation.queued').map((event) => event.id)).toEqual([`messaging:${conversationId}:conversation.queued:queued-0`]);
  });
});
