/**
 * Access tokens per connection, in memory only: renewed before they expire (so no call goes out
 * with a dying token), renewed at once when an API answers 401, and renewed by one caller while
 * the others wait for it (single flight). A renewal the platform refuses for good (a revoked
 * refresh token) is remembered, so nothing asks the platform again in a loop until the
 * connection's credentials change (a new cache key).
 */

export interface CachedToken {
  /** The Bearer value. */
  accessToken: string;
  /** When callers stop using it and a renewal starts (epoch ms). */
  renewAt: number;
}

/** How long a refused renewal is remembered before one more try (a user may have fixed the app meanwhile). */
export const REFUSAL_MEMORY_MS = 5 * 60 * 1000;

interface Entry<T> {
  token?: T;
  /** The renewal in progress: every caller that needs a token meanwhile waits for this one. */
  renewal?: Promise<T>;
  /** A renewal refused for good, and until when it is not tried again. */
  refused?: { error: unknown; until: number };
}

export class TokenCache<T extends CachedToken> {
  readonly #entries = new Map<string, Entry<T>>();

  /**
   * @param isFinal whether a renewal failure is one only the user can fix and that asking again
   *   cannot change (a revoked refresh token): remembered. Anything else, the next caller tries again.
   */
  constructor(private readonly isFinal: (error: unknown, key: string) => boolean = () => false) {}

  /** A token good for a while yet: the cached one, or a new one (shared by concurrent callers). */
  async get(key: string, renew: () => Promise<T>, nowMs: number): Promise<T> {
    const entry = this.#entries.get(key) ?? {};
    if (entry.token && nowMs < entry.token.renewAt) return entry.token;
    return this.#renew(key, entry, renew, nowMs);
  }

  /**
   * An API refused `rejected` (401): renew, unless another caller already replaced it, in which
   * case that newer token is returned. Concurrent 401s therefore cost one renewal.
   */
  async replace(key: string, rejected: T, renew: () => Promise<T>, nowMs: number): Promise<T> {
    const entry = this.#entries.get(key) ?? {};
    if (entry.renewal) return entry.renewal;
    if (entry.token && entry.token.accessToken !== rejected.accessToken) return entry.token;
    entry.token = undefined;
    return this.#renew(key, entry, renew, nowMs);
  }

  /** Drops cached tokens whose key passes `which` (a disconnected account's), or all. */
  forget(which: (key: string) => boolean = () => true): void {
    for (const key of [...this.#entries.keys()]) if (which(key)) this.#entries.delete(key);
  }

  #renew(key: string, entry: Entry<T>, renew: () => Promise<T>, nowMs: number): Promise<T> {
    if (entry.refused && nowMs < entry.refused.until) return Promise.reject(entry.refused.error);
    entry.renewal ??= renew()
      .then((token) => {
        entry.token = token;
        entry.refused = undefined;
        return token;
      })
      .catch((error: unknown) => {
        if (this.isFinal(error, key)) entry.refused = { error, until: nowMs + REFUSAL_MEMORY_MS };
        throw error;
      })
      .finally(() => {
        entry.renewal = undefined;
      });
    this.#entries.set(key, entry);
    return entry.renewal;
  }
}

/** When to stop using a token that expires at `expiresAt`, fetched at `nowMs`: 5 minutes before, or half-way for short ones. */
export function renewTime(nowMs: number, expiresAt: number): number {
  const lifetime = Math.max(0, expiresAt - nowMs);
  return expiresAt - Math.min(5 * 60 * 1000, lifetime / 2);
}
