import { describe, expect, it } from 'vitest';
import { sdkTableClient } from '../../shared/store/sdk-table-client';
import { Store, VersionConflictError } from '../../shared/store/store';
import { localDynamoClient, watchCommands, useStore } from '../support/dynamo';
import { account, at, connection } from './fixtures';
import { recordsAt } from '../support/stored-connection';

const db = useStore();

describe('accounts', () => {
  it('stores and reads an account', async () => {
    const stored = account('acct-a1', { name: 'Acme' });
    await db.store.putAccount(stored);
    expect(await db.store.getAccount('acct-a1')).toEqual(stored);
    expect(await db.store.getAccount('acct-none')).toBeUndefined();
  });

  it('switches the Integrations section on and off', async () => {
    await db.store.putAccount(account('acct-a2'));
    const on = await db.store.setIntegrationsEnabled('acct-a2', true, new Date('2025-03-01T00:00:00Z'));
    expect(on).toMatchObject({ integrationsEnabled: true, updatedAt: at('2025-03-01T00:00:00Z') });
    expect((await db.store.getAccount('acct-a2'))?.integrationsEnabled).toBe(true);
    await db.store.setIntegrationsEnabled('acct-a2', false);
    expect((await db.store.getAccount('acct-a2'))?.integrationsEnabled).toBe(false);
  });

  it('does not create an account by switching integrations on', async () => {
    expect(await db.store.setIntegrationsEnabled('acct-ghost', true)).toBeUndefined();
    expect(await db.store.getAccount('acct-ghost')).toBeUndefined();
  });

  it('refuses account ids that could reach into other keys, before sending anything', async () => {
    const client = localDynamoClient(db.dynamo.endpoint);
    const watched = watchCommands(client);
    const guarded = new Store({ client: sdkTableClient(client), tableName: db.dynamo.tableName });
    for (const bad of ['acct-a1#payment#customers', 'ACCT', '', 'a']) {
      await expect(guarded.getAccount(bad)).rejects.toThrow();
      await expect(guarded.listConnections(bad)).rejects.toThrow();
      await expect(guarded.getRecord(recordsAt(bad, 'payment', 'customers'), 'cus_1')).rejects.toThrow();
    }
    expect(watched.sent('GetItemCommand') + watched.sent('QueryCommand')).toBe(0);
    client.destroy();
  });
});

describe('connections', () => {
  it('creates a connection at version 1 and reads it back', async () => {
    const created = await connection('acct-c1', 'payment');
    expect(await db.store.putConnection(created)).toBe(1);
    expect(await db.store.getConnection('acct-c1', 'payment')).toEqual({ ...created, version: 1 });
  });

  it('uses optimistic concurrency on version', async () => {
    const created = await connection('acct-c2', 'billing');
    await db.store.putConnection(created);
    // A second "create" loses.
    await expect(db.store.putConnection(created)).rejects.toBeInstanceOf(VersionConflictError);

    const read = (await db.store.getConnection('acct-c2', 'billing'))!;
    const mine = { ...read, syncSettings: { frequency: 'daily' } };
    const theirs = { ...read, syncSettings: { frequency: 'weekly' } };
    expect(await db.store.putConnection(mine)).toBe(2);
    await expect(db.store.putConnection(theirs)).rejects.toThrow(/changed since version 1/);
    expect((await db.store.getConnection('acct-c2', 'billing'))?.syncSettings).toEqual({ frequency: 'daily' });
  });

  it('lists only connection items of the account', async () => {
    await db.store.putAccount(account('acct-c3'));
    await db.store.putConnection(await connection('acct-c3', 'payment'));
    await db.store.putConnection(await connection('acct-c3', 'messaging'));
    await db.store.putApiKey({ accountId: 'acct-c3', keyId: 'k0000000000a', name: 'other item', hash: 'h', createdAt: new Date().toISOString() });
    await db.store.putConnection(await connection('acct-c3x', 'data'));
    const listed = await db.store.listConnections('acct-c3');
    expect(listed.map((c) => c.connector).sort()).toEqual(['messaging', 'payment']);
    expect(listed.every((c) => c.accountId === 'acct-c3')).toBe(true);
  });

  it('updates health without changing the version, and never creates a connection', async () => {
    await db.store.putConnection(await connection('acct-c4', 'payment'));
    const health = {
      state: 'needs_reconnect',
      checkedAt: at('2025-04-01T00:00:00Z'),
      reason: 'The platform answered 401: Invalid API Key provided',
      remedy: 'verify or recreate the key',
    } as const;
    expect(await db.store.updateConnectionHealth('acct-c4', 'payment', health)).toBe(true);
    const read = await db.store.getConnection('acct-c4', 'payment');
    expect(read?.health).toEqual(health);
    expect(read?.version).toBe(1);

    expect(await db.store.updateConnectionHealth('acct-c4', 'billing', health)).toBe(false);
    expect(await db.store.getConnection('acct-c4', 'billing')).toBeUndefined();
  });

  it('deletes a connection once', async () => {
    await db.store.putConnection(await connection('acct-c5', 'data'));
    expect(await db.store.deleteConnection('acct-c5', 'data')).toBe(true);
    expect(await db.store.deleteConnection('acct-c5', 'data')).toBe(false);
    expect(await db.store.getConnection('acct-c5', 'data')).toBeUndefined();
  });

  it("never lets another account read, change or delete an account's connection", async () => {
    const alices = await connection('acct-alice', 'payment');
    await db.store.putConnection(alices);

    expect(await db.store.getConnection('acct-bob', 'payment')).toBeUndefined();
    expect(await db.store.listConnections('acct-bob')).toEqual([]);
    expect(await db.store.updateConnectionHealth('acct-bob', 'payment', { state: 'healthy' })).toBe(false);
    expect(await db.store.deleteConnection('acct-bob', 'payment')).toBe(false);
    // Bob's own connection of the same connector is a separate item.
    expect(await db.store.putConnection({ ...alices, accountId: 'acct-bob' })).toBe(1);

    expect(await db.store.getConnection('acct-alice', 'payment')).toEqual({ ...alices, version: 1 });
  });

  it('rejects a connection whose fields do not match the schema, without writing', async () => {
    const bad = { ...(await connection('acct-c6', 'payment')), connector: 'E-mail!' } as unknown as Parameters<Store['putConnection']>[0];
    await expect(db.store.putConnection(bad)).rejects.toThrow();
    expect(await db.store.listConnections('acct-c6')).toEqual([]);
  });
});
