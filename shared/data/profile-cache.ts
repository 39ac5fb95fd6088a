import type { UnifiedProfile } from './query';

/**
 * The short cache behind Real-Time Personalization reads: an agent's replies read the same
 * person's profile many times within a conversation, and each platform query costs 100s of ms and
 * a share of the API limit. Entries live `maxAgeSeconds` at most (the caller may ask for less, or
 * 0 for none), per warm function; concurrent reads of one profile share one query. Every answer
 * states its age, so the caller sees how fresh it is.
 */

export const DEFAULT_PROFILE_MAX_AGE_SECONDS = 30;
export const MAX_PROFILE_MAX_AGE_SECONDS = 300;
const MAX_ENTRIES = 10_000;

export interface CachedProfile {
  profile: UnifiedProfile | undefined;
  fetchedAt: number;
  /** True when this answer came from the cache (or shared an in-flight query). */
  cached: boolean;
}

interface Entry {
  fetchedAt: number;
  value: Promise<UnifiedProfile | undefined>;
}

export class ProfileCache {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = MAX_ENTRIES) {}

  async get(key: string, maxAgeMs: number, now: number, load: () => Promise<UnifiedProfile | undefined>): Promise<CachedProfile> {
    const entry = this.#entries.get(key);
    if (entry && maxAgeMs > 0 && now - entry.fetchedAt <= maxAgeMs) {
      return { profile: await entry.value, fetchedAt: entry.fetchedAt, cached: true };
    }
    const value = load();
    const fresh: Entry = { fetchedAt: now, value };
    this.#entries.delete(key);
    this.#entries.set(key, fresh);
    // A failed query is not kept.
    value.catch(() => {
      if (this.#entries.get(key) === fresh) this.#entries.delete(key);
    });
    while (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
    return { profile: await value, fetchedAt: now, cached: false };
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** The process's cache. */
export const profileCache = new ProfileCache();
