import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { LocalDataKeySource } from '../../shared/vault/local-data-key-source';
import { Vault } from '../../shared/vault/vault';
import { startDynamo, tableText, type LocalDynamo } from '../support/dynamo';
import { connection } from './fixtures';
import * as store from '../../shared/store/store';

let dynamo: LocalDynamo;
beforeAll(async () => {
  dynamo = await startDynamo();
});
afterAll(() => dynamo.stop());

describe('credentials at rest', () => {
  it('a scan of the table after storing credentials finds none of the secret strings', async () => {
    const keySource = new LocalDataKeySource({ keyId: 'local-scan', key: randomBytes(32) });
    const vault = new Vault({ keySource, cacheTtlSeconds: 0 });
    const table = { client: sdkTableClient(dynamo.client), tableName: dynamo.tableName };
    const secrets = {
      payment: { apiKey: `sk_test_${randomBytes(24).toString('hex')}`, webhookSigningSecret: `whsec_${randomBytes(24).toString('base64url')}` },
      billing: { apiKey: `test_${randomBytes(20).toString('hex')}`, webhookPassword: randomBytes(18).toString('base64url') },
      data: { privateKey: `private-key-material-${randomBytes(64).toString('hex')}`, clientSecret: randomBytes(32).toString('hex') },
    } as const;

    for (const [connector, credentials] of Object.entries(secrets) as [keyof typeof secrets, Record<string, string>][]) {
      const scope = { accountId: 'acct-scan', connector };
      const stored = await connection('acct-scan', connector, {
        maskedSecrets: Object.fromEntries(Object.entries(credentials).map(([field, value]) => [field, `••••${value.slice(-4)}`])),
      }, await vault.seal(scope, credentials));
      await store.putConnection(table, stored);
    }

    const text = await tableText(dynamo);
    expect(text).toContain('CONNECTION#payment'); // the scan did see the items
    for (const value of Object.values(secrets).flatMap((credentials) => Object.values(credentials))) {
      const shapes = [value, Buffer.from(value).toString('base64'), Buffer.from(value).toString('base64url'), Buffer.from(value).toString('hex')];
      for (const shape of shapes) expect(text).not.toContain(shape);
      // Nor any 12-character run of it (a partial leak would still be a leak).
      expect(table).not.toContain(value.slice(-12));
    }

    // And what is stored does open back to the secrets, so the test is not passing on empty items.
    for (const connector of Object.keys(secrets) as (keyof typeof secrets)[]) {
      const read = (await store.getConnection(table, 'acct-scan', connector))!;
      expect(await vault.open({ accountId: 'acct-scan', connector }, read.credentials)).toEqual(secrets[connector]);
    }
  });
});
