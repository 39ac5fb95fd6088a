import * as z from 'zod/mini';

/**
 * A connection's secrets in plaintext: field name to value, e.g. `{ apiKey }` or
 * `{ clientSecret, privateKey }`. Lives only in memory.
 */
export const Credentials = z.record(z.string(), z.string());
export type Credentials = z.infer<typeof Credentials>;

/** Base64 text that decodes to exactly `bytes` bytes (or at least one byte when `bytes` is omitted). */
function base64Bytes(bytes?: number) {
  return z.base64().check(
    z.refine(
      (text) => {
        const length = Buffer.from(text, 'base64').length;
        return bytes === undefined ? length > 0 : length === bytes;
      },
      { message: bytes === undefined ? 'must not be empty' : `must decode to ${bytes} bytes` },
    ),
  );
}

/**
 * The envelope stored in a connection's item: credentials encrypted with AES-256-GCM under a
 * fresh data key, and that data key encrypted by the key source (KMS, or the local key file).
 * The encryption context (account and connector) is not stored: it is taken from the item the
 * envelope is read from, so an envelope copied to another item fails to open.
 */
export const SealedCredentials = z.object({
  v: z.literal(1),
  /** The key that wrapped the data key (a KMS key id/ARN/alias, or the local key file's id). */
  keyId: z.string().check(z.minLength(1)),
  encryptedDataKey: base64Bytes(),
  iv: base64Bytes(12),
  ciphertext: base64Bytes(),
  tag: base64Bytes(16),
});
export type SealedCredentials = z.infer<typeof SealedCredentials>;
