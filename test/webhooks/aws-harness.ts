import { randomBytes } from 'node:crypto';
import { DecryptCommand, GenerateDataKeyCommand, InvalidCiphertextException, KMSClient } from '@aws-sdk/client-kms';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { GatewayEnvironment } from '../../shared/config';
import type { Gateway } from '../../shared/gateway';
import { ORIGIN_HEADER } from '../../shared/origin/origin-check';
import { useOriginSecret } from '../../shared/origin/origin-secret';
import { SqsJobQueue } from '../../shared/queues/sqs-queue';
import type { IngestionMessage, SyncJob, WebhookEventMessage } from '../../shared/queues/messages';
import { Store } from '../../shared/store/store';
import { KmsDataKeySource } from '../../shared/vault/kms-data-key-source';
import { Vault } from '../../shared/vault/vault';
import { localDynamoClient, startLocalDynamo, watchCommands, type LocalDynamo } from '../../local/local-dynamo';

/**
 * A gateway wired as it is in Lambda, to count the AWS calls a receiver makes: DynamoDB is a real
 * DynamoDB-API server (dynalite) with every command counted; KMS and SQS, which have no local
 * server, are aws-sdk-client-mock stand-ins that behave like them (KMS refuses a data key under
 * another context) and count their calls.
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
  const client = localDynamoClient(dynamo.endpoint);
  const watched = watchCommands(client);
  const keyId = 'arn:aws:kms:us-east-1:111122223333:key/harness';

  const kms = mockClient(KMSClient);
  const wrapped = new Map<string, { plaintext: Buffer; context: string }>();
  kms.on(GenerateDataKeyCommand).callsFake((input: { EncryptionContext?: Record<string, string> }) => {
    const plaintext = randomBytes(32);
    const handle = randomBytes(24);
    wrapped.set(handle.toString('hex'), { plaintext, context: JSON.stringify(input.EncryptionContext) });
    return { KeyId: keyId, Plaintext: Buffer.from(plaintext), CiphertextBlob: handle };
  });
  kms.on(DecryptCommand).callsFake((input: { CiphertextBlob?: Uint8Array; EncryptionContext?: Record<string, string> }) => {
    const entry = wrapped.get(Buffer.from(input.CiphertextBlob ?? []).toString('hex'));
    if (!entry || entry.context !== JSON.stringify(input.EncryptionContext)) throw new InvalidCiphertextException({ message: 'InvalidCiphertextException', $metadata: {} });
    return { KeyId: keyId, Plaintext: Buffer.from(entry.plaintext) };
  });

  // Secrets Manager has no local server: the origin header's value, generated for this run.
  const originSecretArn = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:origin-verify-AbCdEf';
  originValue = randomBytes(32).toString('base64url');
  const secrets = mockClient(SecretsManagerClient);
  secrets.on(GetSecretValueCommand, { SecretId: originSecretArn }).resolves({ ARN: originSecretArn, Name: 'origin-verify', SecretString: originValue });
  useOriginSecret(undefined);

  // SQS has no local server: the client's `send` answers SendMessageBatch as SQS does (every entry
  // taken) and counts the calls. A stub this small (rather than a mocking library) keeps the
  // receiver's throughput figure about the receiver.
  let sqsCalls = 0;
  let messageIds = 0;
  let sentBodies: string[] = [];
  const sqsClient = new SQSClient({ region: 'us-east-1' });
  sqsClient.send = (async (command: SendMessageBatchCommand) => {
    sqsCalls += 1;
    for (const entry of command.input.Entries ?? []) sentBodies.push(entry.MessageBody ?? '');
    // Bounded: the webhook benchmark sends thousands through it.
    if (sentBodies.length > 100) sentBodies.splice(0, sentBodies.length - 100);
    return { Successful: (command.input.Entries ?? []).map((entry) => ({ Id: entry.Id, MessageId: `harness-${(messageIds += 1)}`, MD5OfMessageBody: '' })), Failed: [] };
  }) as unknown as SQSClient['send'];
  const queueUrl = 'https://sqs.us-east-1.amazonaws.com/111122223333/webhook-events';

  const gateway: Gateway = {
    env: GatewayEnvironment.parse({ GATEWAY_MODE: 'aws', TABLE_NAME: dynamo.tableName, ORIGIN_SECRET_ARN: originSecretArn, ...env }),
    store: new Store({ client, tableName: dynamo.tableName }),
    vault: new Vault({ keySource: new KmsDataKeySource({ keyId, client: new KMSClient({ region: 'us-east-1' }) }), cacheTtlSeconds: 300 }),
    queues: {
      webhookEvents: new SqsJobQueue<WebhookEventMessage>(sqsClient, queueUrl),
      syncJobs: new SqsJobQueue<SyncJob>(sqsClient, `${queueUrl}-sync`),
      ingestion: new SqsJobQueue<IngestionMessage>(sqsClient, `${queueUrl}-ingestion`),
    },
    events: { publish: async () => {} },
    stateMachines: unused('Step Functions'),
    pollerNotices: unused('the poller notice queue'),
    now: () => Date.now(),
  };
  const counted = () => ({
    dynamodb: ['GetItemCommand', 'PutItemCommand', 'UpdateItemCommand', 'QueryCommand', 'DeleteItemCommand', 'BatchGetItemCommand'].reduce((sum, name) => sum + watched.sent(name), 0),
    kms: kms.commandCalls(DecryptCommand).length + kms.commandCalls(GenerateDataKeyCommand).length,
    sqs: sqsCalls,
    secretsManager: secrets.commandCalls(GetSecretValueCommand).length,
  });
  return {
    gateway,
    dynamo,
    calls: counted,
    sentBodies: () => [...sentBodies],
    reset() {
      watched.reset();
      kms.resetHistory();
      secrets.resetHistory();
      sqsCalls = 0;
      sentBodies = [];
    },
    coldStart: () => useOriginSecret(undefined),
    async stop() {
      kms.restore();
      secrets.restore();
      sqsClient.destroy();
      client.destroy();
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
