import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { knownSecrets } from '../../shared/log/redaction';
import type { DataKeySource, EncryptionContext } from '../../shared/vault/data-key-source';
import { LocalDataKeySource } from '../../shared/vault/local-data-key-source';
import { SealedCredentials } from '../../shared/vault/sealed-credentials';
import { SHARED_KEY_MAX_AGE_MS, Vault, VaultError, type VaultScope } from '../../shared/vault/vault';

/** Wraps a key source, counting calls and keeping every plaintext data key it handed out. */
function countingSource(inner: DataKeySource) {
  const handedOut: Uint8Array[] = [];
  const calls = { generate: 0, decrypt: 0 };
  const source: DataKeySource = {
    keyId: inner.keyId,
    async generateDataKey(context) {
      calls.generate++;
      const dataKey = await inner.generateDataKey(context);
      handedOut.push(dataKey.plaintext);
      return dataKey;
    },
    async decryptDataKey(encrypted, context) {
      calls.decrypt++;
      const plaintext = await inner.decryptDataKey(encrypted, context);
      handedOut.push(plaintext);
      return plaintext;
    },
  };
  return { source, calls, handedOut };
}

function localSource(): LocalDataKeySource {
  return new LocalDataKeySource({ keyId: `local-${randomBytes(4).toString('hex')}`, key: randomBytes(32) });
}

function secretCredentials() {
  return { apiKey: `sk_test_${randomBytes(16).toString('hex')}`, webhookSecret: `whsec_${randomBytes(16).toString('hex')}` };
}

const alice: VaultScope = { accountId: 'acct-alice', connector: 'payment' };
const bob: VaultScope = { accountId: 'acct-bob', connector: 'payment' };

function flipFirstByte(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[0] = bytes[0]! ^ 0x01;
  return bytes.toString('base64');
}

async function expectVaultError(promise: Promise<unknown>, scope: VaultScope, secrets: string[]): Promise<VaultError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(VaultError);
  const vaultError = error as VaultError;
  expect(vaultError.message).toContain(scope.accountId);
  expect(vaultError.message).toContain(scope.connector);
  expect(vaultError.scope).toEqual(scope);
  for (const secret of secrets) {
    expect(vaultError.message).not.toContain(secret);
    expect(String(vaultError.stack)).not.toContain(secret);
  }
  return vaultError;
}

describe('Vault', () => {
  it('seals credentials into a valid envelope that opens back to them', async () => {
    const credentials = secretCredentials();
    const source = localSource();
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(alice, credentials);

    expect(SealedCredentials.parse(sealed)).toEqual(sealed);
    expect(sealed.keyId).toBe(source.keyId);
    expect(JSON.stringify(sealed)).not.toContain(credentials.apiKey);
    // A second vault (another process, no cache) opens it through the key source.
    expect(await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(alice, sealed)).toEqual(credentials);
  });

  it('uses a fresh data key and iv per seal', async () => {
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 0 });
    const credentials = secretCredentials();
    const [first, second] = [await vault.seal(alice, credentials), await vault.seal(alice, credentials)];
    expect(first.encryptedDataKey).not.toBe(second.encryptedDataKey);
    expect(first.iv).not.toBe(second.iv);
    expect(first.ciphertext).not.toBe(second.ciphertext);
  });

  it("refuses an envelope copied to another account's item", async () => {
    const credentials = secretCredentials();
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 60 });
    const sealed = await vault.seal(alice, credentials);
    await expectVaultError(vault.open(bob, sealed), bob, Object.values(credentials));
    // The owner still opens it.
    expect(await vault.open(alice, sealed)).toEqual(credentials);
  });

  it("refuses an envelope copied to another connector's item of the same account", async () => {
    const credentials = secretCredentials();
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 60 });
    const sealed = await vault.seal(alice, credentials);
    const billing: VaultScope = { accountId: alice.accountId, connector: 'billing' };
    await expectVaultError(vault.open(billing, sealed), billing, Object.values(credentials));
  });

  it('refuses a moved envelope even when the key source does not bind the context (AES-GCM AAD does)', async () => {
    // A careless key source that hands the data key back whatever the context.
    const careless: DataKeySource = {
      keyId: 'careless',
      async generateDataKey() {
        const plaintext = randomBytes(32);
        return { plaintext, encrypted: Buffer.from(plaintext) };
      },
      async decryptDataKey(encrypted) {
        return Buffer.from(encrypted);
      },
    };
    const vault = new Vault({ keySource: careless, cacheTtlSeconds: 0 });
    const credentials = secretCredentials();
    const sealed = await vault.seal(alice, credentials);
    expect(await vault.open(alice, sealed)).toEqual(credentials);
    const error = await expectVaultError(vault.open(bob, sealed), bob, Object.values(credentials));
    expect(error.message).toMatch(/fail authentication/);
  });

  it.each(['ciphertext', 'tag', 'iv', 'encryptedDataKey'] as const)('refuses an envelope whose %s was altered', async (field) => {
    const credentials = secretCredentials();
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 60 });
    const sealed = await vault.seal(alice, credentials);
    const tampered = { ...sealed, [field]: flipFirstByte(sealed[field]) };
    await expectVaultError(vault.open(alice, tampered), alice, Object.values(credentials));
  });

  it('refuses a malformed envelope (short tag) with a VaultError', async () => {
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 0 });
    const sealed = await vault.seal(alice, secretCredentials());
    const shortTag = { ...sealed, tag: Buffer.from(sealed.tag, 'base64').subarray(0, 4).toString('base64') };
    const error = await expectVaultError(vault.open(alice, shortTag), alice, []);
    expect(error.message).toMatch(/malformed/);
  });

  it('names both keys when the envelope was sealed under a different key', async () => {
    const sealed = await new Vault({ keySource: localSource(), cacheTtlSeconds: 0 }).seal(alice, secretCredentials());
    const otherSource = localSource();
    const error = await expectVaultError(
      new Vault({ keySource: otherSource, cacheTtlSeconds: 0 }).open(alice, sealed),
      alice,
      [],
    );
    expect(error.message).toContain(sealed.keyId);
    expect(error.message).toContain(otherSource.keyId);
  });

  it('opens a cached envelope without calling the key source', async () => {
    const { source, calls } = countingSource(localSource());
    const credentials = secretCredentials();
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 300 }).seal(alice, credentials);
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 300 });

    expect(await vault.open(alice, sealed)).toEqual(credentials);
    expect(calls.decrypt).toBe(1);
    for (let i = 0; i < 5; i++) expect(await vault.open(alice, sealed)).toEqual(credentials);
    expect(calls.decrypt).toBe(1);
  });

  it('serves what it just sealed from the cache', async () => {
    const { source, calls } = countingSource(localSource());
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 300 });
    const credentials = secretCredentials();
    const sealed = await vault.seal(alice, credentials);
    expect(await vault.open(alice, sealed)).toEqual(credentials);
    expect(calls).toEqual({ generate: 1, decrypt: 0 });
  });

  it('does not let a caller change the cached credentials', async () => {
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 300 });
    const credentials = secretCredentials();
    const sealed = await vault.seal(alice, credentials);
    const opened = await vault.open(alice, sealed);
    opened.apiKey = 'changed-by-caller';
    expect(await vault.open(alice, sealed)).toEqual(credentials);
  });

  it('calls the key source again once the cache entry is older than the TTL', async () => {
    const { source, calls } = countingSource(localSource());
    let now = 1_700_000_000_000;
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(alice, secretCredentials());
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 60, now: () => now });

    await vault.open(alice, sealed);
    now += 59_000;
    await vault.open(alice, sealed);
    expect(calls.decrypt).toBe(1);
    now += 2_000;
    await vault.open(alice, sealed);
    expect(calls.decrypt).toBe(2);
  });

  it('calls the key source on every open when the TTL is 0', async () => {
    const { source, calls } = countingSource(localSource());
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 0 });
    const sealed = await vault.seal(alice, secretCredentials());
    await vault.open(alice, sealed);
    await vault.open(alice, sealed);
    expect(calls.decrypt).toBe(2);
  });

  it('forgets a connection on request, and only that connection', async () => {
    const { source, calls } = countingSource(localSource());
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 300 });
    const aliceSealed = await vault.seal(alice, secretCredentials());
    const bobSealed = await vault.seal(bob, secretCredentials());

    vault.forget(alice);
    await vault.open(alice, aliceSealed);
    await vault.open(bob, bobSealed);
    expect(calls.decrypt).toBe(1);
  });

  it('never serves one scope from another scope’s cache entry', async () => {
    const vault = new Vault({ keySource: localSource(), cacheTtlSeconds: 300 });
    const credentials = secretCredentials();
    const sealed = await vault.seal(alice, credentials);
    await vault.open(alice, sealed); // cached for alice
    await expectVaultError(vault.open(bob, sealed), bob, Object.values(credentials));
  });

  it('zero-fills every plaintext data key after use', async () => {
    const { source, handedOut } = countingSource(localSource());
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(alice, secretCredentials());
    await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(alice, sealed);
    // And after a failed open.
    await new Vault({ keySource: source, cacheTtlSeconds: 0 })
      .open(alice, { ...sealed, tag: flipFirstByte(sealed.tag) })
      .catch(() => undefined);

    expect(handedOut).toHaveLength(3);
    for (const dataKey of handedOut) {
      expect(dataKey.length).toBe(32);
      expect(dataKey.every((byte) => byte === 0)).toBe(true);
    }
  });

  it('registers every sealed and opened secret for redaction', async () => {
    const source = localSource();
    const sealedCredentials = secretCredentials();
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(alice, sealedCredentials);
    for (const value of Object.values(sealedCredentials)) expect(knownSecrets().has(value)).toBe(true);

    // A secret stored by another process is registered when this one opens it.
    const other = { privateKey: `key-material-${randomBytes(12).toString('hex')}` };
    const otherSealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(bob, other);
    expect(knownSecrets().has(other.privateKey)).toBe(true);
    expect(await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(alice, sealed)).toEqual(sealedCredentials);
    expect(await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(bob, otherSealed)).toEqual(other);
  });

  it('wraps a key-source failure while sealing in a VaultError', async () => {
    const failing: DataKeySource = {
      keyId: 'down',
      generateDataKey: (_context: EncryptionContext) => Promise.reject(new Error('KMS unavailable')),
      decryptDataKey: () => Promise.reject(new Error('KMS unavailable')),
    };
    const credentials = secretCredentials();
    const error = await expectVaultError(
      new Vault({ keySource: failing, cacheTtlSeconds: 0 }).seal(alice, credentials),
      alice,
      Object.values(credentials),
    );
    expect((error.cause as Error).message).toBe('KMS unavailable');
  });

  describe('shared data keys (many short-lived secrets of one scope)', () => {
    const messagingOf = (accountId: string): VaultScope => ({ accountId, connector: 'messaging' });
    const tokenOf = (n: number) => ({ [`sessionToken:c${n}`]: `token-${n}-${randomBytes(12).toString('hex')}` });

    it('seals many secrets of one scope under one data key, each with its own IV, and opens them with one unwrap', async () => {
      const { source, calls } = countingSource(localSource());
      const sealing = new Vault({ keySource: source, cacheTtlSeconds: 300 });
      const tokens = Array.from({ length: 50 }, (_, n) => tokenOf(n));
      const sealed = await Promise.all(tokens.map((token) => sealing.seal(messagingOf('acct-a'), token, { shareDataKey: true })));
      expect(calls.generate).toBe(1);
      expect(new Set(sealed.map((e) => e.encryptedDataKey)).size).toBe(1);
      expect(new Set(sealed.map((e) => e.iv)).size).toBe(50);

      // Another process (a poller taking them over): one unwrap for all fifty, side by side.
      const opening = new Vault({ keySource: source, cacheTtlSeconds: 300 });
      const opened = await Promise.all(sealed.map((envelope) => opening.open(messagingOf('acct-a'), envelope, { shareDataKey: true })));
      expect(opened).toEqual(tokens);
      expect(calls.decrypt).toBe(1);
      // Without the option an envelope still opens (through the key source).
      expect(await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(messagingOf('acct-a'), sealed[7]!)).toEqual(tokens[7]);
    });

    it('keeps one key per scope: another account, or another connector, never shares it or opens with it', async () => {
      const { source, calls } = countingSource(localSource());
      const vault = new Vault({ keySource: source, cacheTtlSeconds: 300 });
      const a = await vault.seal(messagingOf('acct-a'), tokenOf(1), { shareDataKey: true });
      const b = await vault.seal(messagingOf('acct-b'), tokenOf(2), { shareDataKey: true });
      expect(calls.generate).toBe(2);
      expect(a.encryptedDataKey).not.toBe(b.encryptedDataKey);
      const opener = new Vault({ keySource: source, cacheTtlSeconds: 300 });
      expect(await opener.open(messagingOf('acct-a'), a, { shareDataKey: true })).toBeDefined();
      // acct-a's key is cached now; acct-a's envelope moved to acct-b's item still fails.
      await expectVaultError(opener.open(messagingOf('acct-b'), a, { shareDataKey: true }), messagingOf('acct-b'), []);
      await expectVaultError(opener.open({ accountId: 'acct-a', connector: 'payment' }, a, { shareDataKey: true }), { accountId: 'acct-a', connector: 'payment' }, []);
    });

    it('makes a fresh key once the shared one is an hour old, and unwraps again after the cache TTL', async () => {
      const { source, calls } = countingSource(localSource());
      let now = 1_700_000_000_000;
      const vault = new Vault({ keySource: source, cacheTtlSeconds: 300, now: () => now });
      const first = await vault.seal(messagingOf('acct-a'), tokenOf(1), { shareDataKey: true });
      now += SHARED_KEY_MAX_AGE_MS - 1;
      const second = await vault.seal(messagingOf('acct-a'), tokenOf(2), { shareDataKey: true });
      now += 2;
      const third = await vault.seal(messagingOf('acct-a'), tokenOf(3), { shareDataKey: true });
      expect(calls.generate).toBe(2);
      expect(second.encryptedDataKey).toBe(first.encryptedDataKey);
      expect(third.encryptedDataKey).not.toBe(first.encryptedDataKey);

      const opener = new Vault({ keySource: source, cacheTtlSeconds: 300, now: () => now });
      await opener.open(messagingOf('acct-a'), first, { shareDataKey: true });
      await opener.open(messagingOf('acct-a'), second, { shareDataKey: true });
      expect(calls.decrypt).toBe(1);
      now += 301_000;
      await opener.open(messagingOf('acct-a'), second, { shareDataKey: true });
      expect(calls.decrypt).toBe(2);
    });

    it('zero-fills shared keys once replaced or forgotten, never one still in use', async () => {
      const { source, handedOut } = countingSource(localSource());
      let now = 1_700_000_000_000;
      const vault = new Vault({ keySource: source, cacheTtlSeconds: 300, now: () => now });
      const tokens = [tokenOf(1), tokenOf(2)];
      const sealed = [await vault.seal(messagingOf('acct-a'), tokens[0]!, { shareDataKey: true })];
      now += SHARED_KEY_MAX_AGE_MS;
      sealed.push(await vault.seal(messagingOf('acct-a'), tokens[1]!, { shareDataKey: true }));
      const opener = new Vault({ keySource: source, cacheTtlSeconds: 300 });
      expect(await Promise.all(sealed.map((e) => opener.open(messagingOf('acct-a'), e, { shareDataKey: true })))).toEqual(tokens);
      vault.forget(messagingOf('acct-a'));
      opener.forget(messagingOf('acct-a'));
      // Wiped on the next turn of the event loop, after whatever already holds them.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(handedOut).toHaveLength(4);
      for (const dataKey of handedOut) expect(dataKey.every((byte) => byte === 0)).toBe(true);
      // Forgotten: the next open unwraps again, and still opens.
      expect(await opener.open(messagingOf('acct-a'), sealed[1]!, { shareDataKey: true })).toEqual(tokens[1]);
    });
  });
});
