import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { LocalQueue } from '../../local/local-queue';

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
});
