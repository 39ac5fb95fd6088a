import { describe, expect, it } from 'vitest';
import { sdkTableClient } from '../../shared/store/sdk-table-client';
import { VersionConflictError } from '../../shared/store/store';
import { localDynamoClient, watchCommands, useTable } from '../support/dynamo';
import { account, at, connection } from './fixtures';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';
import type { Table } from '../../shared/store/table-access';

const db = useTable();

describe('accounts', () => {
  it('stores and reads an account', async () => {
    const stored = account('acct-a1', { name: 'Acme' });
    await store.putAccount(db.table, stored);
    expect(await store.getAccount(db.table, 'acct-a1')).toEqual(stored);
    expect(await store.getAccount(db.table, 'acct-none')).toBeUndefined();
  });

  it('switches the Integrations section on and off', async () => {
    await store.putAccount(db.table, account('acct-a2'));
    const on = await store.setIntegrationsEnabled(db.table, 'acct-a2', true, new Date('2025-03-01T00:00:00Z'));
    expect(on).toMatchObject({ integrationsEnabled: true, updatedAt: at('2025-03-01T00:00:00Z') });
    expect((await store.getAccount(db.table, 'acct-a2'))?.integrationsEnabled).toBe(true);
    await store.setIntegrationsEnabled(db.table, 'acct-a2', false);
    expect((await store.getAccount(db.table, 'acct-a2'))?.integrationsEnabled).toBe(false);
  });

  it('does not create an account by switching integrations on', async () => {
    expect(await store.setIntegrationsEnabled(db.table, 'acct-ghost', true)).toBeUndefined();
    expect(await store.getAccount(db.table, 'acct-ghost')).toBeUndefined();
  });

  it('refuses account ids that could reach into other keys, before sending anything', async () => {
    const client = localDynamoClient(db.dynamo.endpoint);
    const watched = watchCommands(client);
    const guarded = { client: sdkTableClient(client), tableName: db.dynamo.tableName };
    for (const bad of ['acct-a1#payment#customers', 'ACCT', '', 'a']) {
      await expect(store.getAccount(guarded, bad)).rejects.toThrow();
      await expect(store.listConnections(guarded, bad)).rejects.toThrow();
      await expect(store.getRecord(guarded, recordsAt(bad, 'payment', 'customers'), 'cus_1')).rejects.toThrow();
    }
    expect(watched.sent('GetItemCommand') + watched.sent('QueryCommand')).toBe(0);
    client.destroy();
  });
});

describe('connections', () => {
  it('creates a connection at version 1 and reads it back', async () => {
    const created = await connection('acct-c1', 'payment');
    expect(await store.putConnection(db.table, created)).toBe(1);
    expect(await store.getConnection(db.table, 'acct-c1', 'payment')).toEqual({ ...created, version: 1 });
  });

  it('uses optimistic concurrency on version', async () => {
    const created = await connection('acct-c2', 'billing');
    await store.putConnection(db.table, created);
    // A second "create" loses.
    await expect(store.putConnection(db.table, created)).rejects.toBeInstanceOf(VersionConflictError);

    const read = (await store.getConnection(db.table, 'acct-c2', 'billing'))!;
    const mine = { ...read, syncSettings: { frequency: 'daily' } };
    const theirs = { ...read, syncSettings: { frequency: 'weekly' } };
    expect(await store.putConnection(db.table, mine)).toBe(2);
    await expect(store.putConnection(db.table, theirs)).rejects.toThrow(/changed since version 1/);
    expect((await store.getConnection(db.table, 'acct-c2', 'billing'))?.syncSettings).toEqual({ frequency: 'daily' });
  });

  it('lists only connection items of the account', async () => {
    await store.putAccount(db.table, account('acct-c3'));
    await store.putConnection(db.table, await connection('acct-c3', 'payment'));
    await store.putConnection(db.table, await connection('acct-c3', 'messaging'));
    await store.putApiKey(db.table, { accountId: 'acct-c3', keyId: 'k0000000000a', name: 'other item', hash: 'h', createdAt: new Date().toISOString() });
    await store.putConnection(db.table, await connection('acct-c3x', 'data'));
    const listed = await store.listConnections(db.table, 'acct-c3');
    expect(listed.map((c) => c.connector).sort()).toEqual(['messaging', 'payment']);
    expect(listed.every((c) => c.accountId === 'acct-c3')).toBe(true);
  });

  it('updates health without changing the version, and never creates a connection', async () => {
    await store.putConnection(db.table, await connection('acct-c4', 'payment'));
    const health = {
      state: 'needs_reconnect',
      checkedAt: at('2025-04-01T00:00:00Z'),
      reason: 'The platform answered 401: Invalid API Key provided',
      remedy: 'verify or recreate the key',
    } as const;
    expect(await store.updateConnectionHealth(db.table, 'acct-c4', 'payment', health)).toBe(true);
    const read = await store.getConnection(db.table, 'acct-c4', 'payment');
    expect(read?.health).toEqual(health);
    expect(read?.version).toBe(1);

    expect(await store.updateConnectionHealth(db.table, 'acct-c4', 'billing', health)).toBe(false);
    expect(await store.getConnection(db.table, 'acct-c4', 'billing')).toBeUndefined();
  });

  it('deletes a connection once', async () => {
    await store.putConnection(db.table, await connection('acct-c5', 'data'));
    expect(await store.deleteConnection(db.table, 'acct-c5', 'data')).toBe(true);
    expect(await store.deleteConnection(db.table, 'acct-c5', 'data')).toBe(false);
    expect(await store.getConnection(db.table, 'acct-c5', 'data')).toBeUndefined();
  });

  it("never lets another account read, change or delete an account's connection", async () => {
    const alices = await connection('acct-alice', 'payment');
    await store.putConnection(db.table, alices);

    expect(await store.getConnection(db.table, 'acct-bob', 'payment')).toBeUndefined();
    expect(await store.listConnections(db.table, 'acct-bob')).toEqual([]);
    expect(await store.updateConnectionHealth(db.table, 'acct-bob', 'payment', { state: 'healthy' })).toBe(false);
    expect(await store.deleteConnection(db.table, 'acct-bob', 'payment')).toBe(false);
    // Bob's own connection of the same connector is a separate item.
    expect(await store.putConnection(db.table, { ...alices, accountId: 'acct-bob' })).toBe(1);

    expect(await store.getConnection(db.table, 'acct-alice', 'payment')).toEqual({ ...alices, version: 1 });
  });

  it('rejects a connection whose fields do not match the schema, without writing', async () => {
    const bad = { ...(await connection('acct-c6', 'payment')), connector: 'E-mail!' } as unknown as Parameters<typeof store.putConnection>[1];
    await expect(store.putConnection(db.table, bad)).rejects.toThrow();
    expect(await store.listConnections(db.table, 'acct-c6')).toEqual([]);
  });
});
