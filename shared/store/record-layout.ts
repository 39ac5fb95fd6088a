import type { ConnectorName } from '../connectors';

/**
 * How a connection's synced records are laid out in the table: each data object's records spread
 * over `shards` partition keys, a record's shard fixed by a hash of its id.
 *
 * Why: DynamoDB serves about 1,000 write units a second per partition key value, and a first sync
 * of one object writes faster than that. One payment endpoint allows 25 requests a second of 100
 * records, 2,500 records a second; a payment record item is 490–680 bytes, 1 write unit: 2,500
 * units a second for one object, 3 keys at the store's pace of 850 a key (shared/sync/write-pace.ts).
 * 8 leaves room for larger records (a profile with many traits: 2.7 KB, 3 units, 7,500 against
 * 6,800) and for a hash that spreads a page unevenly; the count is fixed for a connection's life.
 * A reader of a whole object then queries 8 keys a page, each for about an eighth of it
 * (mergeShardPages), so reads cost about the same items.
 *
 * Connections stored before sharding have no `recordShards`: 1 shard, the single key they were
 * written under, so their records are never found twice nor written beside a second copy. The
 * count is chosen when a connection is created and never changes for it (docs/first-sync.md).
 */
export const RECORD_SHARDS = 8;

/** A data object's records of one connection, and how many partition keys they are spread over. */
export type RecordPlace = { accountId: string; connector: ConnectorName; object: string; shards: number };

/** The shard count of a connection's records: absent on connections stored before sharding, one key. */
export function shardsOf(connection: { recordShards?: number | undefined }): number {
  return connection.recordShards ?? 1;
}

/** Where one data object of this connection keeps its records. */
export function recordPlace(connection: { accountId: string; connector: ConnectorName; recordShards?: number | undefined }, object: string): RecordPlace {
  return { accountId: connection.accountId, connector: connection.connector, object, shards: shardsOf(connection) };
}

/**
 * A new connection's shard count: sharded, unless records of an earlier connection of the same
 * connector are still stored under the single legacy key (reconnected before their purge ran):
 * writing those beside a sharded copy would show every record twice through the email index.
 */
export function newConnectionShards(legacyRecordsLeft: boolean): number {
  return legacyRecordsLeft ? 1 : RECORD_SHARDS;
}

/**
 * The shard of a record: FNV-1a (32 bits) of its id's UTF-16 code units, modulo the count. Stable
 * forever: a stored record is found again only if this never changes.
 */
export function shardOf(id: string, shards: number): number {
  if (shards <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/**
 * How many items to ask of each shard for a page of `limit`: its even share plus a margin, since a
 * hash spreads a stretch of ids only about evenly. A short share only makes the page shorter
 * (mergeShardPages stops where a shard was cut short), never wrong.
 */
export function perShardLimit(limit: number, shards: number): number {
  if (shards <= 1) return limit;
  const share = Math.ceil(limit / shards);
  return Math.min(limit, share + Math.max(2, Math.ceil(Math.sqrt(share) * 2)));
}

/** One shard's answer: its items from the start key on, in id order, and where it stopped if it was cut short. */
export type ShardPage<T> = { items: readonly T[]; cutAfter?: string };

/**
 * Pure: a page of a whole data object from its shards' pages. A shard cut short holds more items,
 * all after the id it stopped at, so only what sorts up to the smallest such id is known to be
 * complete; the page is that prefix, at most `limit` long. `nextStartKey` (an id; absent when every
 * shard was read to its end) is where the next page starts: the last id returned when the page was
 * cut at `limit`, else the smallest stop (items a filter left out may lie before it).
 */
export function mergeShardPages<T>(pages: ReadonlyArray<ShardPage<T>>, limit: number, idOf: (item: T) => string): { items: T[]; nextStartKey?: string } {
  const stops = pages.flatMap((page) => (page.cutAfter === undefined ? [] : [page.cutAfter]));
  const bound = stops.length === 0 ? undefined : stops.reduce((least, stop) => (compareIds(stop, least) < 0 ? stop : least));
  const merged = pages
    .flatMap((page) => page.items)
    .filter((item) => bound === undefined || compareIds(idOf(item), bound) <= 0)
    .sort((a, b) => compareIds(idOf(a), idOf(b)));
  if (merged.length > limit) return { items: merged.slice(0, limit), nextStartKey: idOf(merged[limit - 1]!) };
  return bound === undefined ? { items: merged } : { items: merged, nextStartKey: bound };
}

/** DynamoDB's order of string sort keys: by UTF-8 bytes, which `<` on strings matches unless one holds a surrogate pair. */
export function compareIds(a: string, b: string): number {
  if (SURROGATE.test(a) || SURROGATE.test(b)) return Buffer.compare(Buffer.from(a), Buffer.from(b));
  return a < b ? -1 : a > b ? 1 : 0;
}

const SURROGATE = /[\ud800-\udfff]/;
