import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../shared/api/problem';
import { prechatDetails } from '../../shared/messaging/conversations';
import { GatewayEnvironment } from '../../shared/config';
import { FLEET_LEASE_MARGIN_MS, plannedPerPoller, pollerCapacity, shardCount, surgeEndsAt } from '../../shared/messaging/fleet';
import { accountSpread, adopterOf, adoptionPlan, handoverWaitMs, leaseLapsed, messageOf, noticesToClaim, preferredShard, reconnectDelayMs, surgeHeadroom, surgeWanted, takeover } from '../../shared/messaging/poller';
import { MessagingSettings } from '../../shared/messaging/settings';
import { CLAIMED_ONE_BY_ONE } from '../../shared/store/items';
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
    expect(pollerCapacity({ memoryMb: 256, floorMb: 77, perConversationKb: 90.1 })).toBe(1452);
    expect(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 90.1, budget: 0.75 })).toBe(215);
    // No room, or nothing measured: none.
    expect(pollerCapacity({ memoryMb: 128, floorMb: 103, perConversationKb: 90.1 })).toBe(0);
    expect(pollerCapacity({ memoryMb: 128, floorMb: 90, perConversationKb: 0 })).toBe(0);
  });

  it("the default capacity fits a 128 MB poller at the bench's highest per-conversation figure with a quarter more for variation", () => {
    const capacity = GatewayEnvironment.parse({}).POLLER_CAPACITY;
    // 74.9 KB: the highest measured (shared/config.ts POLLER_CAPACITY).
    expect(capacity).toBeLessThanOrEqual(pollerCapacity({ memoryMb: 128, floorMb: 77, perConversationKb: 74.9 * 1.25 }));
    // And the plan gives a poller no more than that.
    expect(Math.ceil(1000 / shardCount(1000, capacity, 50))).toBeLessThanOrEqual(capacity);
  });

  it('spreads conversations over poller slots, backs off with full jitter, and judges leases by the owner heartbeat', () => {
    const slots = new Set(Array.from({ length: 200 }, (_, i) => preferredShard(`acct_${i}`, 'cv', 4, 1)));
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

  it('ends a surge poller with the running round, and starts none in the round\'s last seconds (the next round takes them)', () => {
    const roundEnd = 100_000;
    const fleetUntil = roundEnd + FLEET_LEASE_MARGIN_MS;
    expect(surgeEndsAt(50_000, fleetUntil, 840_000)).toBe(roundEnd);
    expect(surgeEndsAt(95_000, fleetUntil, 840_000)).toBe(roundEnd);
    // Before: a surge asked for 1 s before the round's end ran 5 s, past the next round's first look.
    expect(surgeEndsAt(99_000, fleetUntil, 840_000)).toBeUndefined();
    // No round running (its lease lapsed or none): a whole run.
    expect(surgeEndsAt(200_000, fleetUntil, 840_000)).toBe(1_040_000);
    expect(surgeEndsAt(200_000, undefined, 840_000)).toBe(1_040_000);
  });

  it('takes over a lease from an ended run only once it is to be claimed one by one (the grace counted from its end), from a lapsed one without a grace, never from a live one', () => {
    const live = { accountId: 'a', conversationId: 'c', ack: 1, startedAt: 0, leaseOwner: 'run-a', leaseExpiresAt: 100_000 };
    const heartbeat = { runId: 'run-a', renewedAt: 5_000, until: 25_000 };
    // Alive: its heartbeat is ahead, and it has not ended.
    expect(takeover(live, heartbeat, 10_000, 2_000)).toBeUndefined();
    // Ended with its polls closed: waiting for a run to adopt it whole (one write), so nobody claims a lease of it.
    expect(takeover(live, { ...heartbeat, endedAt: 9_000 }, 10_000, 2_000)).toBeUndefined();
    // No run had room for it whole: each lease free at once, though its heartbeat would still hold for 15 s.
    expect(takeover(live, { ...heartbeat, endedAt: 9_000, adoptedBy: CLAIMED_ONE_BY_ONE }, 10_000, 2_000)).toEqual({ lapsedOwner: 'run-a', releasedAt: 9_000 });
    // Lapsed (killed): free with no grace (its polls are long over); gone entirely: the same.
    expect(takeover(live, heartbeat, 27_001, 2_000)).toEqual({ lapsedOwner: 'run-a' });
    expect(takeover(live, undefined, 10_000, 2_000)).toEqual({ lapsedOwner: 'run-a' });
    // Nobody named: free, no takeover.
    expect(takeover({ ...live, leaseOwner: undefined }, undefined, 10_000, 2_000)).toEqual({});
  });

  it('follows a lease through the runs that adopted it: an adopted run points to its adopter, a run claimed one by one or alive to none', () => {
    const ended = { runId: 'run-a', renewedAt: 5_000, until: 9_000, endedAt: 9_000 };
    expect(adopterOf({ ...ended, adoptedBy: 'run-b' })).toBe('run-b');
    expect(adopterOf({ ...ended, adoptedBy: CLAIMED_ONE_BY_ONE })).toBeUndefined();
    expect(adopterOf(ended)).toBeUndefined();
    expect(adopterOf(undefined)).toBeUndefined();
    // Only an ended run can have been adopted: a live one's own heartbeat holds its leases.
    expect(adopterOf({ runId: 'run-a', renewedAt: 5_000, until: 25_000, adoptedBy: 'run-b' })).toBeUndefined();
  });

  it('adopts its own slot\'s ended run at once, another slot\'s once that slot had its wait, and leaves to one-by-one claims what nobody may or can take', () => {
    const ended = (runId: string, shard: number, held: number, endedAt = 10_000) => ({ runId, renewedAt: endedAt, until: endedAt, endedAt, shard, held });
    // A 230-place poller planned at 207 keeps 23 free: it adopts at most 207.
    const plan = (runs: Parameters<typeof adoptionPlan>[0]['runs'], shard: number, now: number, room = 230, shards = 3) => adoptionPlan({ runs, shard, shards, room, capacity: 230, keepFree: 23, now, waitMs: 5_000 });
    const runs = [ended('run-0', 0, 200), ended('run-1', 1, 200), { runId: 'run-live', renewedAt: 9_000, until: 29_000, shard: 2 }];
    // Slot 0's next run, just after the round's end: its own slot's predecessor only.
    expect(plan(runs, 0, 10_500)).toEqual({ adopt: ['run-0'], oneByOne: [], noRoom: [] });
    // Another slot's predecessor, still unadopted after the wait: whoever has room takes it whole.
    expect(plan([ended('run-1', 1, 20)], 0, 16_000, 50)).toEqual({ adopt: ['run-1'], oneByOne: [], noRoom: [] });
    expect(plan([ended('run-1', 1, 20)], 0, 10_500, 50)).toEqual({ adopt: [], oneByOne: [], noRoom: [] });
    // No room for it: at once for its own slot's run (nobody else is expected), after the wait for others.
    expect(plan(runs, 0, 10_500, 100)).toEqual({ adopt: [], oneByOne: ['run-0'], noRoom: ['run-0'] });
    expect(plan(runs, 2, 10_500, 100)).toEqual({ adopt: [], oneByOne: [], noRoom: [] });
    expect(plan(runs, 2, 16_000, 100)).toEqual({ adopt: [], oneByOne: ['run-0', 'run-1'], noRoom: ['run-0', 'run-1'] });
    // Ended fuller than any run adopts (more than 207): spread over the slots again, by anyone, at once.
    expect(plan([ended('run-0', 0, 215)], 1, 10_500)).toEqual({ adopt: [], oneByOne: ['run-0'], noRoom: [] });
    // Its slot is not in this round (the fleet shrank): anyone with room, at once.
    expect(plan([ended('run-4', 4, 20)], 1, 10_500)).toEqual({ adopt: ['run-4'], oneByOne: [], noRoom: [] });
    // A surge run shares slot 0 and ended first: the slot's own predecessor (the bigger) is adopted, the surge's claimed one by one.
    expect(plan([ended('surge', 0, 20, 9_000), ended('run-0', 0, 200)], 0, 10_500)).toEqual({ adopt: ['run-0'], oneByOne: ['surge'], noRoom: ['surge'] });
    // Already adopted or marked: left alone. An ended item with no count: one by one.
    expect(plan([{ ...ended('run-0', 0, 200), adoptedBy: 'run-x' }], 0, 10_500)).toEqual({ adopt: [], oneByOne: [], noRoom: [] });
    expect(plan([{ runId: 'run-old', renewedAt: 1, until: 1, endedAt: 10_000, shard: 0 }], 0, 10_500)).toEqual({ adopt: [], oneByOne: ['run-old'], noRoom: [] });
  });

  it('places an account\'s conversations on its home slot, and a big account\'s over several, the same answer whenever listed', () => {
    const slotOf = (accountId: string, conversationId: string, accountLive: number) => preferredShard(accountId, conversationId, 7, accountSpread(accountLive, 207, 7));
    // 100 accounts of 10 live conversations, 7 slots: each account whole on one slot.
    const slotsOfAccount = (a: number) => new Set(Array.from({ length: 10 }, (_, i) => slotOf(`acct_${a}`, `cv_${a}_${i}`, 10)));
    for (let a = 0; a < 100; a++) expect(slotsOfAccount(a).size).toBe(1);
    expect(new Set(Array.from({ length: 100 }, (_, a) => [...slotsOfAccount(a)][0])).size).toBe(7);
    // One account of 1,000: spread over every slot, by conversation, evenly within hashing noise.
    const loads = new Array<number>(7).fill(0);
    for (let i = 0; i < 1000; i++) loads[slotOf('acct_big', `cv_${i}`, 1000)]!++;
    expect(Math.min(...loads)).toBeGreaterThan(100);
    // An account's spread grows with it, a quarter of a planned poller at a time, never past the slots.
    expect([1, 51, 52, 104, 500, 5000].map((live) => accountSpread(live, 207, 7))).toEqual([1, 1, 2, 3, 7, 7]);
    // Stable: the slot depends on the conversation and its account's spread only, not on the rest of the listing.
    expect(slotOf('acct_big', 'cv_42', 1000)).toBe(slotOf('acct_big', 'cv_42', 999));
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

  it('claims as many received notices as it has room for, and gives the rest back', () => {
    expect(noticesToClaim(10, 230)).toBe(10);
    expect(noticesToClaim(10, 4)).toBe(4);
    expect(noticesToClaim(10, 0)).toBe(0);
    expect(noticesToClaim(0, 5)).toBe(0);
    expect(noticesToClaim(3, -2)).toBe(0);
  });

  it('asks for a surge poller as a run fills past half the room the plan leaves it, once, and whenever it is full', () => {
    // The plan puts 207 in a 230 poller: 23 free; a surge is asked for with 11 left.
    expect(surgeHeadroom(230)).toBe(12);
    expect(surgeHeadroom(8)).toBe(1);
    expect(surgeHeadroom(1)).toBe(1);
    const at230 = (roomBefore: number, roomAfter: number, gaveBack = 0) => surgeWanted({ roomBefore, roomAfter, gaveBack, capacity: 230 });
    expect(at230(23, 22)).toBe(false);
    expect(at230(13, 12)).toBe(false);
    expect(at230(12, 11)).toBe(true);
    expect(at230(15, 5)).toBe(true);
    // Under it already (asked as it crossed): not again for each conversation ...
    expect(at230(11, 10)).toBe(false);
    expect(at230(1, 0)).toBe(false);
    // ... but a run that had to give notices back (full) always asks.
    expect(at230(0, 0, 3)).toBe(true);
    expect(at230(2, 0, 1)).toBe(true);
    // Room that grew (conversations ended) asks nothing.
    expect(at230(5, 20)).toBe(false);
  });

  it('maps the platform events to messages and lifecycle effects (through ./chat-messages.ts)', () => {
    const at = '2025-01-01T00:00:00.000Z';
    expect(messageOf({ type: 'ChatMessage', message: { name: 'Ann', text: 'hi', agentId: '005x' } }, at)).toMatchObject({ type: 'text', text: 'hi', sender: 'agent', sentAt: at, details: { senderName: 'Ann', agentId: '005x' } });
    expect(messageOf({ type: 'ChatEstablished', message: { name: 'Ann', userId: '005x' } }, at)).toMatchObject({ type: 'system', lifecycle: 'agent_joined', sentAt: at });
    expect(messageOf({ type: 'QueueUpdate', message: { position: 2 } }, at)).toMatchObject({ lifecycle: 'queued', details: { position: 2 } });
    expect(messageOf({ type: 'ChatEnded', message: { reason: 'client' } }, at)).toMatchObject({ lifecycle: 'ended' });
    expect(messageOf({ type: 'AgentTyping', message: {} }, at)).toBeUndefined();
    expect(messageOf({ type: 'SomethingNew', message: { text: 'words' } }, at)).toMatchObject({ type: 'system', text: 'words', details: { systemEvent: 'something_new', payload: { text: 'words' } } });
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
