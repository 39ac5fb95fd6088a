import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../shared/api/problem';
import { prechatDetails } from '../../shared/messaging/conversations';
import { GatewayEnvironment } from '../../shared/config';
import { plannedPerPoller, pollerCapacity, shardCount } from '../../shared/messaging/fleet';
import { handoverWaitMs, homeShard, leaseLapsed, messageOf, preferredShards, reconnectDelayMs } from '../../shared/messaging/poller';
import { MessagingSettings } from '../../shared/messaging/settings';
import { chronological, formatTranscript } from '../../shared/messaging/transcript';

describe('messaging decisions (pure)', () => {
  it('builds prechatDetails from the mapping and refuses unmapped attributes', () => {
    const settings = MessagingSettings.parse({ prechatMapping: { Email: { attribute: 'email', transcriptFields: ['Visitor_Email__c'] }, Plan: { attribute: 'plan', displayToAgent: false } } });
    expect(prechatDetails(settings, { email: 'a@example.com' })).toEqual([{ label: 'Email', value: 'a@example.com', transcriptFields: ['Visitor_Email__c'], displayToAgent: true }]);
    expect(() => prechatDetails(settings, { shoe: '44' })).toThrow(ProblemError);
    expect(MessagingSettings.safeParse({ prechatMapping: { Email: { attribute: 'email', transcriptFields: ['Standard'] } } }).success).toBe(false);
    expect(MessagingSettings.safeParse({ transcriptField: 'Transcript' }).success).toBe(false);
  });

  it('sizes the fleet at 90% of capacity (whole conversations), at least one poller while anything is live, none when nothing is', () => {
    expect(plannedPerPoller(230)).toBe(207);
    expect(plannedPerPoller(240)).toBe(216);
    expect(plannedPerPoller(200)).toBe(180);
    expect(plannedPerPoller(1)).toBe(1);
    expect(shardCount(0, 240, 50)).toBe(0);
    expect(shardCount(1, 240, 50)).toBe(1);
    expect(shardCount(216, 240, 50)).toBe(1);
    expect(shardCount(217, 240, 50)).toBe(2);
    expect(shardCount(1000, 240, 50)).toBe(5);
    expect(shardCount(1000, 200, 50)).toBe(6);
    expect(shardCount(1_000_000, 240, 50)).toBe(50);
  });

  it('a planned poller never holds more than its capacity, at any size (below the shard limit; past it surges take the rest)', () => {
    for (const capacity of [1, 7, 200, 240, 333, 2000]) {
      for (const live of [1, 50, 999, 1000, 12_345]) {
        const shards = shardCount(live, capacity, 1_000_000);
        expect(Math.ceil(live / shards), `${live} live at capacity ${capacity}`).toBeLessThanOrEqual(capacity);
      }
    }
  });

  it('a 128 MB poller holds what fits in four fifths of its memory after its floor', () => {
    // (128 × 0.8 − 77) MB × 1024 / 90.1 KB = 288.7
    expect(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 90.1 })).toBe(288);
    expect(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 90.1 * 1.25 })).toBe(230);
    expect(pollerCapacity({ memoryMb: 256, floorMb: 77, perConversationKb: 90.1 })).toBe(1452);
    expect(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 90.1, budget: 0.75 })).toBe(215);
    // No room, or nothing measured: none.
    expect(pollerCapacity({ memoryMb: 128, floorMb: 103, perConversationKb: 90.1 })).toBe(0);
    expect(pollerCapacity({ memoryMb: 128, floorMb: 90, perConversationKb: 0 })).toBe(0);
  });

  it("the default capacity fits a 128 MB poller at the bench's higher per-conversation figure with a quarter more for variation", () => {
    const capacity = GatewayEnvironment.parse({}).POLLER_CAPACITY;
    expect(capacity).toBeLessThanOrEqual(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 90.1 * 1.25 }));
    // And the plan gives a poller no more than that.
    expect(Math.ceil(1000 / shardCount(1000, capacity, 50))).toBeLessThanOrEqual(capacity);
  });

  it('spreads conversations over poller slots, backs off with full jitter, and judges leases by the owner heartbeat', () => {
    const slots = new Set(Array.from({ length: 200 }, (_, i) => homeShard(`acct_${i}`, 4)));
    expect([...slots].sort()).toEqual([0, 1, 2, 3]);
    expect(reconnectDelayMs(1, () => 0.999)).toBeLessThan(500);
    expect(reconnectDelayMs(3, () => 0.999)).toBeLessThan(2000);
    expect(reconnectDelayMs(3, () => 0.999)).toBeGreaterThan(1900);
    expect(reconnectDelayMs(30, () => 0.999)).toBeLessThanOrEqual(30_000);
    expect(reconnectDelayMs(5, () => 0)).toBe(0);
    const live = { accountId: 'a', conversationId: 'c', ack: 1, startedAt: 0, leaseOwner: 'run-a', leaseExpiresAt: 100_000 };
    expect(leaseLapsed(live, 10_000, 9_000, 2_000)).toBe(false);
    expect(leaseLapsed(live, 10_000, 11_000, 2_000)).toBe(false);
    expect(leaseLapsed(live, 10_000, 12_001, 2_000)).toBe(true);
    expect(leaseLapsed(live, undefined, 0, 2_000)).toBe(true);
    expect(leaseLapsed({ ...live, leaseExpiresAt: 5 }, 1e12, 6, 2_000)).toBe(true);
    expect(leaseLapsed({ ...live, leaseOwner: undefined }, undefined, 0, 0)).toBe(true);
  });

  it('places an account\'s conversations on its home slot, spilling to the next slots past the bounded load', () => {
    const live = (accounts: number, each: number) =>
      Array.from({ length: accounts * each }, (_, i) => ({ accountId: `acct_${i % accounts}`, conversationId: `cv_${String(i).padStart(5, '0')}` }));
    // 1,000 conversations of 100 accounts over 7 slots: balanced within the bound, each account on one or two slots.
    const many = live(100, 10);
    const placed = preferredShards(many, 7, 200);
    expect(placed.size).toBe(1000);
    const loads = Array.from({ length: 7 }, (_, slot) => [...placed.values()].filter((s) => s === slot).length);
    expect(Math.max(...loads)).toBeLessThanOrEqual(Math.ceil((1000 / 7) * 1.25));
    expect(loads.reduce((a, b) => a + b, 0)).toBe(1000);
    const slotsOf = (accountId: string) => new Set(many.filter((c) => c.accountId === accountId).map((c) => placed.get(`${c.accountId}/${c.conversationId}`)));
    const spread = Array.from({ length: 100 }, (_, a) => slotsOf(`acct_${a}`).size);
    expect(Math.max(...spread)).toBeLessThanOrEqual(2);
    expect(spread.filter((n) => n === 1).length).toBeGreaterThanOrEqual(90);
    // Accounts per slot: about 100 / 7, not the ~80 that hashing each conversation gives.
    const accountsPerSlot = Array.from({ length: 7 }, (_, slot) => new Set(many.filter((c) => placed.get(`${c.accountId}/${c.conversationId}`) === slot).map((c) => c.accountId)).size);
    expect(Math.max(...accountsPerSlot)).toBeLessThan(30);
    // One huge account fills its home slot to the bound and spills over the next ones in turn.
    const huge = live(1, 500);
    const hugeLoads = Array.from({ length: 5 }, (_, slot) => [...preferredShards(huge, 5, 200).values()].filter((s) => s === slot).length);
    expect(hugeLoads.reduce((a, b) => a + b, 0)).toBe(500);
    expect(hugeLoads.filter((load) => load === 125)).toHaveLength(4);
    // The same listing in another order: the same answer (every run computes it on its own).
    expect(preferredShards([...many].reverse(), 7, 200)).toEqual(placed);
    // More live than the slots may hold: every conversation still has a slot.
    expect(preferredShards(live(3, 100), 1, 50).size).toBe(300);
  });

  it('waits out the handover grace after a release, and never for a conversation nobody held', () => {
    expect(handoverWaitMs(undefined, 5_000, 1_000)).toBe(0);
    expect(handoverWaitMs(5_000, 5_000, 1_000)).toBe(1_000);
    expect(handoverWaitMs(5_000, 5_400, 1_000)).toBe(600);
    expect(handoverWaitMs(5_000, 6_000, 1_000)).toBe(0);
    expect(handoverWaitMs(5_000, 90_000, 1_000)).toBe(0);
    // A release stamped ahead of this clock (skew) waits no longer than the grace.
    expect(handoverWaitMs(9_000, 5_000, 1_000)).toBe(1_000);
    expect(handoverWaitMs(5_000, 5_000, 0)).toBe(0);
  });

  it('maps the platform events to messages and lifecycle effects', () => {
    const at = '2025-01-01T00:00:00.000Z';
    expect(messageOf({ type: 'Text', message: { id: 'm1', text: 'hi', sender: { role: 'Agent', name: 'Ann' }, timestamp: at } }, 'x')).toMatchObject({ type: 'text', text: 'hi', sender: 'agent', platformMessageId: 'm1', sentAt: at, details: { senderName: 'Ann' } });
    expect(messageOf({ type: 'AgentJoined', message: { name: 'Ann' } }, at)).toMatchObject({ type: 'system', lifecycle: 'agent_joined', sentAt: at });
    expect(messageOf({ type: 'QueueUpdate', message: { position: 2 } }, at)).toMatchObject({ lifecycle: 'queued', details: { position: 2 } });
    expect(messageOf({ type: 'ChatEnded', message: { reason: 'EndUser' } }, at)).toMatchObject({ lifecycle: 'ended' });
    expect(messageOf({ type: 'SomethingNew', message: {} }, at)).toMatchObject({ type: 'system', details: { systemEvent: 'something_new' } });
  });

  it('merges both sides chronologically and cuts the transcript to the field limit', () => {
    const received = [
      { accountId: 'a', conversationId: 'c', sequence: 2, direction: 'inbound' as const, type: 'text' as const, text: 'second', sender: 'agent', sentAt: '2025-01-01T00:00:02.000Z' },
      { accountId: 'a', conversationId: 'c', sequence: 1, direction: 'inbound' as const, type: 'system' as const, sender: 'system', details: { systemEvent: 'queue_update' }, sentAt: '2025-01-01T00:00:00.000Z' },
    ];
    const sent = [{ accountId: 'a', conversationId: 'c', messageId: 'x', status: 'sent' as const, author: 'automated' as const, type: 'text' as const, text: 'first reply', sentAt: '2025-01-01T00:00:01.000Z' }];
    const entries = chronological(received, sent);
    expect(entries.map((e) => e.id)).toEqual(['r1', 'sx', 'r2']);
    const text = formatTranscript(entries);
    expect(text.split('\n')).toEqual(['[2025-01-01T00:00:00.000Z] System: queue update', '[2025-01-01T00:00:01.000Z] Bot: first reply', '[2025-01-01T00:00:02.000Z] Agent: second']);
    const cut = formatTranscript(entries, 90);
    expect(cut.length).toBeLessThanOrEqual(90);
    expect(cut).toMatch(/\[truncated: 2 more entries\]$/);
  });
});
