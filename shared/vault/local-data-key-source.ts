import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as z from 'zod/mini';
import { canonicalContext, type DataKeySource, type EncryptionContext } from './data-key-source';

/**
 * Local stand-in for KMS: data keys are wrapped with AES-256-GCM under a key kept in a file, with
 * the canonical encryption context as additional authenticated data. A data key moved to another
 * context therefore fails to unwrap, exactly as KMS Decrypt would refuse it.
 */
export class LocalDataKeySource implements DataKeySource {
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(options: { keyId: string; key: Uint8Array }) {
    if (options.key.length !== KEY_BYTES) throw new Error(`a local key is ${KEY_BYTES} bytes`);
    this.keyId = options.keyId;
    this.#key = Buffer.from(options.key);
  }

  async generateDataKey(context: EncryptionContext): Promise<{ plaintext: Uint8Array; encrypted: Uint8Array }> {
    const plaintext = randomBytes(KEY_BYTES);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(canonicalContext(context)));
    const wrapped = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { plaintext, encrypted: Buffer.concat([Buffer.of(WRAP_FORMAT), iv, wrapped, cipher.getAuthTag()]) };
  }

  async decryptDataKey(encrypted: Uint8Array, context: EncryptionContext): Promise<Uint8Array> {
    const blob = Buffer.from(encrypted);
    if (blob.length !== WRAPPED_BYTES || blob[0] !== WRAP_FORMAT) {
      throw new Error('the data key was not wrapped by a local key file');
    }
    const iv = blob.subarray(1, 1 + IV_BYTES);
    const wrapped = blob.subarray(1 + IV_BYTES, 1 + IV_BYTES + KEY_BYTES);
    const tag = blob.subarray(1 + IV_BYTES + KEY_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(canonicalContext(context)));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(wrapped), decipher.final()]);
    } catch {
      throw new Error('the data key does not unwrap under this key file and encryption context');
    }
  }
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** First byte of a wrapped data key, so a future format can be told apart. */
const WRAP_FORMAT = 1;
const WRAPPED_BYTES = 1 + IV_BYTES + KEY_BYTES + TAG_BYTES;

/** What the key file holds. */
const LocalKeyFile = z.object({
  format: z.literal('integration-gateway-local-key'),
  version: z.literal(1),
  keyId: z.string().check(z.minLength(1)),
  key: z.base64(),
});

/** The key file is missing or unreadable; the message tells the user what to do. */
export class LocalKeyFileError extends Error {
  override readonly name = 'LocalKeyFileError';
}

/**
 * Opens the local key file, creating it only when `create` is true (the first start with an empty
 * data folder). A missing or damaged file is never replaced silently: that would orphan every
 * stored credential, so the error says how to recover instead.
 */
export async function openLocalKeyFile(path: string, options: { create: boolean }): Promise<LocalDataKeySource> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (!isMissingFile(error)) throw error;
    if (!options.create) {
      throw new LocalKeyFileError(
        `The local key file ${path} is missing, but the local data folder already holds credentials encrypted with it. ` +
          `Restore the key file from your backup, or delete the local data folder to start over (stored connections will be lost).`,
      );
    }
    return (await createKeyFile(path)) ?? openLocalKeyFile(path, { create: false });
  }
  return sourceFromKeyFile(path, text);
}

function sourceFromKeyFile(path: string, text: string): LocalDataKeySource {
  const damaged = (what: string) =>
    new LocalKeyFileError(
      `The local key file ${path} is damaged (${what}). Restore it from your backup, ` +
        `or delete the local data folder to start over (stored connections will be lost).`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw damaged('it is not valid JSON');
  }
  const parsed = LocalKeyFile.safeParse(json);
  if (!parsed.success) throw damaged('it does not have the expected fields');
  const key = Buffer.from(parsed.data.key, 'base64');
  if (key.length !== KEY_BYTES) throw damaged(`the key is ${key.length} bytes instead of ${KEY_BYTES}`);
  const source = new LocalDataKeySource({ keyId: parsed.data.keyId, key });
  key.fill(0);
  return source;
}

/** Writes a new key file readable by its owner only; returns undefined if another process made it first. */
async function createKeyFile(path: string): Promise<LocalDataKeySource | undefined> {
  const key = randomBytes(KEY_BYTES);
  const keyId = `local-${randomBytes(8).toString('hex')}`;
  const file: z.infer<typeof LocalKeyFile> = {
    format: 'integration-gateway-local-key',
    version: 1,
    keyId,
    key: key.toString('base64'),
  };
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  try {
    await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if (isExistingFile(error)) return undefined;
    throw error;
  }
  // The mode given to writeFile is narrowed by the umask, never widened; chmod makes it exact.
  await chmod(path, 0o600);
  const source = new LocalDataKeySource({ keyId, key });
  key.fill(0);
  return source;
}

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}

function isExistingFile(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'EEXIST';
}
