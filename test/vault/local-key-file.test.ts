import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalDataKeySource, LocalKeyFileError, openLocalKeyFile } from '../../shared/vault/local-data-key-source';
import { Vault } from '../../shared/vault/vault';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gateway-key-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function expectKeyFileError(promise: Promise<unknown>, pattern: RegExp): Promise<LocalKeyFileError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(LocalKeyFileError);
  const message = (error as Error).message;
  expect(message).toMatch(pattern);
  // Both ways out are spelled out.
  expect(message).toMatch(/Restore .*backup/);
  expect(message).toMatch(/delete the local data folder/);
  return error as LocalKeyFileError;
}

describe('openLocalKeyFile', () => {
  it('does not create a key file unless asked, and says how to recover', async () => {
    const path = join(folder, 'vault.key');
    const error = await expectKeyFileError(openLocalKeyFile(path, { create: false }), /missing/);
    expect(error.message).toContain(path);
    expect(existsSync(path)).toBe(false);
  });

  it('creates a key file readable by its owner only, in a folder it makes', async () => {
    const path = join(folder, 'data', 'vault.key');
    const source = await openLocalKeyFile(path, { create: true });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const file = JSON.parse(await readFile(path, 'utf8')) as { keyId: string; key: string; version: number };
    expect(file.version).toBe(1);
    expect(file.keyId).toBe(source.keyId);
    expect(Buffer.from(file.key, 'base64')).toHaveLength(32);
  });

  it('reopens the same key, so credentials sealed before a restart still open', async () => {
    const path = join(folder, 'vault.key');
    const first = await openLocalKeyFile(path, { create: true });
    const scope = { accountId: 'acct-local', connector: 'payment' } as const;
    const credentials = { apiKey: `sk_test_${randomBytes(16).toString('hex')}` };
    const sealed = await new Vault({ keySource: first, cacheTtlSeconds: 0 }).seal(scope, credentials);

    const before = await readFile(path, 'utf8');
    const again = await openLocalKeyFile(path, { create: true }); // create:true never replaces a key
    const reopened = await openLocalKeyFile(path, { create: false });
    expect(await readFile(path, 'utf8')).toBe(before);
    expect(again.keyId).toBe(first.keyId);
    expect(await new Vault({ keySource: reopened, cacheTtlSeconds: 0 }).open(scope, sealed)).toEqual(credentials);
  });

  it.each([
    ['not JSON', 'this is not json', /damaged .*not valid JSON/],
    ['missing fields', JSON.stringify({ format: 'integration-gateway-local-key', version: 1 }), /damaged .*expected fields/],
    ['bad base64', JSON.stringify({ format: 'integration-gateway-local-key', version: 1, keyId: 'k', key: '!!!' }), /damaged/],
    [
      'a 16-byte key',
      JSON.stringify({ format: 'integration-gateway-local-key', version: 1, keyId: 'k', key: randomBytes(16).toString('base64') }),
      /damaged .*16 bytes instead of 32/,
    ],
  ])('refuses a damaged key file (%s) and leaves it in place', async (_case, content, pattern) => {
    const path = join(folder, 'vault.key');
    await writeFile(path, content, { mode: 0o600 });
    const error = await expectKeyFileError(openLocalKeyFile(path, { create: true }), pattern);
    expect(await readFile(path, 'utf8')).toBe(content);
    if (content.includes('"key"')) {
      const key = (JSON.parse(content) as { key: string }).key;
      expect(error.message).not.toContain(key);
    }
  });
});

describe('LocalDataKeySource', () => {
  const context = { account: 'acct-local', connector: 'payment' } as const;

  it('unwraps a data key under the context it was made for', async () => {
    const source = new LocalDataKeySource({ keyId: 'local-test', key: randomBytes(32) });
    const { plaintext, encrypted } = await source.generateDataKey(context);
    expect(plaintext).toHaveLength(32);
    expect(Buffer.from(encrypted).includes(Buffer.from(plaintext))).toBe(false);
    expect(Buffer.from(await source.decryptDataKey(encrypted, context))).toEqual(Buffer.from(plaintext));
  });

  it.each([
    { account: 'acct-other', connector: 'payment' },
    { account: 'acct-local', connector: 'billing' },
  ] as const)('refuses a data key moved to %o, as KMS would', async (otherContext) => {
    const source = new LocalDataKeySource({ keyId: 'local-test', key: randomBytes(32) });
    const { encrypted } = await source.generateDataKey(context);
    await expect(source.decryptDataKey(encrypted, otherContext)).rejects.toThrow(/does not unwrap/);
  });

  it('refuses a data key wrapped by another key file', async () => {
    const { encrypted } = await new LocalDataKeySource({ keyId: 'a', key: randomBytes(32) }).generateDataKey(context);
    const other = new LocalDataKeySource({ keyId: 'b', key: randomBytes(32) });
    await expect(other.decryptDataKey(encrypted, context)).rejects.toThrow(/does not unwrap/);
    await expect(other.decryptDataKey(encrypted.subarray(1), context)).rejects.toThrow(/not wrapped by a local key file/);
  });
});
