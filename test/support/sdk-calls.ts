import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SqsCalls } from '../../shared/queues/sqs-queue';
import type { KmsCalls } from '../../shared/vault/kms-data-key-source';

/**
 * The vault's KMS actions and the job queues' SQS actions through the SDK's clients: the oracle the
 * signed calls are held to (test/aws/signed-call.test.ts). Lambda functions make them as signed
 * calls (shared/vault/signed-kms-calls.ts, shared/queues/signed-sqs-calls.ts).
 */
export function sdkKmsCalls(client: KMSClient): KmsCalls {
  return {
    generateDataKey: (input) => client.send(new GenerateDataKeyCommand(input)),
    decrypt: (input) => client.send(new DecryptCommand(input)),
  };
}

export function sdkSqsCalls(client: SQSClient): SqsCalls {
  return {
    sendMessageBatch: (input) => client.send(new SendMessageBatchCommand(input)),
    changeMessageVisibility: (input) => client.send(new ChangeMessageVisibilityCommand(input)),
  };
}
