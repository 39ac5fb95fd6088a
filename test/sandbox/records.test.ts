import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketShape, RateLimiter, TokenBucket } from '../../sandbox/rate-limit';
import { compareKeys, RecordCollection, type SortKey } from '../../sandbox/records';

interface Item {
  id: string;
  at: number | undefined;
}

const operation = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), id: fc.integer({ min: 0, max: 30 }), at: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }) }),
  fc.record({ kind: fc.constant('remove' as const), id: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant('read' as const) }),
);

/** What the sorted view must be: every record by (at, id), absent `at` first. */
function naive(items: Map<string, Item>): string[] {
  return [...items.values()]
    .sort((a, b) => compareKeys([a.at ?? null, a.id], [b.at ?? null, b.id]))
    .map((item) => item.id);
}

describe('RecordCollection', () => {
  it('keeps its sorted view equal to a fresh sort through any mix of puts, replacements and removals', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), (operations) => {
        const collection = new RecordCollection<Item, 'at'>({ at: (item) => item.at });
        const model = new Map<string, Item>();
        for (const op of operations) {
          if (op.kind === 'put') {
            const item = { id: `r${String(op.id).padStart(2, '0')}`, at: op.at };
            collection.put(item);
            model.set(item.id, item);
          } else if (op.kind === 'remove') {
            collection.remove(`r${String(op.id).padStart(2, '0')}`);
            model.delete(`r${String(op.id).padStart(2, '0')}`);
          } else {
            // Reading builds the sorted view, so later changes are spliced into it.
            collection.sorted('at');
          }
        }
        expect(collection.sorted('at').map((item) => item.id)).toEqual(naive(model));
        expect(collection.size).toBe(model.size);
      }),
      { numRuns: 500 },
    );
  });

  it('pages through every record exactly once in both directions, whatever the page size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 0, maxLength: 40 }),
        fc.integer({ min: 1, max: 7 }),
        fc.constantFrom('asc' as const, 'desc' as const),
        (times, limit, direction) => {
          const collection = new RecordCollection<Item, 'at'>({ at: (item) => item.at });
          collection.putMany(times.map((at, index) => ({ id: `r${String(index).padStart(2, '0')}`, at })));
          const seen: string[] = [];
          let after: SortKey | undefined;
          for (let pages = 0; pages <= times.length + 1; pages += 1) {
            const page = collection.scan('at', { direction, limit, ...(after ? { after } : {}) });
            seen.push(...page.records.map((item) => item.id));
            const last = page.records.at(-1);
            if (!page.hasMore || !last) break;
            after = collection.keyOf('at', last);
          }
          const expected = collection.sorted('at').map((item) => item.id);
          expect(seen).toEqual(direction === 'asc' ? expected : [...expected].reverse());
        },
      ),
    );
  });
});

describe('rate limit', () => {
  it('lets a full bucket through, then refills at the configured rate', () => {
    let now = 0;
    const bucket = new TokenBucket(bucketShape({ perSecond: 5 }), () => now);
    const first = Array.from({ length: 6 }, () => bucket.tryTake());
    expect(first).toEqual([true, true, true, true, true, false]);
    now += 400; // two tokens at 5/s
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([true, true, false]);
  });

  it('sizes per-minute buckets to a minute of requests and counts refusals per key', () => {
    expect(bucketShape({ perMinute: 150 })).toEqual({ refillPerMs: 150 / 60 / 1000, capacity: 150 });
    expect(() => bucketShape({ perSecond: 1, perMinute: 60 })).toThrow();
    const limiter = new RateLimiter(() => ({ perSecond: 1 }), () => 0);
    expect([limiter.check('a'), limiter.check('b')]).toEqual([undefined, undefined]);
    expect(limiter.check('a')).toEqual({ perSecond: 1 });
    expect(limiter.rejected).toBe(1);
  });
});
