import { ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { SqsJobQueue } from '../../shared/queues/sqs-queue';
import { sdkSqsCalls } from '../support/sdk-calls';
import type { SyncJob } from '../../shared/queues/messages';
import { SYNC_RETRY, retryAfterFailure, retryDelayMs, retryJobShouldRun, retryTimeline } from '../../shared/sync/sync-retry';

const minutes = (ms: number) => ms / 60_000;
const HOUR = 60 * 60_000;

/** The retry decisions, without servers: delays, the horizon, and when a retry job is due. */
describe('sync retries (decisions)', () => {
  it('waits 5, 10, 20, 40, 80, 160 minutes, then every 3 hours', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => minutes(retryDelayMs(n)))).toEqual([5, 10, 20, 40, 80, 160, 180, 180, 180]);
  });

  it('tries 8 more times over about 11 hours after the first failure, then dead-letters, within the 12-hour horizon', () => {
    const { triesAtMs, deadLetteredAtMs } = retryTimeline();
    expect(triesAtMs.map(minutes)).toEqual([5, 15, 35, 75, 155, 315, 495, 675]);
    expect(deadLetteredAtMs).toBeGreaterThan(11 * HOUR);
    expect(deadLetteredAtMs).toBeLessThanOrEqual(SYNC_RETRY.horizonMs);
    expect(SYNC_RETRY.horizonMs).toBe(12 * HOUR);
  });

  it('counts failures in a row from the first one, and a dead-lettered series starts over', () => {
    const first = retryAfterFailure(undefined, 0);
    expect(first).toEqual({ failures: 1, firstFailedAt: new Date(0).toISOString(), nextAttemptAt: new Date(5 * 60_000).toISOString() });
    const second = retryAfterFailure(first, 5 * 60_000);
    expect(second).toMatchObject({ failures: 2, firstFailedAt: first.firstFailedAt, nextAttemptAt: new Date(15 * 60_000).toISOString() });

    const late = retryAfterFailure({ failures: 8, firstFailedAt: new Date(0).toISOString() }, 11.5 * HOUR);
    expect(late).toEqual({ failures: 9, firstFailedAt: new Date(0).toISOString(), deadLetteredAt: new Date(11.5 * HOUR).toISOString() });
    const again = retryAfterFailure(late, 30 * HOUR);
    expect(again).toMatchObject({ failures: 1, firstFailedAt: new Date(30 * HOUR).toISOString() });
    expect(again.deadLetteredAt).toBeUndefined();
  });

  it('a retry job runs only when its try is due, or when it is replayed from the dead-letter queue', () => {
    const state = retryAfterFailure(undefined, 0);
    expect(retryJobShouldRun({ retry: state }, 4 * 60_000)).toBe(false);
    expect(retryJobShouldRun({ retry: state }, 5 * 60_000)).toBe(true);
    expect(retryJobShouldRun({ retry: undefined }, 5 * 60_000)).toBe(false);
    expect(retryJobShouldRun(undefined, 5 * 60_000)).toBe(false);
    expect(retryJobShouldRun({ retry: { failures: 9, firstFailedAt: state.firstFailedAt, deadLetteredAt: state.firstFailedAt } }, HOUR)).toBe(true);
  });
});

describe('sync retries in AWS', () => {
  it('a job past its retries is given back to the FIFO queue at once with ChangeMessageVisibility (FIFO queues cannot delay one message, but allow this)', async () => {
    const sqs = mockClient(SQSClient);
    try {
      sqs.on(ChangeMessageVisibilityCommand).resolves({});
      const url = 'https://sqs.us-east-1.amazonaws.com/111122223333/gateway-SyncJobs.fifo';
      const queue = new SqsJobQueue<SyncJob>(sdkSqsCalls(new SQSClient({ region: 'us-east-1' })), url, (job) => `${job.accountId}#${job.connector}`);
      await queue.changeVisibility('receipt-handle-1', 0);
      expect(sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input)).toEqual([{ QueueUrl: url, ReceiptHandle: 'receipt-handle-1', VisibilityTimeout: 0 }]);
    } finally {
      sqs.restore();
    }
  });
});
