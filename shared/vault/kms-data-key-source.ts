import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { DataKeySource, EncryptionContext } from './data-key-source';

/**
 * Data keys from AWS KMS. The encryption context goes with every call, so KMS itself (and the IAM
 * conditions on `kms:EncryptionContext:account` / `:connector`) refuse a data key asked for under
 * another account's or connector's context.
 */
export class KmsDataKeySource implements DataKeySource {
  readonly keyId: string;
  #client: KMSClient | undefined;

  /** `client` is for tests and custom configuration; by default one is made on first use. */
  constructor(options: { keyId: string; client?: KMSClient }) {
    this.keyId = options.keyId;
    this.#client = options.client;
  }

  async generateDataKey(context: EncryptionContext): Promise<{ plaintext: Uint8Array; encrypted: Uint8Array }> {
    const response = await this.#kms().send(
      new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: { ...context } }),
    );
    if (!response.Plaintext || !response.CiphertextBlob) {
      throw new Error('KMS GenerateDataKey returned no data key');
    }
    return { plaintext: response.Plaintext, encrypted: response.CiphertextBlob };
  }

  async decryptDataKey(encrypted: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    // KeyId pins the key: a blob wrapped by any other key is refused rather than decrypted.
    const response = await this.#kms().send(
      new DecryptCommand({ CiphertextBlob: encrypted, KeyId: this.keyId, EncryptionContext: { ...context } }),
    );
    if (!response.Plaintext) throw new Error('KMS Decrypt returned no data key');
    return response.Plaintext;
  }

  #kms(): KMSClient {
    this.#client ??= new KMSClient({});
    return this.#client;
  }
}
