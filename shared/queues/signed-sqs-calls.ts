import { SQS, signedCall } from '../aws/signed-call';
import type { GatewayEnvironment } from '../config';
import type { Gateway } from '../gateway';
import { jobQueues, type SqsCalls } from './sqs-queue';

/** A job queue's SQS actions as signed calls, without the SDK's client (shared/aws/signed-call.ts says why). */
export const signedSqsCalls: SqsCalls = {
  sendMessageBatch: (input) => signedCall(SQS, 'SendMessageBatch', input),
  changeMessageVisibility: (input) => signedCall(SQS, 'ChangeMessageVisibility', input),
};

/** The gateway's three queues as signed calls: `provideAwsServices({ queues: signedSqsQueues })`. */
export function signedSqsQueues(env: GatewayEnvironment): Gateway['queues'] {
  return jobQueues(env, signedSqsCalls);
}
