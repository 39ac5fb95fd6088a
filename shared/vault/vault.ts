import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { ConnectorName } from '../connectors';
import { registerSecret } from '../log/redaction';
import { canonicalContext, type DataKeySource, type EncryptionContext } from './data-key-source';
import { Credentials, SealedCredentials } from './sealed-credentials';

/** Whose credentials: one connection of one account; `purpose: webhook` for its webhook secret sealed apart. */
export type VaultScope = { accountId: string; connector: ConnectorName; purpose?: 'webhook' };

/**
 * Credentials could not be sealed or opened. The message names the connection, never a secret.
 */
export class VaultError extends Error {
  override readonly name = 'VaultError';
  readonly scope: VaultScope;

  constructor(scope: VaultScope, reason: string, options?: { cause?: unknown }) {
    super(`Credentials of account ${scope.accountId}'s ${scope.connector} connection: ${reason}`, options);
    this.scope = { ...scope };
  }
}

/**
 * Envelope encryption of each connection's credentials.
 *
 * A fresh data key per seal, wrapped by the key source under the context {account, connector};
 * the credentials are encrypted with AES-256-GCM using the same context as additional
 * authenticated data. So an envelope copied to another account's or connector's item fails to
 * open twice over: the key source refuses the data key, and even a data key that did unwrap would
 * fail the GCM tag.
 *
 * Opened credentials are cached in memory for `cacheTtlSeconds` (0 turns the cache off), keyed by
 * scope and a hash of the envelope, so a warm function makes no key-source call per request and a
 * changed envelope (reconnect) is never served stale.
 */
export class Vault {
  readonly #keySource: DataKeySource;
  readonly #cacheTtlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { credentials: Readonly<Credentials>; expiresAt: number }>();
  /** Shared data keys for sealing, one per scope (see `SealOptions.shareDataKey`). */
  readonly #sealKeys = new Map<string, Promise<SharedDataKey>>();
  /** Shared data keys opened, by scope and wrapped key, for the cache TTL. */
  readonly #openKeys = new Map<string, { key: Promise<Uint8Array>; expiresAt: number }>();

  constructor(options: { keySource: DataKeySource; cacheTtlSeconds: number; now?: () => number }) {
    this.#keySource = options.keySource;
    this.#cacheTtlMs = Math.max(0, options.cacheTtlSeconds) * 1000;
    this.#now = options.now ?? Date.now;
  }

  async seal(scope: VaultScope, credentials: Credentials, options: SealOptions = {}): Promise<SealedCredentials> {
    const checked = Credentials.parse(credentials);
    registerEvery(checked);
    const context = contextOf(scope);
    let dataKey: { plaintext: Uint8Array; encrypted: Uint8Array };
    try {
      dataKey = options.shareDataKey ? await this.#sharedSealKey(scope) : await this.#keySource.generateDataKey(context);
    } catch (error) {
      throw new VaultError(scope, 'could not get a data key to seal them', { cause: error });
    }
    const plaintext = Buffer.from(JSON.stringify(checked), 'utf8');
    try {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', dataKey.plaintext, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(canonicalContext(context), 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      const sealed: SealedCredentials = {
        v: 1,
        keyId: this.#keySource.keyId,
        encryptedDataKey: Buffer.from(dataKey.encrypted).toString('base64'),
        iv: iv.toString('base64'),
        ciphertext: ciphertext.toString('base64'),
        tag: cipher.getAuthTag().toString('base64'),
      };
      // The process that just sealed them (connect, OAuth callback) usually uses them next.
      this.#remember(scope, sealed, checked);
      return sealed;
    } finally {
      plaintext.fill(0);
      // A shared key is zero-filled when it is replaced (#sharedSealKey), not after each use.
      if (!options.shareDataKey) dataKey.plaintext.fill(0);
    }
  }

  /** The scope's shared sealing key: a fresh one per SHARED_KEY_MAX_AGE_MS or SHARED_KEY_MAX_SEALS, single-flight. */
  async #sharedSealKey(scope: VaultScope): Promise<SharedDataKey> {
    const prefix = scopePrefix(scope);
    for (;;) {
      const pending = this.#sealKeys.get(prefix);
      const current = await pending?.catch(() => undefined);
      // Another seal replaced it while this one waited: look again.
      if (this.#sealKeys.get(prefix) !== pending) continue;
      if (current && current.seals < SHARED_KEY_MAX_SEALS && this.#now() - current.createdAt < SHARED_KEY_MAX_AGE_MS) {
        current.seals++;
        return current;
      }
      const next = this.#keySource.generateDataKey(contextOf(scope)).then((key) => ({ ...key, createdAt: this.#now(), seals: 0 }));
      this.#sealKeys.set(prefix, next);
      next.catch(() => this.#sealKeys.get(prefix) === next && this.#sealKeys.delete(prefix));
      if (current) wipeLater(current.plaintext);
      const key = await next;
      key.seals++;
      return key;
    }
  }

  async open(scope: VaultScope, sealed: SealedCredentials, options: SealOptions = {}): Promise<Credentials> {
    const parsed = SealedCredentials.safeParse(sealed);
    if (!parsed.success) throw new VaultError(scope, 'the stored envelope is malformed');
    const envelope = parsed.data;

    const cached = this.#cache.get(cacheKey(scope, envelope));
    if (cached && cached.expiresAt > this.#now()) return { ...cached.credentials };

    const context = contextOf(scope);
    // Without a cache a shared key is unwrapped per open like any other, and wiped after use.
    const shared = options.shareDataKey === true && this.#cacheTtlMs > 0;
    let dataKey: Uint8Array;
    try {
      dataKey = shared ? await this.#openedSharedKey(scope, envelope.encryptedDataKey) : await this.#keySource.decryptDataKey(Buffer.from(envelope.encryptedDataKey, 'base64'), context);
    } catch (error) {
      const keyNote =
        envelope.keyId === this.#keySource.keyId
          ? ''
          : ` (they were sealed under key ${envelope.keyId}, but the vault uses key ${this.#keySource.keyId})`;
      throw new VaultError(
        scope,
        `the data key could not be decrypted for this connection${keyNote}; reconnect to store them again`,
        { cause: error },
      );
    }

    let plaintext: Buffer | undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(envelope.iv, 'base64'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(canonicalContext(context), 'utf8'));
      decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
      plaintext = Buffer.concat([decipher.update(Buffer.from(envelope.ciphertext, 'base64')), decipher.final()]);
    } catch {
      // No cause attached: nothing about the failed decryption is worth carrying around.
      throw new VaultError(scope, 'they fail authentication (altered, or copied from another connection)');
    } finally {
      if (!shared) dataKey.fill(0);
    }

    try {
      const credentials = Credentials.safeParse(JSON.parse(plaintext.toString('utf8')));
      if (!credentials.success) throw new VaultError(scope, 'they decrypted to an unexpected shape');
      registerEvery(credentials.data);
      this.#remember(scope, envelope, credentials.data);
      return { ...credentials.data };
    } catch (error) {
      if (error instanceof VaultError) throw error;
      throw new VaultError(scope, 'they decrypted to something that is not JSON');
    } finally {
      plaintext.fill(0);
    }
  }

  /** A shared data key, unwrapped once per scope and wrapped key for the cache TTL (single-flight). */
  #openedSharedKey(scope: VaultScope, encryptedDataKey: string): Promise<Uint8Array> {
    const id = scopePrefix(scope) + createHash('sha256').update(encryptedDataKey).digest('base64');
    const now = this.#now();
    const cached = this.#openKeys.get(id);
    if (cached && cached.expiresAt > now) return cached.key;
    const key = this.#keySource.decryptDataKey(Buffer.from(encryptedDataKey, 'base64'), contextOf(scope));
    this.#openKeys.set(id, { key, expiresAt: now + this.#cacheTtlMs });
    key.catch(() => this.#openKeys.get(id)?.key === key && this.#openKeys.delete(id));
    if (cached) wipeWhenSettled(cached.key);
    this.#sweepOpenKeys(now);
    return key;
  }

  #sweepOpenKeys(now: number): void {
    for (const [id, entry] of this.#openKeys) {
      if (entry.expiresAt > now && this.#openKeys.size <= MAX_CACHED_CONNECTIONS) continue;
      this.#openKeys.delete(id);
      wipeWhenSettled(entry.key);
    }
  }

  /** Drops the cached credentials of a connection (disconnected, reconnected, or rejected by the platform). */
  forget(scope: VaultScope): void {
    const prefix = scopePrefix(scope);
    for (const key of this.#cache.keys()) {
      if (key.startsWith(prefix)) this.#cache.delete(key);
    }
    for (const [id, entry] of this.#openKeys) {
      if (!id.startsWith(prefix)) continue;
      this.#openKeys.delete(id);
      wipeWhenSettled(entry.key);
    }
    const sealing = this.#sealKeys.get(prefix);
    this.#sealKeys.delete(prefix);
    if (sealing) wipeWhenSettled(sealing.then((key) => key.plaintext));
  }

  #remember(scope: VaultScope, sealed: SealedCredentials, credentials: Credentials): void {
    if (this.#cacheTtlMs === 0) return;
    const key = cacheKey(scope, sealed);
    this.#cache.delete(key); // re-inserting moves it to the newest end of the Map's order
    this.#cache.set(key, { credentials: Object.freeze({ ...credentials }), expiresAt: this.#now() + this.#cacheTtlMs });
    // A sync function may touch many accounts in one warm life: bound the cache, oldest first.
    for (const oldest of this.#cache.keys()) {
      if (this.#cache.size <= MAX_CACHED_CONNECTIONS) break;
      this.#cache.delete(oldest);
    }
  }
}

/**
 * How a secret is sealed. `shareDataKey`: for many short-lived secrets of one scope (conversation
 * session tokens), seals share one data key per scope for up to SHARED_KEY_MAX_AGE_MS and
 * SHARED_KEY_MAX_SEALS (as the AWS Encryption SDK's data key caching does), and opens unwrap each
 * shared key once per cache TTL: a poller taking over 200 conversations makes one KMS call per
 * account and key, not one per conversation. Each envelope still has its own IV and the scope as
 * additional authenticated data; a poller holds those secrets in plaintext anyway.
 */
export interface SealOptions {
  shareDataKey?: boolean;
}

interface SharedDataKey {
  plaintext: Uint8Array;
  encrypted: Uint8Array;
  createdAt: number;
  seals: number;
}

/** A shared sealing key is replaced after an hour or 10,000 seals (random 96-bit IVs are safe far beyond). */
export const SHARED_KEY_MAX_AGE_MS = 60 * 60 * 1000;
export const SHARED_KEY_MAX_SEALS = 10_000;

const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_CACHED_CONNECTIONS = 1000;

function contextOf(scope: VaultScope): EncryptionContext {
  return { account: scope.accountId, connector: scope.connector, ...(scope.purpose ? { purpose: scope.purpose } : {}) };
}

function scopePrefix(scope: VaultScope): string {
  return `${scope.accountId}\n${scope.connector}\n`;
}

function cacheKey(scope: VaultScope, sealed: SealedCredentials): string {
  const envelope = [sealed.v, sealed.keyId, sealed.encryptedDataKey, sealed.iv, sealed.ciphertext, sealed.tag].join('\n');
  // The purpose is part of the key: an envelope opened under one context is never served under another.
  return `${scopePrefix(scope)}${scope.purpose ?? ''}\n${createHash('sha256').update(envelope).digest('base64')}`;
}

/**
 * Zero-fills a shared key no longer handed out, after the seals and opens that already hold it
 * have used it (they use it synchronously once their await resumes, before any timer runs).
 */
function wipeLater(key: Uint8Array): void {
  setImmediate(() => key.fill(0));
}

function wipeWhenSettled(key: Promise<Uint8Array>): void {
  key.then(wipeLater, () => undefined);
}

function registerEvery(credentials: Credentials): void {
  for (const value of Object.values(credentials)) registerSecret(value);
}
