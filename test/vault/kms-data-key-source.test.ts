import { randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  GenerateDataKeyCommand,
  InvalidCiphertextException,
  KMSClient,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KmsDataKeySource } from '../../shared/vault/kms-data-key-source';
import { sdkKmsCalls } from '../support/sdk-calls';
import { Vault, VaultError } from '../../shared/vault/vault';

const keyId = 'arn:aws:kms:us-east-1:111122223333:key/test-credentials-key';
const kms = mockClient(KMSClient);

/**
 * A stand-in for KMS's behaviour: each wrapped data key is an opaque handle that decrypts only
 * with the key id and the exact encryption context it was generated with.
 */
function fakeKms() {
  const wrapped = new Map<string, { plaintext: Buffer; context: Record<string, string> }>();
  kms.on(GenerateDataKeyCommand).callsFake((input: { EncryptionContext?: Record<string, string> }) => {
    const plaintext = randomBytes(32);
    const handle = randomBytes(24);
    wrapped.set(handle.toString('hex'), { plaintext, context: { ...input.EncryptionContext } });
    return { KeyId: keyId, Plaintext: Buffer.from(plaintext), CiphertextBlob: handle };
  });
  kms.on(DecryptCommand).callsFake((input: { CiphertextBlob?: Uint8Array; KeyId?: string; EncryptionContext?: Record<string, string> }) => {
    const entry = wrapped.get(Buffer.from(input.CiphertextBlob ?? []).toString('hex'));
    const sameContext = JSON.stringify(entry?.context) === JSON.stringify({ ...input.EncryptionContext });
    if (!entry || input.KeyId !== keyId || !sameContext) {
      throw new InvalidCiphertextException({ message: 'InvalidCiphertextException', $metadata: {} });
    }
    // A fresh copy each time, as the vault zero-fills what it receives.
    return { KeyId: keyId, Plaintext: Buffer.from(entry.plaintext) };
  });
}

beforeEach(() => {
  kms.reset();
  fakeKms();
});
afterEach(() => kms.reset());

describe('KmsDataKeySource', () => {
  const scope = { accountId: 'acct-kms', connector: 'billing' } as const;
  const credentials = () => ({ apiKey: `test_${randomBytes(16).toString('hex')}` });

  it('asks KMS for an AES-256 data key under the context {account, connector}, and decrypts with the same context and key', async () => {
    const source = new KmsDataKeySource({ keyId, kms: sdkKmsCalls(new KMSClient({ region: 'us-east-1' })) });
    const vault = new Vault({ keySource: source, cacheTtlSeconds: 0 });
    const secret = credentials();
    const sealed = await vault.seal(scope, secret);
    expect(await vault.open(scope, sealed)).toEqual(secret);

    const generate = kms.commandCalls(GenerateDataKeyCommand);
    expect(generate).toHaveLength(1);
    expect(generate[0]!.args[0].input).toEqual({
      KeyId: keyId,
      KeySpec: 'AES_256',
      EncryptionContext: { account: 'acct-kms', connector: 'billing' },
    });
    const decrypt = kms.commandCalls(DecryptCommand);
    expect(decrypt).toHaveLength(1);
    expect(decrypt[0]!.args[0].input.KeyId).toBe(keyId);
    expect(decrypt[0]!.args[0].input.EncryptionContext).toEqual({ account: 'acct-kms', connector: 'billing' });
    expect(Buffer.from(decrypt[0]!.args[0].input.CiphertextBlob!).toString('base64')).toBe(sealed.encryptedDataKey);
    expect(sealed.keyId).toBe(keyId);
  });

  it('surfaces KMS refusing a context mismatch as a VaultError', async () => {
    const source = new KmsDataKeySource({ keyId, kms: sdkKmsCalls(new KMSClient({ region: 'us-east-1' })) });
    const secret = credentials();
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(scope, secret);

    const other = { accountId: 'acct-other', connector: 'billing' } as const;
    const error = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).open(other, sealed).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VaultError);
    expect((error as VaultError).message).not.toContain(secret.apiKey);
    expect((error as VaultError).cause).toBeInstanceOf(InvalidCiphertextException);
    const decrypt = kms.commandCalls(DecryptCommand);
    expect(decrypt).toHaveLength(1);
    expect(decrypt[0]!.args[0].input.EncryptionContext).toEqual({ account: 'acct-other', connector: 'billing' });
  });

  it('makes no KMS call for a cached open in a warm process', async () => {
    const source = new KmsDataKeySource({ keyId, kms: sdkKmsCalls(new KMSClient({ region: 'us-east-1' })) });
    const sealed = await new Vault({ keySource: source, cacheTtlSeconds: 0 }).seal(scope, credentials());
    const warm = new Vault({ keySource: source, cacheTtlSeconds: 300 });
    for (let i = 0; i < 10; i++) await warm.open(scope, sealed);
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
  });

  it('fails clearly when KMS returns no plaintext', async () => {
    kms.on(GenerateDataKeyCommand).resolves({ CiphertextBlob: randomBytes(8) });
    const source = new KmsDataKeySource({ keyId, kms: sdkKmsCalls(new KMSClient({ region: 'us-east-1' })) });
    await expect(source.generateDataKey({ account: 'acct-kms', connector: 'payment' })).rejects.toThrow(/no data key/);
  });
});
