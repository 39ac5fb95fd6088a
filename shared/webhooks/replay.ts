import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  StartMessageMoveTaskCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/**
 * Operator replay of dead-lettered messages in AWS (`npm run replay-dlq`): an SQS message move
 * task takes every message of a dead-letter queue back to the queue it came from, where the
 * consumer runs again. The webhook worker is idempotent (each event is claimed once, record writes
 * are versioned), so replaying after a fix applies what failed and skips what had gone through.
 * Locally the same is `POST /local/queues/webhookEvents/redrive`.
 */

/** The dead-letter queues the stack makes, by the construct path CloudFormation puts in their names. */
export const DEAD_LETTER_QUEUES = {
  webhookEvents: 'WebhooksWebhookEventsDeadLetterQueue',
  syncJobs: 'SyncSyncJobsDeadLetterQueue',
  ingestion: 'IngestionEngagementEventsDeadLetterQueue',
} as const;
export type ReplayQueue = keyof typeof DEAD_LETTER_QUEUES;

export class ReplayError extends Error {
  override readonly name = 'ReplayError';
}

/**
 * The dead-letter queue's URL: the one given (an ARN or a URL), or the stack's queue found by
 * name (`<stack>-<construct path>DeadLetterQueue<hash>-<suffix>`, CloudFormation's naming).
 */
export async function findDeadLetterQueue(sqs: SQSClient, options: { queue: ReplayQueue; stackName: string; given?: string }): Promise<string> {
  if (options.given) return options.given.startsWith('arn:') ? urlOfArn(sqs, options.given) : options.given;
  const marker = DEAD_LETTER_QUEUES[options.queue];
  const found: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: `${options.stackName}-`, MaxResults: 1000, NextToken: nextToken }));
    for (const url of page.QueueUrls ?? []) if (url.slice(url.lastIndexOf('/') + 1).includes(marker)) found.push(url);
    nextToken = page.NextToken;
  } while (nextToken);
  if (found.length !== 1) {
    throw new ReplayError(
      `${found.length === 0 ? 'No' : 'More than one'} dead-letter queue of stack ${options.stackName} is named like ${marker}; pass it with --dlq <arn or url> (the alarm names it).`,
    );
  }
  return found[0]!;
}

async function urlOfArn(sqs: SQSClient, arn: string): Promise<string> {
  // arn:<partition>:sqs:<region>:<account>:<name>
  const [, , service, , account, name] = arn.split(':');
  if (service !== 'sqs' || !account || !name) throw new ReplayError(`${arn} is not an SQS queue ARN`);
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }));
  if (!QueueUrl) throw new ReplayError(`SQS found no queue ${name}`);
  return QueueUrl;
}

async function arnOf(sqs: SQSClient, url: string): Promise<string> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (!arn) throw new ReplayError(`SQS did not say the ARN of ${url}`);
  return arn;
}

export interface ReplayStarted {
  deadLetterQueueArn: string;
  /** Messages waiting in the dead-letter queue when the move started (approximate, as SQS counts). */
  waiting: number;
  /** The move task's handle, to follow or cancel it; absent when there was nothing to move. */
  taskHandle?: string;
}

/** Starts moving the dead-letter queue's messages back to their source queue. */
export async function replayDeadLetters(sqs: SQSClient, deadLetterQueueUrl: string, options: { maxPerSecond?: number } = {}): Promise<ReplayStarted> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: deadLetterQueueUrl, AttributeNames: ['QueueArn', 'ApproximateNumberOfMessages'] }),
  );
  const deadLetterQueueArn = Attributes?.QueueArn;
  if (!deadLetterQueueArn) throw new ReplayError(`SQS did not say the ARN of ${deadLetterQueueUrl}`);
  const waiting = Number(Attributes?.ApproximateNumberOfMessages ?? 0);
  if (waiting === 0) return { deadLetterQueueArn, waiting };
  // No DestinationArn: SQS sends each message back to the queue it was dead-lettered from.
  const { TaskHandle } = await sqs.send(
    new StartMessageMoveTaskCommand({
      SourceArn: deadLetterQueueArn,
      ...(options.maxPerSecond ? { MaxNumberOfMessagesPerSecond: options.maxPerSecond } : {}),
    }),
  );
  return { deadLetterQueueArn, waiting, ...(TaskHandle ? { taskHandle: TaskHandle } : {}) };
}

export interface MoveTaskStatus {
  status: string;
  moved: number;
  toMove?: number;
  startedAt?: string;
  failureReason?: string;
}

/** The latest move tasks from the dead-letter queue, newest first. */
export async function replayStatus(sqs: SQSClient, deadLetterQueueUrl: string): Promise<MoveTaskStatus[]> {
  const arn = await arnOf(sqs, deadLetterQueueUrl);
  const { Results } = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: arn, MaxResults: 10 }));
  return (Results ?? []).map((task) => ({
    status: task.Status ?? 'UNKNOWN',
    moved: task.ApproximateNumberOfMessagesMoved ?? 0,
    ...(task.ApproximateNumberOfMessagesToMove === undefined ? {} : { toMove: task.ApproximateNumberOfMessagesToMove }),
    ...(task.StartedTimestamp === undefined ? {} : { startedAt: new Date(task.StartedTimestamp).toISOString() }),
    ...(task.FailureReason ? { failureReason: task.FailureReason } : {}),
  }));
}
