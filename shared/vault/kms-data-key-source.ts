import type { DecryptRequest, GenerateDataKeyRequest } from '@aws-sdk/client-kms';
import type { GatewayEnvironment } from '../config';
import type { DataKeySource, EncryptionContext } from './data-key-source';
import { Vault } from './vault';

/**
 * The two KMS actions the vault makes, in the shapes of KMS's API reference, blobs as bytes: through
 * the SDK's client (test/support/sdk-calls.ts, the tests' oracle) or as signed calls (shared/vault/signed-kms-calls.ts).
 */
export interface KmsCalls {
  generateDataKey(input: GenerateDataKeyRequest): Promise<{ Plaintext?: Uint8Array; CiphertextBlob?: Uint8Array }>;
  decrypt(input: DecryptRequest): Promise<{ Plaintext?: Uint8Array }>;
}

/**
 * Data keys from AWS KMS. The encryption context goes with every call, so KMS itself (and the IAM
 * conditions on `kms:EncryptionContext:account` / `:connector`) refuse a data key asked for under
 * another account's or connector's context.
 */
export class KmsDataKeySource implements DataKeySource {
  readonly keyId: string;
  readonly #kms: KmsCalls;

  constructor(options: { keyId: string; kms: KmsCalls }) {
    this.keyId = options.keyId;
    this.#kms = options.kms;
  }

  async generateDataKey(context: EncryptionContext): Promise<{ plaintext: Uint8Array; encrypted: Uint8Array }> {
    const response = await this.#kms.generateDataKey({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: { ...context } });
    if (!response.Plaintext || !response.CiphertextBlob) {
      throw new Error('KMS GenerateDataKey returned no data key');
    }
    return { plaintext: response.Plaintext, encrypted: response.CiphertextBlob };
  }

  async decryptDataKey(encrypted: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    // KeyId pins the key: a blob wrapped by any other key is refused rather than decrypted.
    const response = await this.#kms.decrypt({ CiphertextBlob: encrypted, KeyId: this.keyId, EncryptionContext: { ...context } });
    if (!response.Plaintext) throw new Error('KMS Decrypt returned no data key');
    return response.Plaintext;
  }
}

/**
 * The vault over KMS, reached through `kms`. Making it calls nothing: a delivery served from the warm
 * cache makes no KMS call.
 */
export function kmsVaultOver(env: GatewayEnvironment, kms: KmsCalls): Vault {
  return new Vault({
    keySource: new KmsDataKeySource({ kms, keyId: env.CREDENTIALS_KEY_ID ?? 'CREDENTIALS_KEY_ID-not-set' }),
    cacheTtlSeconds: env.VAULT_CACHE_TTL_SECONDS,
  });
}
