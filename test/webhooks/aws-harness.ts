import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { GatewayEnvironment } from '../../shared/config';
import type { Gateway } from '../../shared/gateway';
import { ORIGIN_HEADER } from '../../shared/origin/origin-check';
import { useOriginSecret } from '../../shared/origin/origin-secret';
import { SqsJobQueue, type SqsCalls } from '../../shared/queues/sqs-queue';
import type { IngestionMessage, SyncJob, WebhookEventMessage } from '../../shared/queues/messages';
import { signedTableClient } from '../../shared/store/signed-table-client';

import type { TableClient } from '../../shared/store/table-client';
import { signedKmsVault } from '../../shared/vault/signed-kms-calls';
import { startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';
import { startAwsStandIn, useStandInEnvironment } from '../support/aws-stand-in';

/**
 * A gateway wired as the webhook receivers are in Lambda (functions/webhook-receiver.ts), to count
 * the AWS calls a receiver makes: the table, the vault and the origin secret are the receivers' own
 * signed calls, to dynalite (DynamoDB's API) and to the loopback stand-in for KMS and Secrets Manager
 * (test/support/aws-stand-in.ts). The enqueue stops at the SQS call itself (counted, every entry
 * taken), so the webhook benchmark's throughput is the receiver's work, not a loopback round trip.
 */
export interface AwsHarness {
  gateway: Gateway;
  dynamo: LocalDynamo;
  calls(): { dynamodb: number; kms: number; sqs: number; secretsManager: number };
  /** The message bodies sent to SQS since the last reset, in order (the last 100). */
  sentBodies(): string[];
  reset(): void;
  /** Forgets the origin secret the functions read, as a cold container has not read it yet. */
  coldStart(): void;
  stop(): Promise<void>;
}

/** The origin header's value of the running harness: the distribution's, which webhookRequest adds. */
let originValue = '';

export async function startAwsHarness(env: Record<string, string> = {}): Promise<AwsHarness> {
  const dynamo = await startLocalDynamo({ tableName: 'webhook-harness' });
  const aws = await startAwsStandIn();
  const restoreEnvironment = useStandInEnvironment(aws, { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint });

  let tableCalls = 0;
  const signedTable = signedTableClient();
  const table: TableClient = {
    send: (command) => {
      tableCalls += 1;
      return signedTable.send(command);
    },
  };

  // The origin header's value, generated for this run, in the stand-in's Secrets Manager.
  const originSecretArn = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:origin-verify-AbCdEf';
  originValue = randomBytes(32).toString('base64url');
  aws.putSecret(originSecretArn, originValue);
  useOriginSecret(undefined);

  // SendMessageBatch answered as SQS does (every entry taken), counted. A stub this small keeps the
  // receiver's throughput figure about the receiver; test/aws/signed-call.test.ts holds the signed
  // SQS call itself to the SDK's.
  let sqsCalls = 0;
  let messageIds = 0;
  let sentBodies: string[] = [];
  const sqs: SqsCalls = {
    sendMessageBatch: async (input) => {
      sqsCalls += 1;
      for (const entry of input.Entries ?? []) sentBodies.push(entry.MessageBody ?? '');
      // Bounded: the webhook benchmark sends thousands through it.
      if (sentBodies.length > 100) sentBodies.splice(0, sentBodies.length - 100);
      return { Successful: (input.Entries ?? []).map((entry) => ({ Id: entry.Id, MessageId: `harness-${(messageIds += 1)}`, MD5OfMessageBody: '' })), Failed: [] };
    },
    changeMessageVisibility: async () => ({}),
  };
  const queueUrl = 'https://sqs.us-east-1.amazonaws.com/111122223333/webhook-events';

  const environment = GatewayEnvironment.parse({ GATEWAY_MODE: 'aws', TABLE_NAME: dynamo.tableName, ORIGIN_SECRET_ARN: originSecretArn, CREDENTIALS_KEY_ID: aws.keyId, ...env });
  const gateway: Gateway = {
    env: environment,
    table: { client: table, tableName: dynamo.tableName },
    vault: signedKmsVault(environment),
    queues: {
      webhookEvents: new SqsJobQueue<WebhookEventMessage>(sqs, queueUrl),
      syncJobs: new SqsJobQueue<SyncJob>(sqs, `${queueUrl}-sync`),
      ingestion: new SqsJobQueue<IngestionMessage>(sqs, `${queueUrl}-ingestion`),
    },
    events: { publish: async () => {} },
    stateMachines: unused('Step Functions'),
    pollerNotices: unused('the poller notice queue'),
    now: () => Date.now(),
  };
  const counted = () => ({
    dynamodb: tableCalls,
    kms: aws.calls('TrentService.Decrypt') + aws.calls('TrentService.GenerateDataKey'),
    sqs: sqsCalls,
    secretsManager: aws.calls('secretsmanager.GetSecretValue'),
  });
  return {
    gateway,
    dynamo,
    calls: counted,
    sentBodies: () => [...sentBodies],
    reset() {
      tableCalls = 0;
      aws.reset();
      sqsCalls = 0;
      sentBodies = [];
    },
    coldStart: () => useOriginSecret(undefined),
    async stop() {
      restoreEnvironment();
      await aws.stop();
      await dynamo.stop();
    },
  };
}

/** The payload-2.0 event API Gateway hands a webhook receiver, with the origin header the distribution adds. */
export function webhookRequest(path: '/webhooks/payments' | '/webhooks/billing', accountId: string, body: string, headers: Record<string, string>): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: `account=${accountId}`,
    queryStringParameters: { account: accountId },
    headers: { 'content-type': 'application/json; charset=utf-8', [ORIGIN_HEADER]: originValue, ...headers },
    requestContext: { http: { method: 'POST', path }, requestId: randomBytes(6).toString('hex') },
    body,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}

/** A service the webhook path never touches: any use fails the test. */
function unused<T extends object>(name: string): T {
  return new Proxy({} as T, { get: () => () => Promise.reject(new Error(`${name} is not used by the webhook path`)) });
}
