import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { JobQueue } from '../shared/queues/messages';
import { messageBody } from '../shared/queues/message-body';
import { log } from '../shared/log/logger';

export type QueueConsumer = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

interface Entry {
  messageId: string;
  body: string;
  receiveCount: number;
  visibleAt: number;
  sentAt: number;
}

export interface LocalQueueOptions {
  name: string;
  /** Largest batch handed to the consumer (SQS event source batchSize: 50 for ingestion). */
  batchSize: number;
  /** After this many failed receives a message moves to the dead-letter list (SQS maxReceiveCount). */
  maxReceiveCount?: number;
  /** Delay before a failed message is visible again, multiplied by its receive count. */
  retryDelayMs?: number;
  consumer?: QueueConsumer;
  now?: () => number;
}

/**
 * An in-process stand-in for an SQS queue with a Lambda event source: it hands the consumer
 * SQS-shaped batches, honours partial batch failures, retries with a delay, and dead-letters a
 * message after maxReceiveCount receives, as the deployed queues do.
 */
export class LocalQueue<T> implements JobQueue<T> {
  readonly deadLetters: Entry[] = [];
  private readonly entries: Entry[] = [];
  private draining: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private consumer: QueueConsumer | undefined;
  private readonly now: () => number;
  /** Visibility the consumer set on messages of the batch in hand (ChangeMessageVisibility), by message id. */
  private readonly visibleAtSet = new Map<string, number>();

  constructor(private readonly options: LocalQueueOptions) {
    this.consumer = options.consumer;
    this.now = options.now ?? Date.now;
  }

  setConsumer(consumer: QueueConsumer): void {
    this.consumer = consumer;
    this.schedule(0);
  }

  async send(messages: T[]): Promise<void> {
    const now = this.now();
    for (const message of messages) {
      this.entries.push({ messageId: randomUUID(), body: messageBody(message), receiveCount: 0, visibleAt: now, sentAt: now });
    }
    this.schedule(0);
  }

  /** ChangeMessageVisibility: the receipt handle is the message id here. Applies if the message is given back. */
  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    this.visibleAtSet.set(receiptHandle, this.now() + seconds * 1000);
  }

  /** Messages waiting (visible or not), not counting dead letters. */
  get depth(): number {
    return this.entries.length;
  }

  /** Resolves when every message has been consumed or dead-lettered (tests and benchmarks wait on it). */
  async idle(): Promise<void> {
    while (this.entries.length > 0 || this.draining) {
      if (this.draining) await this.draining;
      else if (this.entries.length > 0) {
        const wait = Math.max(0, Math.min(...this.entries.map((e) => e.visibleAt)) - this.now());
        await new Promise((resolve) => setTimeout(resolve, wait));
        await this.drain();
      }
    }
  }

  /** Replay: moves dead letters back onto the queue with a fresh receive count. */
  redrive(): number {
    const moved = this.deadLetters.splice(0, this.deadLetters.length);
    const now = this.now();
    for (const entry of moved) this.entries.push({ ...entry, receiveCount: 0, visibleAt: now });
    this.schedule(0);
    return moved.length;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.consumer = undefined;
  }

  private schedule(delayMs: number): void {
    if (!this.consumer || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.drain();
    }, delayMs);
  }

  private drain(): Promise<void> {
    this.draining ??= this.drainOnce().finally(() => {
      this.draining = undefined;
      if (this.entries.length > 0) {
        const wait = Math.max(0, Math.min(...this.entries.map((e) => e.visibleAt)) - this.now());
        this.schedule(wait);
      }
    });
    return this.draining;
  }

  private async drainOnce(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    for (;;) {
      const now = this.now();
      const batch = this.entries.filter((e) => e.visibleAt <= now).slice(0, this.options.batchSize);
      if (batch.length === 0) return;
      for (const entry of batch) entry.receiveCount += 1;
      let failedIds: Set<string>;
      try {
        const response = await consumer({ Records: batch.map((entry) => this.record(entry)) });
        failedIds = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (error) {
        // A consumer that throws fails the whole batch, as Lambda does.
        log.warn('local queue consumer threw; the whole batch will be retried', { queue: this.options.name, error });
        failedIds = new Set(batch.map((e) => e.messageId));
      }
      for (const entry of batch) {
        const index = this.entries.indexOf(entry);
        if (!failedIds.has(entry.messageId)) {
          this.entries.splice(index, 1);
        } else if (entry.receiveCount >= (this.options.maxReceiveCount ?? 5)) {
          this.entries.splice(index, 1);
          this.deadLetters.push(entry);
          log.warn('message dead-lettered', { queue: this.options.name, messageId: entry.messageId });
        } else {
          entry.visibleAt = this.visibleAtSet.get(entry.messageId) ?? this.now() + (this.options.retryDelayMs ?? 1000) * entry.receiveCount;
        }
        this.visibleAtSet.delete(entry.messageId);
      }
    }
  }

  private record(entry: Entry): SQSRecord {
    return {
      messageId: entry.messageId,
      receiptHandle: entry.messageId,
      body: entry.body,
      attributes: {
        ApproximateReceiveCount: String(entry.receiveCount),
        SentTimestamp: String(entry.sentAt),
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: String(this.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:local:000000000000:${this.options.name}`,
      awsRegion: 'local',
    };
  }
}
