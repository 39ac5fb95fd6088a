import { randomBytes } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { VersionConflictError } from '../../shared/store/store';
import { key } from '../../shared/store/table';
import { useTable } from '../support/dynamo';
import { at, conversation } from './fixtures';
import * as store from '../../shared/store/store';

const db = useTable();

describe('conversations', () => {
  it('stores a conversation with optimistic concurrency', async () => {
    const started = conversation('acct-v1', 'conv-1', { state: 'starting', contactId: '003xx' });
    expect(await store.putConversation(db.table, started)).toBe(1);
    const read = (await store.getConversation(db.table, 'acct-v1', 'conv-1'))!;
    expect(read).toEqual({ ...started, version: 1 });
    expect(await store.putConversation(db.table, { ...read, state: 'active', ack: 4 })).toBe(2);
    await expect(store.putConversation(db.table, { ...read, state: 'ended' })).rejects.toBeInstanceOf(VersionConflictError);
    expect(await store.getConversation(db.table, 'acct-v2', 'conv-1')).toBeUndefined();
  });

  it('changes named fields only when the state allows, and lists an account\'s conversations newest first', async () => {
    await store.putConversation(db.table, conversation('acct-u1', 'c-001', { state: 'queued' }));
    await store.putConversation(db.table, conversation('acct-u1', 'c-002', { state: 'active' }));
    await store.putConversation(db.table, conversation('acct-u2', 'c-003', { state: 'active' }));
    const ended = await store.updateConversation(db.table, 'acct-u1', 'c-001', { set: { state: 'ended', endReason: 'agent' }, whenStateIn: ['queued', 'active'] });
    expect(ended).toMatchObject({ state: 'ended', endReason: 'agent', version: 2 });
    // A second end (a poller and a lifecycle step racing) finds the state changed and does nothing.
    expect(await store.updateConversation(db.table, 'acct-u1', 'c-001', { set: { state: 'ended', endReason: 'system' }, whenStateIn: ['queued', 'active'] })).toBeUndefined();
    // Written once: a second handoff is refused.
    const handOff = { set: { handedOff: { at: at('2025-02-01T10:05:00Z'), queue: 'Support' } }, whenAbsent: 'handedOff' as const };
    expect(await store.updateConversation(db.table, 'acct-u1', 'c-002', handOff)).toBeDefined();
    expect(await store.updateConversation(db.table, 'acct-u1', 'c-002', handOff)).toBeUndefined();
    expect(await store.updateConversation(db.table, 'acct-u1', 'nope', { set: { state: 'ended' } })).toBeUndefined();

    const page = await store.listConversations(db.table, 'acct-u1', { limit: 1 });
    expect(page.conversations.map((c) => c.conversationId)).toEqual(['c-002']);
    const next = await store.listConversations(db.table, 'acct-u1', { limit: 5, startKey: page.nextKey! });
    expect(next.conversations.map((c) => c.conversationId)).toEqual(['c-001']);
  });

  it('caps live conversations per account with a conditional count, and recounts a drifted one', async () => {
    expect(await store.reserveLiveSlot(db.table, 'acct-cap', 2)).toBe(true);
    expect(await store.reserveLiveSlot(db.table, 'acct-cap', 2)).toBe(true);
    expect(await store.reserveLiveSlot(db.table, 'acct-cap', 2)).toBe(false);
    await store.releaseLiveSlot(db.table, 'acct-cap');
    expect(await store.reserveLiveSlot(db.table, 'acct-cap', 2)).toBe(true);
    // Only one conversation is really live: the recount frees the leaked slot.
    await store.putConversation(db.table, conversation('acct-cap', 'live', { state: 'active' }));
    await store.putConversation(db.table, conversation('acct-cap', 'over', { state: 'ended' }));
    expect(await store.recountLiveSlots(db.table, 'acct-cap')).toBe(1);
    expect(await store.reserveLiveSlot(db.table, 'acct-cap', 2)).toBe(true);
  });
});

describe('live conversation leases', () => {
  const live = (accountId: string, conversationId: string) => ({ accountId, conversationId, ack: -1, startedAt: 1 });

  it('one holder at a time: claim, renew by heartbeat, release, take over a lapsed lease', async () => {
    expect(await store.putLiveConversation(db.table, live('acct-l1', 'lc-1'))).toBe(true);
    expect(await store.putLiveConversation(db.table, live('acct-l1', 'lc-1'))).toBe(false);
    const first = await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-a', now: 1000, expiresAt: 100_000 });
    expect(first).toMatchObject({ leaseOwner: 'run-a', leaseExpiresAt: 100_000 });
    expect(await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-b', now: 2000, expiresAt: 100_000 })).toBeUndefined();
    // run-b saw run-a's heartbeat lapse: it may take over from run-a, and only from run-a.
    expect(await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-b', now: 2000, expiresAt: 100_000, lapsedOwner: 'run-x' })).toBeUndefined();
    expect(await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-b', now: 2000, expiresAt: 100_000, lapsedOwner: 'run-a' })).toMatchObject({ leaseOwner: 'run-b' });
    // The old holder can no longer acknowledge or release.
    expect(await store.advanceAck(db.table, 'acct-l1', 'lc-1', 'run-a', 3)).toBe(false);
    expect(await store.advanceAck(db.table, 'acct-l1', 'lc-1', 'run-b', 3)).toBe(true);
    expect(await store.advanceAck(db.table, 'acct-l1', 'lc-1', 'run-b', 2)).toBe(false);
    expect(await store.releaseConversationLease(db.table, 'acct-l1', 'lc-1', 'run-a', 5000)).toBe(false);
    expect(await store.releaseConversationLease(db.table, 'acct-l1', 'lc-1', 'run-b', 5000)).toBe(true);
    expect(await store.getLiveConversation(db.table, 'acct-l1', 'lc-1')).toEqual({ ...live('acct-l1', 'lc-1'), ack: 3, releasedAt: 5000 });
    // Past the hard expiry anyone may claim.
    await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-c', now: 6000, expiresAt: 7000 });
    expect(await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-d', now: 7001, expiresAt: 9000 })).toMatchObject({ leaseOwner: 'run-d' });

    await store.putLiveConversation(db.table, live('acct-l2', 'lc-2'));
    expect((await store.listLiveConversations(db.table)).map((c) => c.conversationId).sort()).toEqual(['lc-1', 'lc-2']);
    expect(await store.countLiveConversations(db.table)).toBe(2);
    await store.deleteLiveConversation(db.table, 'acct-l1', 'lc-1');
    expect(await store.claimConversationLease(db.table, 'acct-l1', 'lc-1', { owner: 'run-e', now: 1, expiresAt: 2 })).toBeUndefined();
    expect(await store.countLiveConversations(db.table)).toBe(1);
  });

  it('one fleet execution at a time, handed over explicitly', async () => {
    expect(await store.claimFleetLease(db.table, { executionId: 'ex-1', now: 0, until: 1000, shards: 1 })).toMatchObject({ executionId: 'ex-1' });
    expect(await store.claimFleetLease(db.table, { executionId: 'ex-2', now: 10, until: 1000, shards: 1 })).toBeUndefined();
    expect(await store.claimFleetLease(db.table, { executionId: 'ex-2', now: 10, until: 1000, shards: 2, handOverFrom: 'ex-1' })).toMatchObject({ executionId: 'ex-2', shards: 2 });
    expect(await store.releaseFleetLease(db.table, 'ex-1')).toBe(false);
    expect(await store.releaseFleetLease(db.table, 'ex-2')).toBe(true);
    expect(await store.claimFleetLease(db.table, { executionId: 'ex-3', now: 10, until: 1000, shards: 1 })).toBeDefined();
    expect(await store.takeFleetTurn(db.table, 'surge', 100, 500)).toBe(true);
    expect(await store.takeFleetTurn(db.table, 'surge', 200, 500)).toBe(false);
    expect(await store.takeFleetTurn(db.table, 'surge', 601, 500)).toBe(true);
    // A fleet that stops gives the start turn back: a conversation started just after may start one.
    expect(await store.takeFleetTurn(db.table, 'start', 700, 5_000)).toBe(true);
    expect(await store.takeFleetTurn(db.table, 'start', 800, 5_000)).toBe(false);
    expect(await store.releaseFleetLease(db.table, 'ex-3')).toBe(true);
    expect(await store.takeFleetTurn(db.table, 'start', 900, 5_000)).toBe(true);
  });
});

describe('messages', () => {
  it('writes each sequence number once and lists messages in numeric order', async () => {
    const message = (text: string) => ({ direction: 'inbound', type: 'text', text, sentAt: at('2025-02-01T10:00:00Z') }) as const;
    for (const sequence of [10, 2, 0, 1]) {
      expect(await store.appendMessage(db.table, 'acct-m1', 'conv-m', sequence, message(`m${sequence}`))).toBe(true);
    }
    expect(await store.appendMessage(db.table, 'acct-m1', 'conv-m', 2, message('redelivered'))).toBe(false);
    await store.appendMessage(db.table, 'acct-m1', 'conv-other', 0, message('elsewhere'));
    await store.appendMessage(db.table, 'acct-m2', 'conv-m', 5, message('other account'));

    const listed = await store.listMessages(db.table, 'acct-m1', 'conv-m');
    expect(listed.map((m) => m.sequence)).toEqual([0, 1, 2, 10]);
    expect(listed.map((m) => m.text)).toEqual(['m0', 'm1', 'm2', 'm10']);
    expect(listed.every((m) => m.accountId === 'acct-m1' && m.conversationId === 'conv-m')).toBe(true);
  });
});

describe('pending OAuth authorizations', () => {
  const pending = (expiresAt: number) => ({
    state: randomBytes(24).toString('base64url'),
    accountId: 'acct-o1',
    connector: 'data',
    config: { clientId: 'client-1' },
    credentials: { v: 1, keyId: 'local', encryptedDataKey: randomBytes(40).toString('base64'), iv: randomBytes(12).toString('base64'), ciphertext: randomBytes(64).toString('base64'), tag: randomBytes(16).toString('base64') },
    redirectUri: 'http://localhost:3000/auth/crmdata/callback',
    browserBinding: 'hash-of-the-browser-cookie-0123456789',
    expiresAt,
  }) as const;
  const now = new Date('2025-07-01T00:00:00Z');
  const nowSeconds = now.getTime() / 1000;

  it('hands a pending authorization out exactly once', async () => {
    const flow = pending(nowSeconds + 600);
    await store.putPendingAuthorization(db.table, flow);
    const taken = await Promise.all([store.takePendingAuthorization(db.table, flow.state, now), store.takePendingAuthorization(db.table, flow.state, now)]);
    expect(taken.filter((t) => t !== undefined)).toEqual([flow]);
    expect(await store.takePendingAuthorization(db.table, flow.state, now)).toBeUndefined();
  });

  it('refuses (and consumes) an expired one that TTL has not deleted yet', async () => {
    const flow = pending(nowSeconds - 1);
    await store.putPendingAuthorization(db.table, flow);
    expect(await store.takePendingAuthorization(db.table, flow.state, now)).toBeUndefined();
    const { Item } = await db.dynamo.client.send(new GetItemCommand({ TableName: db.dynamo.tableName, Key: { pk: { S: key.oauthState(flow.state).pk }, sk: { S: 'OAUTH' } } }));
    expect(Item).toBeUndefined();
  });

  it('returns nothing for an unknown or absurd state', async () => {
    expect(await store.takePendingAuthorization(db.table, 'never-issued-state-value', now)).toBeUndefined();
    expect(await store.takePendingAuthorization(db.table, '', now)).toBeUndefined();
    expect(await store.takePendingAuthorization(db.table, 'x'.repeat(5000), now)).toBeUndefined();
  });

  it('never reuses a state', async () => {
    const flow = pending(nowSeconds + 600);
    await store.putPendingAuthorization(db.table, flow);
    await expect(store.putPendingAuthorization(db.table, { ...flow, accountId: 'acct-o2' })).rejects.toThrow();
    expect((await store.takePendingAuthorization(db.table, flow.state, now))?.accountId).toBe('acct-o1');
  });
});
