import type { ChangeMessageVisibilityRequest, SendMessageBatchRequest, SendMessageBatchResult } from '@aws-sdk/client-sqs';
import type { GatewayEnvironment } from '../config';
import type { Gateway } from '../gateway';
import type { JobQueue, QueueMessage, SyncJob } from './messages';
import { syncJobGroup } from './sync-job-group';
import { messageBody } from './message-body';

/** SQS takes at most 10 messages per SendMessageBatch. */
const SQS_BATCH = 10;
const MAX_ATTEMPTS = 3;

/**
 * The two SQS actions a job queue makes, in the shapes of SQS's API reference: through the SDK's
 * client (test/support/sdk-calls.ts, the tests' oracle) or as signed calls (shared/queues/signed-sqs-calls.ts).
 */
export interface SqsCalls {
  sendMessageBatch(input: SendMessageBatchRequest): Promise<Pick<SendMessageBatchResult, 'Failed'>>;
  changeMessageVisibility(input: ChangeMessageVisibilityRequest): Promise<unknown>;
}

/** A JobQueue over SQS. Entries SQS refuses in a batch are resent; persistent failures throw. */
export class SqsJobQueue<T> implements JobQueue<T> {
  /**
   * @param groupOf the message group: on a FIFO queue, messages of one group are consumed one at a
   * time, in order; on a standard queue, the tenant a fair queue shares consumers between.
   */
  constructor(
    private readonly sqs: SqsCalls,
    private readonly queueUrl: string,
    private readonly groupOf?: (message: T) => string,
  ) {}

  async send(messages: T[]): Promise<void> {
    for (let start = 0; start < messages.length; start += SQS_BATCH) {
      let pending = messages.slice(start, start + SQS_BATCH).map((message, index) => ({
        Id: String(index),
        MessageBody: messageBody(message),
        ...(this.groupOf ? { MessageGroupId: this.groupOf(message) } : {}),
      }));
      for (let attempt = 1; pending.length > 0; attempt += 1) {
        const result = await this.sqs.sendMessageBatch({ QueueUrl: this.queueUrl, Entries: pending });
        // The usual answer: every entry taken.
        if (!result.Failed?.length) break;
        const failed = new Set(result.Failed.map((f) => f.Id));
        pending = pending.filter((entry) => failed.has(entry.Id));
        if (pending.length > 0 && attempt >= MAX_ATTEMPTS) {
          throw new Error(`SQS refused ${pending.length} message(s) after ${attempt} attempts`);
        }
      }
    }
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    await this.sqs.changeMessageVisibility({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds });
  }
}

/** The gateway's three queues over SQS, reached through `sqs` (`provideAwsServices({ queues: signedSqsQueues })`). */
export function jobQueues(env: GatewayEnvironment, sqs: SqsCalls): Gateway['queues'] {
  const queue = <T>(url: string | undefined, name: string, groupOf?: (message: T) => string): JobQueue<T> =>
    url ? new SqsJobQueue<T>(sqs, url, groupOf) : { send: () => Promise.reject(new Error(`${name} queue URL is not set for this function`)) };
  return {
    // FIFO, one group per connection and data object: an object's jobs (a run, its continuations and
    // retries) run one at a time, in order; a connection's objects sync side by side, drawing from
    // the connection's one rate budget in the table.
    syncJobs: queue<SyncJob>(env.SYNC_QUEUE_URL, 'SYNC_QUEUE_URL: the sync', syncJobGroup),
    // Standard queues shared by every account: the account is the message group, which makes them
    // SQS fair queues (docs: "Amazon SQS fair queues"): when one account's backlog takes a
    // disproportionate share of the consumers, SQS hands out the other accounts' messages first,
    // so that backlog delays only its own account. Nothing to deploy, no ordering imposed.
    webhookEvents: queue<QueueMessage<'webhookEvents'>>(env.WEBHOOK_QUEUE_URL, 'WEBHOOK_QUEUE_URL: the webhook events', (message) => message.accountId),
    ingestion: queue<QueueMessage<'ingestion'>>(env.INGESTION_QUEUE_URL, 'INGESTION_QUEUE_URL: the ingestion', (message) => message.accountId),
  };
}
