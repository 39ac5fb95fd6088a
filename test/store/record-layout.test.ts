import { describe, expect, it } from 'vitest';
import { compareIds, mergeShardPages, newConnectionShards, perShardLimit, RECORD_SHARDS, recordPlace, shardOf, type ShardPage } from '../../shared/store/record-layout';
import { unitsByShard } from '../../shared/sync/page-writes';
import { AtMostAtOnce, WritesPerSecond } from '../../shared/sync/write-pace';

/** A seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * What the store does with a data object's shards, in memory: each shard answers its items after
 * `startKey`, up to `perShardLimit` evaluated, and says where it stopped when cut short.
 */
function pageOver(shards: string[][], limit: number, startKey: string | undefined, kept: (id: string) => boolean) {
  const pages: Array<ShardPage<string>> = shards.map((ids) => {
    const after = ids.filter((id) => startKey === undefined || compareIds(id, startKey) > 0);
    const evaluated = after.slice(0, perShardLimit(limit, shards.length));
    const cut = after.length > evaluated.length;
    return { items: evaluated.filter(kept), ...(cut ? { cutAfter: evaluated[evaluated.length - 1]! } : {}) };
  });
  return mergeShardPages(pages, limit, (id) => id);
}

describe('the record layout', () => {
  it('puts a record in one stable shard, and spreads ids about evenly', () => {
    expect(shardOf('cus_1', 1)).toBe(0);
    expect(shardOf('cus_Nffrfeuf', 8)).toBe(shardOf('cus_Nffrfeuf', 8));
    // Fixed forever: a stored record is found again only if its shard never moves.
    expect(['cus_1', 'sub_2', 'in_3', 'pi_4', 'ch_5'].map((id) => shardOf(id, 8))).toEqual([2, 4, 0, 1, 2]);
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 16_000; i++) counts[shardOf(`cus_${i.toString(36).padStart(8, '0')}`, 8)]! += 1;
    for (const count of counts) expect(Math.abs(count - 2_000)).toBeLessThan(200);
  });

  it('shards new connections, keeps the single key for connections stored before sharding or whose old records wait for their purge', () => {
    expect(newConnectionShards(false)).toBe(RECORD_SHARDS);
    expect(newConnectionShards(true)).toBe(1);
    expect(recordPlace({ accountId: 'a', connector: 'payment' }, 'customers').shards).toBe(1);
    expect(recordPlace({ accountId: 'a', connector: 'payment', recordShards: 8 }, 'charges')).toEqual({ accountId: 'a', connector: 'payment', object: 'charges', shards: 8 });
  });

  it('asks each shard for its share of a page and a margin, never more than the page', () => {
    expect(perShardLimit(100, 1)).toBe(100);
    expect(perShardLimit(1000, 8)).toBe(125 + 23);
    expect(perShardLimit(100, 8)).toBe(13 + 8);
    expect(perShardLimit(1, 8)).toBe(1);
  });

  it('a page is the prefix every shard has answered: nothing past a shard that was cut short', () => {
    const page = mergeShardPages(
      [
        { items: ['a', 'd', 'g'], cutAfter: 'g' },
        { items: ['b', 'c', 'e', 'h', 'k'] },
        { items: ['f'], cutAfter: 'i' },
      ],
      10,
      (id) => id,
    );
    // Shard 1 may hold more after g: h and k wait for the next page.
    expect(page).toEqual({ items: ['a', 'b', 'c', 'd', 'e', 'f', 'g'], nextStartKey: 'g' });
    expect(mergeShardPages([{ items: ['b'] }, { items: ['a', 'c'] }], 2, (id) => id)).toEqual({ items: ['a', 'b'], nextStartKey: 'b' });
    expect(mergeShardPages([{ items: ['b'] }, { items: ['a'] }], 2, (id) => id)).toEqual({ items: ['a', 'b'] });
    // Everything a shard read was filtered out: an empty page that still moves on.
    expect(mergeShardPages([{ items: [], cutAfter: 'm' }, { items: ['z'] }], 5, (id) => id)).toEqual({ items: [], nextStartKey: 'm' });
  });

  it('paging over random shards and page sizes returns every id once, in order, as one sorted list would', () => {
    const next = random(28);
    for (let round = 0; round < 60; round++) {
      const shardCount = [1, 2, 3, 8][round % 4]!;
      const ids = [...new Set(Array.from({ length: Math.floor(next() * 600) }, () => `id_${Math.floor(next() * 1e9).toString(36)}`))];
      const shards = Array.from({ length: shardCount }, () => [] as string[]);
      for (const id of ids) shards[shardOf(id, shardCount)]!.push(id);
      for (const shard of shards) shard.sort(compareIds);
      // Some rounds leave items out as a filter would (deleted records): pages may come back short.
      const dropped = round % 3 === 0 ? new Set(ids.filter(() => next() < 0.3)) : new Set<string>();
      const kept = (id: string) => !dropped.has(id);
      const listed: string[] = [];
      let startKey: string | undefined;
      let pages = 0;
      do {
        const limit = 1 + Math.floor(next() * 120);
        const page = pageOver(shards, limit, startKey, kept);
        expect(page.items.length).toBeLessThanOrEqual(limit);
        listed.push(...page.items);
        startKey = page.nextStartKey;
        pages += 1;
        expect(pages).toBeLessThan(2_000);
      } while (startKey !== undefined);
      expect(listed).toEqual(ids.filter(kept).sort(compareIds));
    }
  });

  it('orders ids as DynamoDB does, by UTF-8 bytes', () => {
    expect(compareIds('a', 'b')).toBeLessThan(0);
    // U+FF5E sorts before U+1F600 in UTF-8, after its surrogates in UTF-16.
    expect(compareIds('\uff5e', '\u{1f600}')).toBeLessThan(0);
    expect('\uff5e' < '\u{1f600}').toBe(false);
  });
});

describe('the write pace per shard key', () => {
  it('counts a write request in every shard key its records go to', () => {
    const records = ['cus_1', 'sub_2', 'in_3', 'pi_4', 'ch_5'].map((id) => ({ id, hash: 'h', body: {} }));
    expect([...unitsByShard(records, 8, () => 2).entries()].sort()).toEqual([
      [0, 2],
      [1, 2],
      [2, 4],
      [4, 2],
    ]);
    expect([...unitsByShard(records, 1, () => 2).entries()]).toEqual([[0, 10]]);
  });

  it('lets each key take its limit a second, and holds a request until every key it touches has room', async () => {
    let now = 0;
    const pace = new WritesPerSecond(10, () => now);
    await pace.take(new Map([[0, 10]]));
    // Another key is not held by the first one's second.
    await pace.take(new Map([[1, 10]]));
    let sent = false;
    const waiting = pace.take(new Map([[1, 1], [2, 1]])).then(() => (sent = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(sent).toBe(false);
    now = 1_000;
    await waiting;
    expect(sent).toBe(true);
  });
});

describe('pages sending their writes at once', () => {
  it('runs at most the limit at once, every task in its turn, a failed one handing its turn on', async () => {
    const sending = new AtMostAtOnce(3);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, index) =>
        sending.run(async () => {
          started.push(index);
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 5 + (index % 4)));
          running -= 1;
          if (index === 4) throw new Error('throttled');
          return index;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(started).toEqual(Array.from({ length: 12 }, (_, index) => index));
    expect(results.filter((result) => result.status === 'fulfilled').length).toBe(11);
  });
});
