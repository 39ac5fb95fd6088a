import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { connectors } from '../shared/connections/registry';
import { GatewayApi } from './api';
import { Conversations } from './conversations';
import { DashboardAuth } from './dashboard-auth';
import { GatewayEvents } from './events';
import { type GatewayFunction, type HandlerName, handlerNames } from './gateway-function';
import { Ingestion } from './ingestion';
import { Monitoring } from './monitoring';
import { type GatewaySettings, readGatewaySettings } from './settings';
import { Storage } from './storage';
import { Sync } from './sync';
import { WebhookProcessing } from './webhooks';
import { createStandaloneDeadLetterQueue } from './work-queue';

/**
 * What one function may use. The stack turns each need into the IAM grant AND the environment variable that
 * names the resource, so a function is never told about something it may not touch.
 */
interface FunctionNeeds {
  readonly table?: 'read' | 'readWrite';
  /** `open`: kms:Decrypt; `openAndSeal`: also kms:GenerateDataKey. Both bound to the {account, connector} context. */
  readonly credentials?: 'open' | 'openAndSeal';
  readonly gatewaySecret?: boolean;
  readonly sendsTo?: ReadonlyArray<'webhook' | 'sync' | 'ingestion'>;
  readonly publishesEvents?: boolean;
  readonly startsConversations?: boolean;
  readonly startsPollerFleet?: boolean;
  /** SendTaskSuccess/Failure/Heartbeat on the conversation lifecycle. */
  readonly answersConversationTasks?: boolean;
  readonly callsPlatforms?: boolean;
  readonly knowsBaseUrl?: boolean;
}

const needs: Record<HandlerName, FunctionNeeds> = {
  api: {
    table: 'readWrite',
    credentials: 'openAndSeal',
    gatewaySecret: true,
    sendsTo: ['sync', 'ingestion'],
    startsConversations: true,
    startsPollerFleet: true,
    callsPlatforms: true,
    knowsBaseUrl: true,
  },
  'oauth-callback': { table: 'readWrite', credentials: 'openAndSeal', gatewaySecret: true, callsPlatforms: true, knowsBaseUrl: true },
  'webhook-payments': { table: 'read', credentials: 'open', sendsTo: ['webhook'] },
  'webhook-billing': { table: 'read', credentials: 'open', sendsTo: ['webhook'] },
  'webhook-event': { table: 'readWrite', credentials: 'open', publishesEvents: true, callsPlatforms: true },
  'sync-dispatcher': { table: 'read', sendsTo: ['sync'] },
  // sendsTo sync: a run at its time budget enqueues its continuation, and a job past its retries is given back to the queue.
  'sync-job': { table: 'readWrite', credentials: 'open', sendsTo: ['sync'], publishesEvents: true, callsPlatforms: true },
  ingest: { table: 'readWrite', credentials: 'open', callsPlatforms: true },
  'conversation-task': {
    table: 'readWrite',
    credentials: 'open',
    publishesEvents: true,
    startsPollerFleet: true,
    answersConversationTasks: true,
    callsPlatforms: true,
  },
  // readWrite: the plan keeps the fleet's lease (one fleet at a time) in the table.
  'poller-fleet-plan': { table: 'readWrite' },
  poller: { table: 'readWrite', credentials: 'open', publishesEvents: true, answersConversationTasks: true, callsPlatforms: true },
};

/** The integration gateway: one stack, composed of one construct per concern. */
export class IntegrationGatewayStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const settings = readGatewaySettings(this);
    const logRetention = settings.logRetentionDays;

    const storage = new Storage(this, 'Storage');
    const gatewayEvents = new GatewayEvents(this, 'Events');
    const scheduleDeadLetterQueue = createStandaloneDeadLetterQueue(this, 'ScheduleDeadLetterQueue', 'EventBridge Scheduler targets');
    const webhooks = new WebhookProcessing(this, 'Webhooks', { logRetention });
    const sync = new Sync(this, 'Sync', { logRetention, scheduleDeadLetterQueue });
    const ingestion = new Ingestion(this, 'Ingestion', { logRetention });
    const conversations = new Conversations(this, 'Conversations', { logRetention, scheduleDeadLetterQueue });
    const auth = new DashboardAuth(this, 'DashboardAuth');
    const api = new GatewayApi(this, 'Api', {
      logRetention,
      throttle: { rateLimit: settings.apiThrottleRate, burstLimit: settings.apiThrottleBurst },
      baseUrl: settings.baseUrl,
      userPool: auth.userPool,
      dashboardClient: auth.dashboardClient,
    });
    new Monitoring(this, 'Monitoring', {
      deadLetterQueues: {
        WebhookEvents: webhooks.work.deadLetterQueue,
        SyncJobs: sync.work.deadLetterQueue,
        EngagementEvents: ingestion.work.deadLetterQueue,
        Schedules: scheduleDeadLetterQueue,
      },
      syncJob: sync.job,
      alarmEmail: settings.alarmEmail,
    });

    const functions: Record<HandlerName, GatewayFunction> = {
      api: api.apiHandler,
      'oauth-callback': api.oauthCallback,
      'webhook-payments': api.paymentsWebhook,
      'webhook-billing': api.billingWebhook,
      'webhook-event': webhooks.eventWorker,
      'sync-dispatcher': sync.dispatcher,
      'sync-job': sync.job,
      ingest: ingestion.ingestWorker,
      'conversation-task': conversations.task,
      'poller-fleet-plan': conversations.fleetPlan,
      poller: conversations.poller,
    };
    const targets: WiringTargets = {
      storage,
      bus: gatewayEvents.bus,
      conversations,
      queues: { webhook: webhooks.work.queue, sync: sync.work.queue, ingestion: ingestion.work.queue },
      settings,
      baseUrl: api.baseUrl,
    };
    for (const handler of handlerNames) wire(functions[handler], needs[handler], targets);

    new CfnOutput(this, 'ApiUrl', { value: api.baseUrl, description: 'The gateway address ({base_url} in the spec)' });
    // The addresses to register as each OAuth client's Callback URL (spec Authentication, messaging 1 and data 3).
    for (const connector of connectors.all()) {
      if (!connector.authorization) continue;
      const id = `${connector.name[0]!.toUpperCase()}${connector.name.slice(1)}OAuthCallbackUrl`;
      new CfnOutput(this, id, { value: `${api.baseUrl}${connector.authorization.callbackPath}`, description: `Callback URL of the ${connector.platform}'s OAuth client` });
    }
    new CfnOutput(this, 'UserPoolId', { value: auth.userPool.userPoolId, description: 'Dashboard user pool' });
    new CfnOutput(this, 'UserPoolClientId', { value: auth.dashboardClient.userPoolClientId, description: 'Dashboard app client' });
    new CfnOutput(this, 'EventBusName', { value: gatewayEvents.bus.eventBusName, description: 'Bus of normalised gateway events' });
  }
}

/** What the functions can be given access to. */
interface WiringTargets {
  readonly storage: Storage;
  readonly bus: events.IEventBus;
  readonly conversations: Conversations;
  readonly queues: Record<'webhook' | 'sync' | 'ingestion', sqs.IQueue>;
  readonly settings: GatewaySettings;
  readonly baseUrl: string;
}

const queueVariables = { webhook: 'WEBHOOK_QUEUE_URL', sync: 'SYNC_QUEUE_URL', ingestion: 'INGESTION_QUEUE_URL' } as const;

/** Grants one function what it needs, and sets the variable naming each resource it was granted. */
function wire(fn: GatewayFunction, need: FunctionNeeds, to: WiringTargets): void {
  fn.setVariable('LOG_LEVEL', 'info');
  if (need.table) {
    to.storage.grantTable(fn.executionRole, need.table);
    fn.setVariable('TABLE_NAME', to.storage.table.tableName);
  }
  if (need.credentials) {
    const actions = need.credentials === 'openAndSeal' ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Decrypt'];
    fn.addToRolePolicy(credentialsKeyStatement(to.storage.credentialsKey.keyArn, actions));
    fn.setVariable('CREDENTIALS_KEY_ID', to.storage.credentialsKey.keyArn);
  }
  if (need.gatewaySecret) {
    to.storage.gatewaySecret.grantRead(fn);
    fn.setVariable('GATEWAY_SECRET_ARN', to.storage.gatewaySecret.secretArn);
  }
  for (const queue of need.sendsTo ?? []) {
    to.queues[queue].grantSendMessages(fn);
    fn.setVariable(queueVariables[queue], to.queues[queue].queueUrl);
  }
  if (need.publishesEvents) {
    to.bus.grantPutEventsTo(fn);
    fn.setVariable('EVENT_BUS_NAME', to.bus.eventBusName);
  }
  if (need.startsConversations) {
    to.conversations.lifecycle.grantStartExecution(fn);
    fn.setVariable('CONVERSATION_STATE_MACHINE_ARN', to.conversations.lifecycle.stateMachineArn);
  }
  if (need.startsPollerFleet) {
    to.conversations.fleet.grantStartExecution(fn);
    fn.setVariable('POLLER_FLEET_STATE_MACHINE_ARN', to.conversations.fleet.stateMachineArn);
  }
  if (need.answersConversationTasks) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
        resources: [to.conversations.lifecycleArn],
      }),
    );
  }
  if (need.callsPlatforms) {
    fn.setVariable('PAYMENT_API_BASE_URL', to.settings.paymentApiBaseUrl);
    fn.setVariable('BILLING_BASE_URL_TEMPLATE', to.settings.billingBaseUrlTemplate);
    fn.setVariable('DATA_LOGIN_URL', to.settings.dataLoginUrl);
    fn.setVariable('DATA_SANDBOX_LOGIN_URL', to.settings.dataSandboxLoginUrl);
  }
  if (need.knowsBaseUrl) fn.setVariable('BASE_URL', to.baseUrl);
}

/**
 * A grant on the credentials key that holds only under the vault's encryption context. The vault always passes
 * exactly {account, connector}; ForAllValues alone would also match a call with NO context, so the Null
 * conditions make both keys mandatory.
 */
function credentialsKeyStatement(keyArn: string, actions: string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({
    actions,
    resources: [keyArn],
    conditions: {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector'] },
      Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
    },
  });
}
