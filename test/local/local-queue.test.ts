import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { LOCAL_MAX_CONCURRENCY, LocalQueue } from '../../local/local-queue';

describe('local queue (SQS + Lambda event source stand-in)', () => {
  it('hands the consumer SQS-shaped batches no larger than the batch size', async () => {
    const batches: SQSEvent[] = [];
    const queue = new LocalQueue<{ n: number }>({ name: 'ingestion', batchSize: 50, consumer: async (event) => void batches.push(event) });
    await queue.send(Array.from({ length: 120 }, (_, n) => ({ n })));
    await queue.idle();
    expect(batches.map((b) => b.Records.length)).toEqual([50, 50, 20]);
    const bodies = batches.flatMap((b) => b.Records.map((r) => JSON.parse(r.body).n));
    expect(bodies).toEqual(Array.from({ length: 120 }, (_, n) => n));
    expect(batches[0]!.Records[0]).toMatchObject({ eventSource: 'aws:sqs', attributes: { ApproximateReceiveCount: '1' } });
  });

  it('retries only the messages a partial batch response names', async () => {
    const seen = new Map<number, number>();
    const queue = new LocalQueue<{ n: number }>({
      name: 'webhook-events',
      batchSize: 10,
      retryDelayMs: 1,
      consumer: async (event) => {
        const failures = [];
        for (const record of event.Records) {
          const n = JSON.parse(record.body).n as number;
          seen.set(n, (seen.get(n) ?? 0) + 1);
          // Odd messages fail on their first receive only.
          if (n % 2 === 1 && record.attributes.ApproximateReceiveCount === '1') failures.push({ itemIdentifier: record.messageId });
        }
        return { batchItemFailures: failures };
      },
    });
    await queue.send(Array.from({ length: 6 }, (_, n) => ({ n })));
    await queue.idle();
    expect(Object.fromEntries(seen)).toEqual({ 0: 1, 1: 2, 2: 1, 3: 2, 4: 1, 5: 2 });
    expect(queue.deadLetters).toHaveLength(0);
  });

  it('dead-letters a message after maxReceiveCount, and redrive replays it', async () => {
    let healthy = false;
    let delivered = 0;
    const queue = new LocalQueue<{ n: number }>({
      name: 'sync-jobs',
      batchSize: 1,
      maxReceiveCount: 3,
      retryDelayMs: 1,
      consumer: async () => {
        if (!healthy) throw new Error('platform down');
        delivered += 1;
      },
    });
    await queue.send([{ n: 1 }]);
    await queue.idle();
    expect(queue.deadLetters).toHaveLength(1);
    expect(queue.deadLetters[0]!.receiveCount).toBe(3);
    healthy = true;
    expect(queue.redrive()).toBe(1);
    await queue.idle();
    expect(delivered).toBe(1);
    expect(queue.deadLetters).toHaveLength(0);
  });

  /** A consumer that holds each batch for `ms` and counts the batches it holds at once. */
  const counting = (ms: number, fail?: (n: number, receive: number) => boolean) => {
    const state = { now: 0, most: 0, seen: [] as Array<{ n: number; receive: number }> };
    const consumer = async (event: SQSEvent) => {
      state.now += 1;
      state.most = Math.max(state.most, state.now);
      await new Promise((resolve) => setTimeout(resolve, ms));
      state.now -= 1;
      const failures = [];
      for (const record of event.Records) {
        const n = JSON.parse(record.body).n as number;
        const receive = Number(record.attributes.ApproximateReceiveCount);
        state.seen.push({ n, receive });
        if (fail?.(n, receive)) failures.push({ itemIdentifier: record.messageId });
      }
      return { batchItemFailures: failures };
    };
    return { state, consumer };
  };

  it('runs up to maxConcurrency batches at once, never more, and retries the failed ones', async () => {
    // Every third message fails its first receive.
    const { state, consumer } = counting(20, (n, receive) => n % 3 === 0 && receive === 1);
    const queue = new LocalQueue<{ n: number }>({ name: 'ingestion', batchSize: 2, maxConcurrency: 3, retryDelayMs: 1, consumer });
    await queue.send(Array.from({ length: 20 }, (_, n) => ({ n })));
    await queue.idle();
    expect(state.most).toBe(3);
    expect(queue.mostInFlight).toBe(3);
    const received = (n: number) => state.seen.filter((s) => s.n === n).length;
    for (let n = 0; n < 20; n += 1) expect({ n, received: received(n) }).toEqual({ n, received: n % 3 === 0 ? 2 : 1 });
    expect(queue.deadLetters).toHaveLength(0);
  });

  it('where the stack sets no maxConcurrency, runs LOCAL_MAX_CONCURRENCY batches at once', async () => {
    const { state, consumer } = counting(20);
    const queue = new LocalQueue<{ n: number }>({ name: 'webhook-events', batchSize: 1, consumer });
    await queue.send(Array.from({ length: LOCAL_MAX_CONCURRENCY * 2 }, (_, n) => ({ n })));
    await queue.idle();
    expect(state.most).toBe(LOCAL_MAX_CONCURRENCY);
    expect(state.seen).toHaveLength(LOCAL_MAX_CONCURRENCY * 2);
  });

  it('FIFO: groups run side by side, one message of a group at a time and in order, a failed one holding its group', async () => {
    const inHand = new Set<string>();
    const order: string[] = [];
    let overlapped = false;
    let most = 0;
    const queue = new LocalQueue<{ group: string; n: number }>({
      name: 'sync-jobs',
      batchSize: 1,
      groupOf: (message) => message.group,
      retryDelayMs: 5,
      consumer: async (event) => {
        const message = JSON.parse(event.Records[0]!.body) as { group: string; n: number };
        if (inHand.has(message.group)) overlapped = true;
        inHand.add(message.group);
        most = Math.max(most, inHand.size);
        await new Promise((resolve) => setTimeout(resolve, 10));
        inHand.delete(message.group);
        // The first message of group b fails once: b's second must wait for its retry.
        if (message.group === 'b' && message.n === 0 && event.Records[0]!.attributes.ApproximateReceiveCount === '1') throw new Error('try again');
        order.push(`${message.group}${message.n}`);
      },
    });
    await queue.send(['a', 'b', 'c', 'd', 'e'].flatMap((group) => [0, 1, 2].map((n) => ({ group, n }))));
    await queue.idle();
    expect(overlapped).toBe(false);
    expect(most).toBe(5);
    for (const group of ['a', 'b', 'c', 'd', 'e']) expect(order.filter((o) => o.startsWith(group))).toEqual([0, 1, 2].map((n) => `${group}${n}`));
  });
});
