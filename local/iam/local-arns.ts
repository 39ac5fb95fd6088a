/**
 * The ARNs of the local stand-ins, shaped like the deployed ones, so the role policies taken from
 * the synthesized template (local/iam/role-policies.json) match the resources the handlers touch
 * locally exactly as they match in AWS. One account and region for everything local.
 */
export const LOCAL_ACCOUNT = '000000000000';
export const LOCAL_REGION = 'us-east-1';

const arn = (service: string, resource: string, region = LOCAL_REGION) => `arn:aws:${service}:${region}:${LOCAL_ACCOUNT}:${resource}`;

export const LOCAL_TABLE_NAME = 'integration-gateway';

/** The local queues by their names (local/local-queue.ts, local-poller-notices.ts). */
export const localQueueArn = (name: string): string => arn('sqs', name);

export const localArns = {
  table: arn('dynamodb', `table/${LOCAL_TABLE_NAME}`),
  /** The vault's key (the local key file stands in for it). */
  credentialsKey: arn('kms', 'key/00000000-0000-4000-8000-00000000c0de'),
  /** Encrypts the table; DynamoDB uses it on the caller's behalf. */
  dataKey: arn('kms', 'key/00000000-0000-4000-8000-00000000da7a'),
  queues: {
    syncJobs: localQueueArn('sync-jobs.fifo'),
    webhookEvents: localQueueArn('webhook-events'),
    ingestion: localQueueArn('ingestion'),
    pollerNotices: localQueueArn('poller-notices'),
  },
  bus: arn('events', 'event-bus/integration-gateway'),
  lifecycle: arn('states', 'stateMachine:IntegrationGateway-conversation'),
  /** The value the distribution sends in its origin header (local/local-origin-secret.ts). */
  originSecret: arn('secretsmanager', 'secret:IntegrationGateway-origin-verify-AbCdEf'),
  fleet: arn('states', 'stateMachine:IntegrationGateway-poller-fleet'),
} as const;

/** A function's role, named after its handler. */
export const localRoleArn = (handler: string): string => `arn:aws:iam::${LOCAL_ACCOUNT}:role/${handler}`;

/** Construct paths in the stack (below the stack's name) and the local ARN standing in for each. */
export const LOCAL_RESOURCES: Readonly<Record<string, string>> = {
  'Storage/Table/Resource': localArns.table,
  'Storage/CredentialsKey/Resource': localArns.credentialsKey,
  'Storage/DataKey/Resource': localArns.dataKey,
  'Sync/SyncJobs/Queue/Resource': localArns.queues.syncJobs,
  'Webhooks/WebhookEvents/Queue/Resource': localArns.queues.webhookEvents,
  'Ingestion/EngagementEvents/Queue/Resource': localArns.queues.ingestion,
  'Conversations/PollerNotices/Resource': localArns.queues.pollerNotices,
  'Events/Bus/Resource': localArns.bus,
  'Conversations/Lifecycle/Resource': localArns.lifecycle,
  'Conversations/Fleet/Resource': localArns.fleet,
  'OriginVerification/Secret/Resource': localArns.originSecret,
};
