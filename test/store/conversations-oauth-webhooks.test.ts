import { randomBytes } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { VersionConflictError } from '../../shared/store/store';
import { key } from '../../shared/store/table';
import { useStore } from '../support/dynamo';
import { at, conversation } from './fixtures';

const db = useStore();

describe('conversations', () => {
  it('stores a conversation with optimistic concurrency', async () => {
    const started = conversation('acct-v1', 'conv-1', { state: 'starting', contactId: '003xx' });
    expect(await db.store.putConversation(started)).toBe(1);
    const read = (await db.store.getConversation('acct-v1', 'conv-1'))!;
    expect(read).toEqual({ ...started, version: 1 });
    expect(await db.store.putConversation({ ...read, state: 'active', ack: 4 })).toBe(2);
    await expect(db.store.putConversation({ ...read, state: 'ended' })).rejects.toBeInstanceOf(VersionConflictError);
    expect(await db.store.getConversation('acct-v2', 'conv-1')).toBeUndefined();
  });

  it("lists a shard's live conversations across accounts, and drops them when they end", async () => {
    await db.store.putConversation(conversation('acct-v3', 'live-1', { pollerShard: 7 }));
    await db.store.putConversation(conversation('acct-v4', 'live-2', { pollerShard: 7, state: 'queued' }));
    await db.store.putConversation(conversation('acct-v4', 'other-shard', { pollerShard: 8 }));
    const ending = conversation('acct-v3', 'ending', { pollerShard: 7 });
    await db.store.putConversation(ending);
    await db.store.putConversation({ ...ending, version: 1, state: 'ended', endedAt: at('2025-02-01T11:00:00Z') });

    const live = await db.store.listLiveConversationsInShard(7);
    expect(live.map((c) => `${c.accountId}/${c.conversationId}`).sort()).toEqual(['acct-v3/live-1', 'acct-v4/live-2']);
  });
});

describe('messages', () => {
  it('writes each sequence number once and lists messages in numeric order', async () => {
    const message = (text: string) => ({ direction: 'inbound', type: 'text', text, sentAt: at('2025-02-01T10:00:00Z') }) as const;
    for (const sequence of [10, 2, 0, 1]) {
      expect(await db.store.appendMessage('acct-m1', 'conv-m', sequence, message(`m${sequence}`))).toBe(true);
    }
    expect(await db.store.appendMessage('acct-m1', 'conv-m', 2, message('redelivered'))).toBe(false);
    await db.store.appendMessage('acct-m1', 'conv-other', 0, message('elsewhere'));
    await db.store.appendMessage('acct-m2', 'conv-m', 5, message('other account'));

    const listed = await db.store.listMessages('acct-m1', 'conv-m');
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
    expiresAt,
  }) as const;
  const now = new Date('2025-07-01T00:00:00Z');
  const nowSeconds = now.getTime() / 1000;

  it('hands a pending authorization out exactly once', async () => {
    const flow = pending(nowSeconds + 600);
    await db.store.putPendingAuthorization(flow);
    const taken = await Promise.all([db.store.takePendingAuthorization(flow.state, now), db.store.takePendingAuthorization(flow.state, now)]);
    expect(taken.filter((t) => t !== undefined)).toEqual([flow]);
    expect(await db.store.takePendingAuthorization(flow.state, now)).toBeUndefined();
  });

  it('refuses (and consumes) an expired one that TTL has not deleted yet', async () => {
    const flow = pending(nowSeconds - 1);
    await db.store.putPendingAuthorization(flow);
    expect(await db.store.takePendingAuthorization(flow.state, now)).toBeUndefined();
    const { Item } = await db.dynamo.client.send(new GetItemCommand({ TableName: db.dynamo.tableName, Key: { pk: { S: key.oauthState(flow.state).pk }, sk: { S: 'OAUTH' } } }));
    expect(Item).toBeUndefined();
  });

  it('returns nothing for an unknown or absurd state', async () => {
    expect(await db.store.takePendingAuthorization('never-issued-state-value', now)).toBeUndefined();
    expect(await db.store.takePendingAuthorization('', now)).toBeUndefined();
    expect(await db.store.takePendingAuthorization('x'.repeat(5000), now)).toBeUndefined();
  });

  it('never reuses a state', async () => {
    const flow = pending(nowSeconds + 600);
    await db.store.putPendingAuthorization(flow);
    await expect(db.store.putPendingAuthorization({ ...flow, accountId: 'acct-o2' })).rejects.toThrow();
    expect((await db.store.takePendingAuthorization(flow.state, now))?.accountId).toBe('acct-o1');
  });
});
