import { Aws, CfnOutput, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { connectors } from '../shared/connections/registry';
import { GatewayApi } from './api';
import { Conversations } from './conversations';
import { DashboardAuth, operatorGroupName } from './dashboard-auth';
import { DashboardHosting } from './dashboard-hosting';
import { EdgeFirewall } from './edge-firewall';
import { GatewayEvents } from './events';
import { type GatewayFunction, type HandlerName, handlerNames } from './gateway-function';
import { Ingestion } from './ingestion';
import { Monitoring } from './monitoring';
import { OriginVerification } from './origin-verification';
import { type GatewaySettings, readGatewaySettings } from './settings';
import { Storage, type TableAction } from './storage';
import { Sync } from './sync';
import { WebhookProcessing } from './webhooks';
import { createStandaloneDeadLetterQueue } from './work-queue';

/**
 * What one function may use. The stack turns each need into the IAM grant AND the environment variable that
 * names the resource, so a function is never told about something it may not touch. Each grant is the actions
 * the handler's code calls, as the local runtime records them over the tests and benchmarks (docs/permissions.md).
 */
interface FunctionNeeds {
  /** Actions on the table itself. */
  readonly table?: readonly TableAction[];
  /** Query on gsi1 (accounts listed, records by email or customer, scheduled connections, due retries). */
  readonly queriesIndex?: boolean;
  /** A webhook receiver counts the deliveries it refuses (shared/history): UpdateItem on those counters only. */
  readonly countsRefusals?: boolean;
  /** `open`: kms:Decrypt; `openAndSeal`: also kms:GenerateDataKey. Both bound to the {account, connector} context. */
  readonly credentials?: 'open' | 'openAndSeal';
  /**
   * The webhook secret, sealed apart under {account, connector, purpose: webhook}: `open` for the receivers
   * (which hold nothing else), `seal` for the API, which stores it when a connection is saved.
   */
  readonly webhookSecret?: 'open' | 'seal';
  readonly sendsTo?: ReadonlyArray<'webhook' | 'sync' | 'ingestion'>;
  readonly publishesEvents?: boolean;
  readonly startsConversations?: boolean;
  readonly startsPollerFleet?: boolean;
  /** SendTaskSuccess on the conversation lifecycle (no code sends SendTaskFailure: a failed step fails the execution itself). */
  readonly answersConversationTasks?: boolean;
  readonly callsPlatforms?: boolean;
  readonly knowsBaseUrl?: boolean;
  /** The poller notice queue: `send` tells the running fleet about a conversation, `sendAndReceive` also takes notices. */
  readonly pollerNotices?: 'send' | 'sendAndReceive';
  /** Where the browser goes back to after an OAuth sign-in on a platform. */
  readonly knowsDashboardUrl?: boolean;
}


export const functionNeeds: Record<HandlerName, FunctionNeeds> = {
  // No BatchGetItem: only a poller taking over conversations and a sync comparing a page read items in batches.
  api: {
    table: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
    queriesIndex: true,
    credentials: 'openAndSeal',
    webhookSecret: 'seal',
    sendsTo: ['sync', 'ingestion'],
    // Conversation events (started, sent, handed off...).
    publishesEvents: true,
    startsConversations: true,
    startsPollerFleet: true,
    // A playbook send that meets 401 or SESSION_ENDED ends the conversation and returns its lifecycle's task token.
    answersConversationTasks: true,
    callsPlatforms: true,
    knowsBaseUrl: true,
    pollerNotices: 'send',
  },
  // A reconnect forgets the sync checkpoints one DeleteItem each.
  'oauth-callback': { table: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], credentials: 'openAndSeal', callsPlatforms: true, knowsBaseUrl: true, knowsDashboardUrl: true },
  // The receiver verifies with the webhook secret alone: one read (the connection), no platform API key.
  'webhook-receiver': { table: ['GetItem'], countsRefusals: true, webhookSecret: 'open', sendsTo: ['webhook'] },
  // Claims, records and rate buckets, item by item. No queue: no connector reacts to payment or billing events.
  'webhook-event': { table: ['GetItem', 'PutItem', 'UpdateItem'], credentials: 'open', publishesEvents: true, callsPlatforms: true },
  // Reads only gsi1: the connections a schedule names and the retries due.
  'sync-dispatcher': { queriesIndex: true, sendsTo: ['sync'] },
  // sendsTo sync: a run at its time budget enqueues its continuation, and a job past its retries is given back to the queue;
  // ingestion: held engagement events the platform refused go the ingestion queue's dead-letter way. It publishes nothing.
  'sync-job': { table: ['GetItem', 'Query', 'BatchGetItem', 'PutItem', 'UpdateItem', 'BatchWriteItem'], credentials: 'open', sendsTo: ['sync', 'ingestion'], callsPlatforms: true },
  // The connection, the rate buckets and the delivery counters.
  ingest: { table: ['GetItem', 'UpdateItem'], credentials: 'open', callsPlatforms: true },
  // DeleteItem: a conversation ended by its lifecycle (silent, failed) frees its lease item; BatchWriteItem and
  // sendsTo ingestion: the data connector's reaction to conversation.ended holds or queues an engagement event.
  'conversation-task': {
    table: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
    credentials: 'open',
    publishesEvents: true,
    sendsTo: ['ingestion'],
    startsPollerFleet: true,
    answersConversationTasks: true,
    callsPlatforms: true,
  },
  // The plan keeps the fleet's lease (one fleet at a time) in the table.
  'poller-fleet-plan': { table: ['Query', 'UpdateItem'] },
  // startsPollerFleet: a poller with no room for a new conversation asks for a surge poller.
  // sendsTo ingestion: connectors' reactions to conversation events (the data connector's engagement events).
  // pollerNotices: it takes notices, and tells the fleet of conversations it let go or had no room for.
  poller: {
    table: ['GetItem', 'Query', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'],
    // openAndSeal: a Messaging API conversation's end-user token is renewed and sealed again by the poller holding it.
    credentials: 'openAndSeal',
    publishesEvents: true,
    sendsTo: ['ingestion'],
    answersConversationTasks: true,
    callsPlatforms: true,
    startsPollerFleet: true,
    pollerNotices: 'sendAndReceive',
  },
};

/** The integration gateway: one stack, composed of one construct per concern. */
export class IntegrationGatewayStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const settings = readGatewaySettings(this);
    const logRetention = settings.logRetentionDays;

    const storage = new Storage(this, 'Storage', { warmWriteUnits: settings.tableWarmWriteUnits });
    const gatewayEvents = new GatewayEvents(this, 'Events');
    const scheduleDeadLetterQueue = createStandaloneDeadLetterQueue(this, 'ScheduleDeadLetterQueue', 'EventBridge Scheduler targets');
    const webhooks = new WebhookProcessing(this, 'Webhooks', { logRetention });
    const sync = new Sync(this, 'Sync', { logRetention, scheduleDeadLetterQueue });
    const ingestion = new Ingestion(this, 'Ingestion', { logRetention });
    const conversations = new Conversations(this, 'Conversations', { logRetention, scheduleDeadLetterQueue });
    const api = new GatewayApi(this, 'Api', {
      logRetention,
      throttle: { rateLimit: settings.apiThrottleRate, burstLimit: settings.apiThrottleBurst },
    });
    // The sign-in domain's address is known from its prefix alone, so the page's CSP can name it without
    // making the distribution depend on the user pool (whose invitation names the distribution's address).
    const authDomainPrefix = settings.authDomainPrefix ?? defaultAuthDomainPrefix();
    const authDomainUrl = `https://${authDomainPrefix}.auth.${Aws.REGION}.amazoncognito.com`;
    // The API only through the distribution, and a rate rule per client address on it (docs/tenants.md).
    const originVerification = new OriginVerification(this, 'OriginVerification');
    for (const fn of api.routeFunctions) originVerification.grantRead(fn);
    const edgeFirewall = !settings.webAclArn && settings.wafRateRule ? new EdgeFirewall(this, 'EdgeFirewall', edgeFirewallSettings(settings.wafRateLimit)) : undefined;
    const dashboard = new DashboardHosting(this, 'Dashboard', {
      httpApi: api.httpApi,
      authDomainUrl,
      webAclArn: settings.webAclArn ?? edgeFirewall?.webAclArn,
      webAclOnlyInUsEast1: edgeFirewall !== undefined,
      originHeader: originVerification.header,
    });
    // {base_url}: a custom domain when one is configured (pointed at the distribution), else the distribution.
    const baseUrl = settings.baseUrl ?? dashboard.url;
    const dashboardUrls = [...new Set([`${dashboard.url}/`, `${baseUrl}/`])];
    const auth = new DashboardAuth(this, 'DashboardAuth', { domainPrefix: authDomainPrefix, dashboardUrl: `${baseUrl}/` });
    const dashboardClient = auth.addDashboardClient(dashboardUrls);
    api.protectDashboardApi(auth.userPool, dashboardClient);
    dashboard.publish({ authority: authDomainUrl, clientId: dashboardClient.userPoolClientId, scopes: 'openid email profile', apiBase: '', signIn: 'cognito' });
    const functions: Record<HandlerName, GatewayFunction> = {
      api: api.apiHandler,
      'oauth-callback': api.oauthCallback,
      'webhook-receiver': api.webhookReceiver,
      'webhook-event': webhooks.eventWorker,
      'sync-dispatcher': sync.dispatcher,
      'sync-job': sync.job,
      ingest: ingestion.ingestWorker,
      'conversation-task': conversations.task,
      'poller-fleet-plan': conversations.fleetPlan,
      poller: conversations.poller,
    };
    new Monitoring(this, 'Monitoring', {
      deadLetterQueues: {
        WebhookEvents: webhooks.work.deadLetterQueue,
        SyncJobs: sync.work.deadLetterQueue,
        EngagementEvents: ingestion.work.deadLetterQueue,
        Schedules: scheduleDeadLetterQueue,
      },
      workQueues: { WebhookEvents: webhooks.work.queue, SyncJobs: sync.work.queue, EngagementEvents: ingestion.work.queue },
      syncJob: sync.job,
      functions,
      syncedConnectors: Object.keys(connectors.syncing()),
      webhookConnectors: connectors.withWebhooks().map((connector) => connector.name),
      alarmEmail: settings.alarmEmail,
      topicKey: storage.dataKey,
    });

    const targets: WiringTargets = {
      storage,
      bus: gatewayEvents.bus,
      conversations,
      queues: { webhook: webhooks.work.queue, sync: sync.work.queue, ingestion: ingestion.work.queue },
      settings,
      baseUrl,
      dashboardUrl: `${baseUrl}/`,
    };
    for (const handler of handlerNames) wire(functions[handler], functionNeeds[handler], targets);

    new CfnOutput(this, 'DashboardUrl', { value: `${baseUrl}/`, description: 'The dashboard: open it and sign in' });
    new CfnOutput(this, 'ApiUrl', { value: baseUrl, description: 'The gateway address ({base_url} in the spec): the dashboard, /api/v1, OAuth callbacks and webhooks' });
    // The addresses to register as each OAuth client's Callback URL (spec Authentication, messaging 1 and data 3).
    for (const connector of connectors.all()) {
      if (!connector.authorization) continue;
      const id = `${connector.name[0]!.toUpperCase()}${connector.name.slice(1)}OAuthCallbackUrl`;
      new CfnOutput(this, id, { value: `${baseUrl}${connector.authorization.callbackPath}`, description: `Callback URL of the ${connector.platform}'s OAuth client` });
    }
    new CfnOutput(this, 'UserPoolId', { value: auth.userPool.userPoolId, description: 'Dashboard user pool' });
    new CfnOutput(this, 'UserPoolClientId', { value: dashboardClient.userPoolClientId, description: 'Dashboard app client' });
    new CfnOutput(this, 'SignInDomain', { value: authDomainUrl, description: 'Managed login (Cognito) for the dashboard' });
    new CfnOutput(this, 'InviteFirstOperator', {
      value: `aws cognito-idp admin-create-user --user-pool-id ${auth.userPool.userPoolId} --username <email> --user-attributes Name=email,Value=<email> Name=email_verified,Value=true && aws cognito-idp admin-add-user-to-group --user-pool-id ${auth.userPool.userPoolId} --username <email> --group-name ${operatorGroupName}`,
      description: 'Invites an operator (replace <email>); the invitation email carries a temporary password',
    });
    new CfnOutput(this, 'EventBusName', { value: gatewayEvents.bus.eventBusName, description: 'Bus of normalised gateway events' });
  }
}

/**
 * The rate rule counts every request but the webhook deliveries and the playbook API: their callers are the
 * platforms, whose few addresses every account shares, so a per-address limit would refuse all tenants at
 * once. Those routes have their own route throttles, and the playbook API per-account quotas.
 */
function edgeFirewallSettings(ratePerFiveMinutes: number) {
  return { ratePerFiveMinutes, exemptPathPrefixes: ['/webhooks/', '/api/v1/playbook/'] };
}

/** `integration-gateway-` and the first 8 hex digits of the stack id's UUID: unique per stack, stable across updates. */
function defaultAuthDomainPrefix(): string {
  return Fn.join('-', ['integration-gateway', Fn.select(0, Fn.split('-', Fn.select(2, Fn.split('/', Aws.STACK_ID))))]);
}

/** What the functions can be given access to. */
interface WiringTargets {
  readonly storage: Storage;
  readonly bus: events.IEventBus;
  readonly conversations: Conversations;
  readonly queues: Record<'webhook' | 'sync' | 'ingestion', sqs.IQueue>;
  readonly settings: GatewaySettings;
  readonly baseUrl: string;
  readonly dashboardUrl: string;
}

const queueVariables = { webhook: 'WEBHOOK_QUEUE_URL', sync: 'SYNC_QUEUE_URL', ingestion: 'INGESTION_QUEUE_URL' } as const;

/** Grants one function what it needs, and sets the variable naming each resource it was granted. */
function wire(fn: GatewayFunction, need: FunctionNeeds, to: WiringTargets): void {
  fn.setVariable('LOG_LEVEL', 'info');
  if (need.table || need.queriesIndex) {
    to.storage.grantTable(fn.executionRole, need.table ?? [], need.queriesIndex);
    fn.setVariable('TABLE_NAME', to.storage.table.tableName);
  }
  if (need.countsRefusals) to.storage.grantDeliveryCounting(fn.executionRole);
  for (const grant of credentialsGrants(need)) {
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: [...grant.actions], resources: [to.storage.credentialsKey.keyArn], conditions: grant.conditions }));
    to.storage.allowCredentialsUse(fn.executionRole, `${grant.sid}${sidOf(fn.handlerName)}`, grant.actions, grant.conditions);
  }
  if (need.credentials || need.webhookSecret) fn.setVariable('CREDENTIALS_KEY_ID', to.storage.credentialsKey.keyArn);
  for (const queue of need.sendsTo ?? []) {
    to.queues[queue].grant(fn, 'sqs:SendMessage');
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
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [to.conversations.fleetArn] }));
    fn.setVariable('POLLER_FLEET_STATE_MACHINE_ARN', to.conversations.fleetArn);
  }
  if (need.answersConversationTasks) {
    // AWS authorizes it against the state machine whose task the token names (its AccessDenied names the
    // state machine), though the Service Authorization Reference lists no resource type for it.
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:SendTaskSuccess'], resources: [to.conversations.lifecycleArn] }));
  }
  if (need.callsPlatforms) {
    fn.setVariable('PAYMENT_API_BASE_URL', to.settings.paymentApiBaseUrl);
    fn.setVariable('BILLING_BASE_URL_TEMPLATE', to.settings.billingBaseUrlTemplate);
    fn.setVariable('DATA_LOGIN_URL', to.settings.dataLoginUrl);
    fn.setVariable('DATA_SANDBOX_LOGIN_URL', to.settings.dataSandboxLoginUrl);
  }
  if (need.knowsBaseUrl) fn.setVariable('BASE_URL', to.baseUrl);
  if (need.pollerNotices) {
    const queue = to.conversations.noticeQueue;
    queue.grant(fn, 'sqs:SendMessage');
    if (need.pollerNotices === 'sendAndReceive') queue.grant(fn, 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility');
    fn.setVariable('POLLER_NOTICE_QUEUE_URL', queue.queueUrl);
  }
  if (need.knowsDashboardUrl) fn.setVariable('DASHBOARD_URL', to.dashboardUrl);
}

const sidOf = (handler: string) => handler.replace(/(^|-)(\w)/g, (_match, _dash, letter: string) => letter.toUpperCase());

/**
 * The vault's context, in both the role's policy and the key's: exactly {account, connector} (ForAllValues alone
 * would also match a call with NO context, so the Null conditions make both keys mandatory). The webhook secret
 * is sealed under {account, connector, purpose: webhook}: a receiver's grant requires that purpose, so it opens
 * nothing else, and the other grants exclude it by their key list.
 */
export const VAULT_CONTEXT = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector'] },
  Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
};
export const WEBHOOK_SECRET_CONTEXT = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector', 'purpose'] },
  StringEquals: { 'kms:EncryptionContext:purpose': 'webhook' },
  Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
};

interface CredentialsGrant {
  sid: string;
  actions: readonly string[];
  conditions: Record<string, Record<string, unknown>>;
}

function credentialsGrants(need: FunctionNeeds): CredentialsGrant[] {
  const grants: CredentialsGrant[] = [];
  if (need.credentials) {
    grants.push({ sid: 'Credentials', actions: need.credentials === 'openAndSeal' ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Decrypt'], conditions: VAULT_CONTEXT });
  }
  if (need.webhookSecret) {
    grants.push({ sid: 'WebhookSecret', actions: need.webhookSecret === 'seal' ? ['kms:GenerateDataKey'] : ['kms:Decrypt'], conditions: WEBHOOK_SECRET_CONTEXT });
  }
  return grants;
}
