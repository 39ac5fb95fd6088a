import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalGateway } from '../../local/local-gateway';
import { LocalKeyFileError } from '../../shared/vault/local-data-key-source';
import { generatedKey } from '../support/local-runtime';
import * as store from '../../shared/store/store';

describe('local data folder (npm start)', () => {
  const folders: string[] = [];
  const newFolder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-local-'));
    folders.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps connections and their key across restarts', async () => {
    const dataDir = newFolder();
    const secretKey = generatedKey('sk_test_');
    const first = await startLocalGateway({ dataDir });
    const sealed = await first.gateway.vault.seal({ accountId: 'acme', connector: 'payment' }, { secretKey });
    await store.putAccount(first.gateway.table, { accountId: 'acme', name: 'Acme', integrationsEnabled: true, createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() });
    await first.stop();
    expect(statSync(join(dataDir, 'vault.key')).mode & 0o777).toBe(0o600);

    const second = await startLocalGateway({ dataDir });
    expect((await store.getAccount(second.gateway.table, 'acme'))?.name).toBe('Acme');
    expect((await second.gateway.vault.open({ accountId: 'acme', connector: 'payment' }, sealed)).secretKey).toBe(secretKey);
    await second.stop();
  });

  it('refuses to start when the key file is missing beside existing data, saying what to do', async () => {
    const dataDir = newFolder();
    await (await startLocalGateway({ dataDir })).stop();
    rmSync(join(dataDir, 'vault.key'));
    const error = await startLocalGateway({ dataDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalKeyFileError);
    expect(String((error as Error).message)).toMatch(/Restore the key file/);
    // No new key was made that would orphan the stored credentials.
    expect(() => statSync(join(dataDir, 'vault.key'))).toThrow();
  });

  it('refuses to start with a damaged key file, and leaves it as it was', async () => {
    const dataDir = newFolder();
    await (await startLocalGateway({ dataDir })).stop();
    writeFileSync(join(dataDir, 'vault.key'), '{"format":"integration-gateway-local-key","version":1,"keyId":"x","key":"c2hvcnQ="}');
    const error = await startLocalGateway({ dataDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalKeyFileError);
    expect(String((error as Error).message)).toMatch(/damaged/);
    expect(readFileSync(join(dataDir, 'vault.key'), 'utf8')).toContain('c2hvcnQ=');
  });
});
