import { Duration, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** A message that failed this many receives goes to the dead-letter queue. */
export const maxReceiveCount = 5;

/** SSE, TLS only, and fourteen days (the SQS maximum) to look at and replay what failed. */
export function createDeadLetterQueue(scope: Construct, id: string, fifo = false): sqs.Queue {
  return new sqs.Queue(scope, id, {
    ...(fifo ? { fifo: true } : {}),
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
}

/**
 * A dead-letter queue that no other queue points at (EventBridge Scheduler's target DLQ). cdk-nag only recognises
 * a DLQ through another queue's redrive policy, so it is acknowledged here.
 */
export function createStandaloneDeadLetterQueue(scope: Construct, id: string, usedBy: string): sqs.Queue {
  const queue = createDeadLetterQueue(scope, id);
  Validations.of(queue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: `This queue is itself a dead-letter queue (for ${usedBy}); a DLQ of a DLQ would only move the problem.`,
  });
  return queue;
}

export interface WorkQueueProps {
  /** Timeout of the Lambda function that consumes the queue. */
  readonly consumerTimeout: Duration;
  /** The consumer's batching window, if it has one. */
  readonly maxBatchingWindow?: Duration;
  /**
   * FIFO: messages of one group (the sender's MessageGroupId) are handed out one at a time, in order.
   * @default false
   */
  readonly fifo?: boolean;
}

/** A queue of work for one Lambda consumer, with its dead-letter queue. */
export class WorkQueue extends Construct {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    this.deadLetterQueue = createDeadLetterQueue(this, 'DeadLetterQueue', props.fifo);
    this.queue = new sqs.Queue(this, 'Queue', {
      // Content-based deduplication drops an identical job sent twice within five minutes.
      ...(props.fifo ? { fifo: true, contentBasedDeduplication: true } : {}),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: visibilityTimeoutFor(props.consumerTimeout, props.maxBatchingWindow),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount },
    });
  }
}

/**
 * AWS advises a visibility timeout of at least six times the consumer's timeout (plus its batching window), so
 * a message is not handed out again while Lambda is still retrying a throttled batch.
 */
export function visibilityTimeoutFor(consumerTimeout: Duration, maxBatchingWindow = Duration.seconds(0)): Duration {
  return Duration.seconds(6 * consumerTimeout.toSeconds() + maxBatchingWindow.toSeconds());
}
