import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { JobQueue } from '../shared/queues/messages';
import { messageBody } from '../shared/queues/message-body';
import { log } from '../shared/log/logger';

export type QueueConsumer = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

interface Entry {
  messageId: string;
  body: string;
  /** FIFO: the message group; a group's messages are handed out one at a time, in order. */
  group?: string;
  receiveCount: number;
  visibleAt: number;
  sentAt: number;
  /** In a batch the consumer holds now. */
  inFlight?: boolean;
}

/**
 * Batches the local queue hands out at once where the stack sets no `maxConcurrency`: a stand-in
 * for Lambda's scaling (an SQS event source starts with five batches at once and adds up to 300
 * a minute while messages wait; on a FIFO queue, at most one per active message group). Ten lets
 * every data object of a connection sync side by side in one process, as they do deployed.
 */
export const LOCAL_MAX_CONCURRENCY = 10;

export interface LocalQueueOptions<T> {
  name: string;
  /** Largest batch handed to the consumer (SQS event source batchSize: 50 for ingestion). */
  batchSize: number;
  /** Most batches in the consumer at once (the event source's maxConcurrency); default LOCAL_MAX_CONCURRENCY. */
  maxConcurrency?: number;
  /** FIFO: a message's group (MessageGroupId). A group's messages go one at a time, in order; a failed one holds its group until it is retried or dead-lettered. */
  groupOf?: (message: T) => string;
  /** After this many failed receives a message moves to the dead-letter list (SQS maxReceiveCount). */
  maxReceiveCount?: number;
  /** Delay before a failed message is visible again, multiplied by its receive count. */
  retryDelayMs?: number;
  consumer?: QueueConsumer;
  now?: () => number;
}

/**
 * An in-process stand-in for an SQS queue with a Lambda event source: it hands the consumer
 * SQS-shaped batches, up to `maxConcurrency` of them at once, honours partial batch failures,
 * retries with a delay, and dead-letters a message after maxReceiveCount receives, as the deployed
 * queues do.
 */
export class LocalQueue<T> implements JobQueue<T> {
  readonly deadLetters: Entry[] = [];
  private readonly entries: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private consumer: QueueConsumer | undefined;
  private readonly now: () => number;
  /** Visibility the consumer set on messages of a batch in hand (ChangeMessageVisibility), by message id. */
  private readonly visibleAtSet = new Map<string, number>();
  private readonly batches = new Set<Promise<void>>();
  /** The most batches that were in the consumer at once (tests and benchmarks read it). */
  mostInFlight = 0;

  constructor(private readonly options: LocalQueueOptions<T>) {
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
      const group = this.options.groupOf?.(message);
      this.entries.push({ messageId: randomUUID(), body: messageBody(message), ...(group === undefined ? {} : { group }), receiveCount: 0, visibleAt: now, sentAt: now });
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

  /** Batches in the consumer now. */
  get inFlight(): number {
    return this.batches.size;
  }

  /** Resolves when every message has been consumed or dead-lettered (tests and benchmarks wait on it). */
  async idle(): Promise<void> {
    while (this.entries.length > 0 || this.batches.size > 0) {
      if (this.batches.size > 0) await Promise.race(this.batches);
      else {
        await new Promise((resolve) => setTimeout(resolve, this.untilVisible() ?? 0));
        this.pump();
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

  /** How long until a message that may be handed out next is visible; undefined when none is waiting. */
  private untilVisible(): number | undefined {
    const next = this.nextInLine();
    return next.length === 0 ? undefined : Math.max(0, Math.min(...next.map((e) => e.visibleAt)) - this.now());
  }

  /** Messages not in hand that may go next: on a FIFO queue, only each group's oldest, and only while no message of the group is in hand. */
  private nextInLine(): Entry[] {
    const seen = new Set<string>();
    const next: Entry[] = [];
    for (const entry of this.entries) {
      const first = entry.group === undefined || !seen.has(entry.group);
      if (entry.group !== undefined) seen.add(entry.group);
      if (first && !entry.inFlight) next.push(entry);
    }
    return next;
  }

  private schedule(delayMs: number): void {
    if (!this.consumer || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, delayMs);
  }

  /** Hands out batches while the consumer has room for more and messages are visible. */
  private pump(): void {
    const most = this.options.maxConcurrency ?? LOCAL_MAX_CONCURRENCY;
    while (this.consumer && this.batches.size < most) {
      const batch = this.nextBatch();
      if (batch.length === 0) break;
      const running = this.consume(this.consumer, batch).finally(() => {
        this.batches.delete(running);
        this.pump();
      });
      this.batches.add(running);
      this.mostInFlight = Math.max(this.mostInFlight, this.batches.size);
    }
    // Room left and nothing visible: wake when the next message is (a batch that ends pumps again).
    const wait = this.batches.size < most ? this.untilVisible() : undefined;
    if (wait !== undefined) this.schedule(Math.max(1, wait));
  }

  /** The visible messages next in line, oldest first, at most a batch. */
  private nextBatch(): Entry[] {
    const now = this.now();
    return this.nextInLine()
      .filter((e) => e.visibleAt <= now)
      .slice(0, this.options.batchSize);
  }

  private async consume(consumer: QueueConsumer, batch: Entry[]): Promise<void> {
    for (const entry of batch) {
      entry.receiveCount += 1;
      entry.inFlight = true;
    }
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
      entry.inFlight = false;
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
