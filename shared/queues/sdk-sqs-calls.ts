import { ChangeMessageVisibilityCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { GatewayEnvironment } from '../config';
import type { Gateway } from '../gateway';
import { tracedAwsClient } from '../tracing/segments';
import { jobQueues, type SqsCalls } from './sqs-queue';

/** A job queue's SQS actions through an SDK client (its retries, and X-Ray where the function traces). */
export function sdkSqsCalls(client: SQSClient): SqsCalls {
  return {
    sendMessageBatch: (input) => client.send(new SendMessageBatchCommand(input)),
    changeMessageVisibility: (input) => client.send(new ChangeMessageVisibilityCommand(input)),
  };
}

/** The gateway's three queues through the SDK, for `provideAwsServices({ queues: sqsQueues })`. */
export function sqsQueues(env: GatewayEnvironment): Gateway['queues'] {
  return jobQueues(env, sdkSqsCalls(tracedAwsClient(new SQSClient({}))));
}
