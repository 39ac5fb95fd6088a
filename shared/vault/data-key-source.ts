import type { ConnectorName } from '../connectors';

/**
 * What a data key is bound to: account and connector, and `purpose: webhook` for a connection's
 * webhook secret sealed apart. The KMS key policy and the functions' IAM policies require exactly
 * these keys (docs/permissions.md): the receivers may open only `purpose: webhook` envelopes, every
 * other function only those without a purpose.
 */
export type EncryptionContext = { account: string; connector: ConnectorName; purpose?: 'webhook' };

/** Where data keys come from: KMS in AWS, a key file locally. Both bind each data key to its context. */
export interface DataKeySource {
  /** Recorded in each envelope, so an operator can tell which key sealed it. */
  readonly keyId: string;
  /** A fresh 256-bit data key, in plaintext (zero-fill it after use) and wrapped for storage. */
  generateDataKey(context: EncryptionContext): Promise<{ plaintext: Uint8Array; encrypted: Uint8Array }>;
  /** Unwraps a data key; rejects when the context differs from the one it was generated with. */
  decryptDataKey(encrypted: Uint8Array, context: EncryptionContext): Promise<Uint8Array>;
}

/**
 * The context as canonical JSON (keys sorted, no spaces): the additional authenticated data of
 * every AES-GCM operation, so the same context always yields the same bytes.
 */
export function canonicalContext(context: EncryptionContext): string {
  const sorted = Object.fromEntries(
    Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return JSON.stringify(sorted);
}
