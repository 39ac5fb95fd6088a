import { OPERATOR_GROUP } from '../../shared/api/caller';
import { existsSync, readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../lib/app';
import { leanRuntime } from '../../lib/bundling';
import { handlerNames, type HandlerName } from '../../lib/gateway-function';
import { SYNC_JOB_MEMORY_MB } from '../../lib/sync';
import { GatewayEnvironment } from '../../shared/config';
import { key, tableDefinition } from '../../shared/store/table';
import { historyKey } from '../../shared/history/history-store';
import { DELIVERY_COUNTER_KEYS } from '../../lib/storage';
import { DEFINITIONS_FILE, definitionsFromTemplate } from '../../local/state-machine-definitions';
import type { Stack } from 'aws-cdk-lib';
import { constructPaths } from '../../local/iam/construct-paths';
import { localArns } from '../../local/iam/local-arns';
import { wildcardMatch } from '../../local/iam/policy-evaluation';
import { policiesFromTemplate, ROLE_POLICIES_FILE, type RolePolicies } from '../../local/iam/role-policies';

// The CloudFormation shapes these tests read. Values that CDK leaves as intrinsics ({Ref}, {Fn::GetAtt}) stay unknown.
interface Resource<P> {
  Type: string;
  Properties: P;
  DeletionPolicy?: string;
}
interface GetAtt {
  'Fn::GetAtt': [string, string];
}
interface Ref {
  Ref: string;
}
interface LambdaProperties {
  Description?: unknown;
  Runtime: string;
  Architectures: string[];
  Timeout: number;
  MemorySize?: number;
  Role: GetAtt;
  TracingConfig?: { Mode: string };
  RecursiveLoop?: string;
  LoggingConfig?: { LogGroup: Ref };
  Environment: { Variables: Record<string, unknown> };
}
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
interface PolicyProperties {
  Roles: Ref[];
  PolicyDocument: { Statement: Statement[] };
}
interface QueueProperties {
  SqsManagedSseEnabled?: boolean;
  KmsMasterKeyId?: unknown;
  RedrivePolicy?: { deadLetterTargetArn: GetAtt; maxReceiveCount: number };
  VisibilityTimeout?: number;
  MessageRetentionPeriod?: number;
}

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };

let template: Template;
let stack: Stack;
let resources: Record<string, Resource<Record<string, unknown>>>;

beforeAll(() => {
  ({ stack } = createGatewayApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } }));
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
});

function resource<P = Record<string, unknown>>(logicalId: string): Resource<P> {
  const found = resources[logicalId];
  expect(found, logicalId).toBeDefined();
  return found as unknown as Resource<P>;
}
function resourcesOf<P>(type: string): Array<[string, Resource<P>]> {
  return Object.entries(resources).filter(([, r]) => r.Type === type) as Array<[string, Resource<P>]>;
}
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** Logical id of the Lambda function running functions/<handler>.ts (found by its description). */
function functionOf(handler: HandlerName): [string, Resource<LambdaProperties>] {
  const found = resourcesOf<LambdaProperties>('AWS::Lambda::Function').filter(([, r]) =>
    String(r.Properties.Description).startsWith(`functions/${handler}.ts:`),
  );
  expect(found, `one function for ${handler}`).toHaveLength(1);
  return found[0]!;
}
/** The gateway's own functions (functions/*.ts), not CDK's deploy-time helpers. */
function gatewayFunctions(): Array<[string, Resource<LambdaProperties>]> {
  return resourcesOf<LambdaProperties>('AWS::Lambda::Function').filter(([, r]) => String(r.Properties.Description).startsWith('functions/'));
}

let handlersByRole: Map<string, HandlerName> | undefined;
function handlerOfRole(roleId: string): HandlerName | undefined {
  handlersByRole ??= new Map(handlerNames.map((h) => [functionOf(h)[1].Properties.Role['Fn::GetAtt'][0], h]));
  return handlersByRole.get(roleId);
}
/** Every IAM statement, with the handlers whose roles it is attached to. */
function statements(): Array<{ statement: Statement; handlers: Array<HandlerName | undefined> }> {
  return resourcesOf<PolicyProperties>('AWS::IAM::Policy').flatMap(([, policy]) =>
    policy.Properties.PolicyDocument.Statement.map((statement) => ({
      statement,
      handlers: policy.Properties.Roles.map((role) => handlerOfRole(role.Ref)),
    })),
  );
}
const references = (value: unknown, logicalId: string) => JSON.stringify(value).includes(`"${logicalId}"`);

describe('dashboard users', () => {
  it('carry their account in an immutable attribute the app cannot write, and operators in the group the API checks', () => {
    template.hasResourceProperties('AWS::Cognito::UserPool', {
      Schema: [{ Name: 'account_id', AttributeDataType: 'String', Mutable: false }],
    });
    const [, client] = resourcesOf<{ WriteAttributes?: string[]; ReadAttributes?: string[] }>('AWS::Cognito::UserPoolClient')[0]!;
    expect(client.Properties.WriteAttributes).toBeDefined();
    expect(client.Properties.WriteAttributes).not.toContain('custom:account_id');
    expect(client.Properties.ReadAttributes).toContain('custom:account_id');
    template.hasResourceProperties('AWS::Cognito::UserPoolGroup', { GroupName: OPERATOR_GROUP });
  });
});

describe('HTTP API', () => {
  const routes = () =>
    resourcesOf<{ RouteKey: string; AuthorizationType?: string; AuthorizerId?: Ref; Target: unknown }>('AWS::ApiGatewayV2::Route').map(
      ([, r]) => r.Properties,
    );

  it('has exactly the spec addresses plus /api/v1 (and its playbook prefix), with those methods', () => {
    expect(routes().map((r) => r.RouteKey).sort()).toEqual(
      [
        'GET /auth/crmmessaging/callback',
        'GET /auth/crmdata/callback',
        'POST /webhooks/payments',
        'POST /webhooks/billing',
        'ANY /api/v1/{proxy+}',
        'GET /api/v1/openapi.json',
        'GET /api/v1/playbook/{proxy+}',
        'POST /api/v1/playbook/{proxy+}',
      ].sort(),
    );
  });

  it('protects ANY /api/v1/{proxy+} with a JWT authorizer backed by the Cognito user pool; nothing else has one', () => {
    const [authorizerId, authorizer] = resourcesOf<{
      AuthorizerType: string;
      JwtConfiguration: { Issuer: unknown; Audience: unknown[] };
    }>('AWS::ApiGatewayV2::Authorizer')[0]!;
    expect(authorizer.Properties.AuthorizerType).toBe('JWT');
    const [poolId] = resourcesOf('AWS::Cognito::UserPool')[0]!;
    const [clientId] = resourcesOf('AWS::Cognito::UserPoolClient')[0]!;
    expect(JSON.stringify(authorizer.Properties.JwtConfiguration.Issuer)).toContain('cognito-idp');
    expect(references(authorizer.Properties.JwtConfiguration.Issuer, poolId)).toBe(true);
    expect(references(authorizer.Properties.JwtConfiguration.Audience, clientId)).toBe(true);

    for (const route of routes()) {
      if (route.RouteKey === 'ANY /api/v1/{proxy+}') {
        expect(route.AuthorizationType).toBe('JWT');
        expect(route.AuthorizerId).toEqual({ Ref: authorizerId });
      } else {
        expect([undefined, 'NONE'], route.RouteKey).toContain(route.AuthorizationType);
        expect(route.AuthorizerId, route.RouteKey).toBeUndefined();
      }
    }
  });

  it('sends each route to its function with payload format 2.0', () => {
    const integrations = Object.fromEntries(
      resourcesOf<{ IntegrationUri: GetAtt; PayloadFormatVersion: string }>('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]),
    );
    const expected: Record<string, HandlerName> = {
      'GET /auth/crmmessaging/callback': 'oauth-callback',
      'GET /auth/crmdata/callback': 'oauth-callback',
      'POST /webhooks/payments': 'webhook-receiver',
      'POST /webhooks/billing': 'webhook-receiver',
      'ANY /api/v1/{proxy+}': 'api',
      'GET /api/v1/openapi.json': 'api',
      'GET /api/v1/playbook/{proxy+}': 'api',
      'POST /api/v1/playbook/{proxy+}': 'api',
    };
    for (const route of routes()) {
      const integrationId = Object.keys(integrations).find((id) => references(route.Target, id));
      const integration = integrations[integrationId!]!;
      expect(integration.PayloadFormatVersion).toBe('2.0');
      expect(integration.IntegrationUri['Fn::GetAtt'][0], route.RouteKey).toBe(functionOf(expected[route.RouteKey]!)[0]);
    }
  });

  it('logs access as JSON on the throttled $default stage and outputs the API URL', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 },
    });
    const stage = resourcesOf<{ AccessLogSettings: { DestinationArn: GetAtt; Format: string } }>('AWS::ApiGatewayV2::Stage')[0]![1];
    const format = JSON.parse(stage.Properties.AccessLogSettings.Format) as Record<string, string>;
    expect(format.requestId).toBe('$context.requestId');
    expect(format.routeKey).toBe('$context.routeKey');
    // The raw path and query string (OAuth codes) are never logged.
    expect(Object.values(format)).not.toContain('$context.path');
    expect(resource(stage.Properties.AccessLogSettings.DestinationArn['Fn::GetAtt'][0]).Type).toBe('AWS::Logs::LogGroup');
    // {base_url} is the dashboard's distribution, which sends /api/*, /auth/* and /webhooks/* to this API.
    const [distributionId] = resourcesOf('AWS::CloudFront::Distribution')[0]!;
    expect(references(template.toJSON().Outputs.ApiUrl.Value, distributionId)).toBe(true);
    // The callback addresses to register on the OAuth clients, one per connector with the authorization code.
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    for (const [id, path] of [['MessagingOAuthCallbackUrl', '/auth/crmmessaging/callback'], ['DataOAuthCallbackUrl', '/auth/crmdata/callback']] as const) {
      expect(references(outputs[id]!.Value, distributionId)).toBe(true);
      expect(JSON.stringify(outputs[id]!.Value)).toContain(path);
    }
  });
});

describe('queues', () => {
  const queues = () => resourcesOf<QueueProperties>('AWS::SQS::Queue');
  /** A DLQ is a queue some redrive policy or scheduler target points at. */
  function deadLetterQueueIds(): Set<string> {
    const ids = new Set<string>();
    for (const [, q] of queues()) if (q.Properties.RedrivePolicy) ids.add(q.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]);
    for (const [, s] of resourcesOf<{ Target: { DeadLetterConfig?: { Arn: GetAtt } } }>('AWS::Scheduler::Schedule')) {
      if (s.Properties.Target.DeadLetterConfig) ids.add(s.Properties.Target.DeadLetterConfig.Arn['Fn::GetAtt'][0]);
    }
    return ids;
  }

  it('every work queue has a DLQ after 5 receives; every queue is encrypted and TLS-only', () => {
    const dlqs = deadLetterQueueIds();
    // Three work queues, and the poller notice queue (hints, no DLQ: see lib/conversations.ts).
    expect(queues().length - dlqs.size).toBe(4);
    for (const [id, q] of queues()) {
      expect(q.Properties.SqsManagedSseEnabled === true || q.Properties.KmsMasterKeyId !== undefined, `${id} SSE`).toBe(true);
      if (id.includes('PollerNotices')) {
        expect(q.Properties.MessageRetentionPeriod).toBe(15 * 60);
      } else if (dlqs.has(id)) {
        expect(q.Properties.MessageRetentionPeriod).toBe(14 * 24 * 3600);
      } else {
        expect(q.Properties.RedrivePolicy?.maxReceiveCount, `${id} redrive`).toBe(5);
      }
      const policies = resourcesOf<{ Queues: Ref[]; PolicyDocument: { Statement: Statement[] } }>('AWS::SQS::QueuePolicy').filter(([, p]) =>
        p.Properties.Queues.some((queue) => queue.Ref === id),
      );
      const denyInsecure = policies.flatMap(([, p]) => p.Properties.PolicyDocument.Statement).find(
        (s) => s.Effect === 'Deny' && JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
      );
      expect(denyInsecure, `${id} enforces TLS`).toBeDefined();
    }
  });

  it('event source mappings report batch item failures, with the batch sizes of each worker', () => {
    const mappings = resourcesOf<{
      FunctionName: Ref;
      EventSourceArn: GetAtt;
      BatchSize: number;
      MaximumBatchingWindowInSeconds?: number;
      FunctionResponseTypes?: string[];
      ScalingConfig?: { MaximumConcurrency: number };
    }>('AWS::Lambda::EventSourceMapping').map(([, m]) => m.Properties);
    const mappingOf = (handler: HandlerName) => mappings.find((m) => m.FunctionName.Ref === functionOf(handler)[0]);

    expect(mappings).toHaveLength(3);
    expect(mappingOf('ingest')).toMatchObject({
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
    expect(mappingOf('webhook-event')).toMatchObject({ BatchSize: 10, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    expect(mappingOf('sync-job')).toMatchObject({ BatchSize: 1, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    expect(functionOf('sync-job')[1].Properties.Timeout).toBe(300);
    // One whole vCPU: the job's CPU per page, not its memory, bounds how fast it pages (lib/sync.ts).
    expect(functionOf('sync-job')[1].Properties.MemorySize).toBe(SYNC_JOB_MEMORY_MB);
    expect(SYNC_JOB_MEMORY_MB).toBeGreaterThanOrEqual(1769);
    // Its continuations go through its own queue with the invocation's trace header: Lambda's loop
    // detection would stop a long sync after 16; every other function keeps it.
    expect(functionOf('sync-job')[1].Properties.RecursiveLoop).toBe('Allow');
    for (const name of ['webhook-event', 'ingest', 'api', 'poller'] as const) expect(functionOf(name)[1].Properties.RecursiveLoop, name).toBeUndefined();

    // AWS: visibility timeout >= 6x the consumer's timeout (+ batching window).
    for (const mapping of mappings) {
      const queue = resource<QueueProperties>(mapping.EventSourceArn['Fn::GetAtt'][0]);
      const consumer = resource<LambdaProperties>(mapping.FunctionName.Ref);
      expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * consumer.Properties.Timeout + (mapping.MaximumBatchingWindowInSeconds ?? 0));
    }
  });

  it('the sync queue (and its DLQ) is FIFO with content-based deduplication: one job per connection at a time', () => {
    const mappings = resourcesOf<{ FunctionName: Ref; EventSourceArn: GetAtt }>('AWS::Lambda::EventSourceMapping').map(([, m]) => m.Properties);
    const syncQueueId = mappings.find((m) => m.FunctionName.Ref === functionOf('sync-job')[0])!.EventSourceArn['Fn::GetAtt'][0];
    const syncQueue = resource<QueueProperties & { FifoQueue?: boolean; ContentBasedDeduplication?: boolean }>(syncQueueId);
    expect(syncQueue.Properties).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: true });
    const dlq = resource<{ FifoQueue?: boolean }>(syncQueue.Properties.RedrivePolicy!.deadLetterTargetArn['Fn::GetAtt'][0]);
    expect(dlq.Properties.FifoQueue).toBe(true);
    for (const other of mappings.filter((m) => m.FunctionName.Ref !== functionOf('sync-job')[0])) {
      expect(resource<{ FifoQueue?: boolean }>(other.EventSourceArn['Fn::GetAtt'][0]).Properties.FifoQueue).toBeUndefined();
    }
  });

  it('the sync job may give its message back at once (ChangeMessageVisibility on the sync queue), to dead-letter a job past its retries', () => {
    const mappings = resourcesOf<{ FunctionName: Ref; EventSourceArn: GetAtt }>('AWS::Lambda::EventSourceMapping').map(([, m]) => m.Properties);
    const syncQueueId = mappings.find((m) => m.FunctionName.Ref === functionOf('sync-job')[0])!.EventSourceArn['Fn::GetAtt'][0];
    const allowed = statements().filter(({ statement, handlers }) => handlers.includes('sync-job') && actionsOf(statement).includes('sqs:ChangeMessageVisibility'));
    expect(allowed.some(({ statement }) => references(statement.Resource, syncQueueId))).toBe(true);
    expect(Object.keys(functionOf('sync-job')[1].Properties.Environment.Variables)).toContain('SYNC_QUEUE_URL');
  });

  it('the webhook receiver may only send to the webhook queue', () => {
    const [, consumer] = resourcesOf<{ FunctionName: Ref; EventSourceArn: GetAtt }>('AWS::Lambda::EventSourceMapping').find(
      ([, m]) => m.Properties.FunctionName.Ref === functionOf('webhook-event')[0],
    )!;
    const webhookQueueId = consumer.Properties.EventSourceArn['Fn::GetAtt'][0];
    for (const handler of ['webhook-receiver'] as const) {
      const sqsStatements = statements().filter(({ statement, handlers }) => handlers.includes(handler) && actionsOf(statement).some((a) => a.startsWith('sqs:')));
      expect(sqsStatements.length).toBeGreaterThan(0);
      for (const { statement } of sqsStatements) {
        expect(actionsOf(statement)).toEqual(['sqs:SendMessage']);
        expect(references(statement.Resource, webhookQueueId)).toBe(true);
      }
      expect(Object.keys(functionOf(handler)[1].Properties.Environment.Variables)).not.toContain('SYNC_QUEUE_URL');
    }
  });

  it('the webhook receiver may write only its delivery counters (shared/history), nothing else in the table', () => {
    const tableId = resourcesOf('AWS::DynamoDB::Table')[0]![0];
    for (const handler of ['webhook-receiver'] as const) {
      const writes = statements().filter(({ statement, handlers }) => handlers.includes(handler) && actionsOf(statement).some((a) => /^dynamodb:(Put|Update|Delete|BatchWrite)/.test(a)));
      expect(writes.map(({ statement }) => actionsOf(statement))).toEqual([['dynamodb:UpdateItem']]);
      const statement = writes[0]!.statement;
      expect(references(statement.Resource, tableId)).toBe(true);
      const leading = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
      expect(leading).toEqual([DELIVERY_COUNTER_KEYS]);
      // The pattern is the key the counters are written under, and no other item's.
      const pattern = new RegExp(`^${DELIVERY_COUNTER_KEYS.replaceAll('*', '.*')}$`);
      expect(historyKey.deliveryHour('acme', 'payment', '2026-11-27T22:00:00.000Z').pk).toMatch(pattern);
      for (const other of [key.connection('acme', 'payment'), key.record('acme', 'payment', 'customers', 'cus_1'), historyKey.syncRun('acme', 'payment', 'x', 'customers')]) {
        expect(other.pk).not.toMatch(pattern);
      }
    }
  });
});

describe('schedules', () => {
  const schedules = () =>
    resourcesOf<{ ScheduleExpression: string; Target: { Arn: unknown; Input: string; RetryPolicy?: object; DeadLetterConfig?: object } }>(
      'AWS::Scheduler::Schedule',
    ).map(([, s]) => s.Properties);

  it('fires the sync dispatcher hourly, daily and weekly with the frequency as input, and every 5 minutes for due retries', () => {
    const [dispatcherId] = functionOf('sync-dispatcher');
    const syncs = schedules().filter((s) => references(s.Target.Arn, dispatcherId));
    expect(syncs.map((s) => [s.ScheduleExpression, JSON.parse(s.Target.Input)]).sort()).toEqual(
      [
        ['rate(1 day)', { frequency: 'daily' }],
        ['rate(1 hour)', { frequency: 'hourly' }],
        ['rate(7 days)', { frequency: 'weekly' }],
        // The retry schedule: failed syncs whose next try has come (shared/sync/sync-retry.ts).
        ['rate(5 minutes)', { retries: true }],
      ].sort(),
    );
    for (const s of syncs) {
      expect(s.Target.RetryPolicy).toMatchObject({ MaximumRetryAttempts: 3 });
      expect(s.Target.DeadLetterConfig).toBeDefined();
    }
  });

  it('restarts the poller fleet every 15 minutes', () => {
    const [fleetId] = resourcesOf<{ StateMachineName: string }>('AWS::StepFunctions::StateMachine').find(([, m]) =>
      m.Properties.StateMachineName.endsWith('-poller-fleet'),
    )!;
    const restart = schedules().filter((s) => references(s.Target.Arn, fleetId));
    expect(restart).toHaveLength(1);
    expect(restart[0]!.ScheduleExpression).toBe('rate(15 minutes)');
    expect(restart[0]!.Target.DeadLetterConfig).toBeDefined();
  });
});

describe('storage', () => {
  it('has one on-demand table with PITR, TTL expiresAt, gsi1, encrypted with a rotating customer-managed key', () => {
    const tables = resourcesOf<{
      BillingMode: string;
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: boolean };
      SSESpecification: { SSEEnabled: boolean; SSEType: string; KMSMasterKeyId: GetAtt };
      TimeToLiveSpecification: { AttributeName: string; Enabled: boolean };
      KeySchema: Array<{ AttributeName: string; KeyType: string }>;
      GlobalSecondaryIndexes: Array<{ IndexName: string; KeySchema: Array<{ AttributeName: string; KeyType: string }>; Projection: { ProjectionType: string } }>;
    }>('AWS::DynamoDB::Table');
    expect(tables).toHaveLength(1);
    const table = tables[0]![1];
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    // Not pre-warmed unless tableWarmWriteUnits says so (test/infra/settings.test.ts): DynamoDB's default.
    expect(table.Properties).not.toHaveProperty('WarmThroughput');
    expect(table.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(true);
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'gsi1',
        KeySchema: [
          { AttributeName: tableDefinition.indexes[0].partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.indexes[0].sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ]);
    expect(table.Properties.SSESpecification).toMatchObject({ SSEEnabled: true, SSEType: 'KMS' });
    const key = resource(table.Properties.SSESpecification.KMSMasterKeyId['Fn::GetAtt'][0]);
    expect(key.Type).toBe('AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
  });

  it('wraps credentials under a separate rotating key', () => {
    const credentialsKey = functionOf('api')[1].Properties.Environment.Variables.CREDENTIALS_KEY_ID as GetAtt;
    const key = resource(credentialsKey['Fn::GetAtt'][0]);
    expect(key.Type).toBe('AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
    const table = resourcesOf<{ SSESpecification: { KMSMasterKeyId: GetAtt } }>('AWS::DynamoDB::Table')[0]![1];
    expect(table.Properties.SSESpecification.KMSMasterKeyId['Fn::GetAtt'][0]).not.toBe(credentialsKey['Fn::GetAtt'][0]);
  });

  it('has two customer-managed keys, the table’s and the credentials’, and one secret: the origin header’s value', () => {
    // DESIGN: one key for the table, one for credentials. The one secret is what the distribution proves itself with ($0.40 a month).
    template.resourceCountIs('AWS::KMS::Key', 2);
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
    for (const [, fn] of gatewayFunctions()) expect(Object.keys(fn.Properties.Environment.Variables)).not.toContain('GATEWAY_SECRET_ARN');
  });

  it('has the event bus integration-gateway with a 30-day archive', () => {
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'integration-gateway' });
    template.hasResourceProperties('AWS::Events::Archive', { RetentionDays: 30 });
  });
});

describe('state machines', () => {
  /** The definition as JSON, with every CloudFormation intrinsic replaced by "X". */
  function definitionOf(definition: unknown): { StartAt: string; States: Record<string, Record<string, unknown>> } {
    const parts = (definition as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    return JSON.parse(parts.map((part) => (typeof part === 'string' ? part : 'X')).join(''));
  }
  const machines = () =>
    resourcesOf<{
      StateMachineName: string;
      StateMachineType: string;
      LoggingConfiguration: { Level: string; IncludeExecutionData: boolean; Destinations: unknown[] };
      TracingConfiguration: { Enabled: boolean };
      DefinitionString: unknown;
    }>('AWS::StepFunctions::StateMachine').map(([, m]) => m.Properties);

  it('both are STANDARD, log ALL events without execution data, and are traced', () => {
    expect(machines()).toHaveLength(2);
    for (const machine of machines()) {
      expect(machine.StateMachineType).toBe('STANDARD');
      expect(machine.LoggingConfiguration.Level).toBe('ALL');
      expect(machine.LoggingConfiguration.IncludeExecutionData).toBe(false);
      expect(machine.LoggingConfiguration.Destinations).toHaveLength(1);
      expect(machine.TracingConfiguration.Enabled).toBe(true);
    }
  });

  it('the lifecycle waits on a task token between Start and Transcript, and marks failures', () => {
    const lifecycle = definitionOf(machines().find((m) => m.StateMachineName.endsWith('-conversation'))!.DefinitionString);
    expect(lifecycle.StartAt).toBe('Start');
    const { Start, Active, Ended, Transcript } = lifecycle.States;
    expect(Start).toMatchObject({ Next: 'Active', Parameters: { Payload: { step: 'start', 'input.$': '$' } } });
    expect(Active).toMatchObject({
      Resource: 'arn:X:states:::lambda:invoke.waitForTaskToken',
      TimeoutSeconds: 24 * 3600,
      Next: 'Ended',
      Parameters: { Payload: { step: 'await-end', 'taskToken.$': '$$.Task.Token' } },
    });
    expect(Ended).toMatchObject({ Type: 'Pass', Next: 'Transcript' });
    expect(Transcript).toMatchObject({ Parameters: { Payload: { step: 'transcript' } } });
    expect(lifecycle.States[Transcript!.Next as string]!.Type).toBe('Succeed');
    for (const step of [Start, Active, Transcript]) {
      const catches = step!.Catch as Array<{ ErrorEquals: string[]; Next: string }>;
      expect(catches.find((c) => c.ErrorEquals.includes('States.ALL'))?.Next).toBe('Mark failed');
    }
    expect(lifecycle.States['Mark failed']).toMatchObject({ Parameters: { Payload: { step: 'mark-failed' } } });
    expect(lifecycle.States[lifecycle.States['Mark failed']!.Next as string]!.Type).toBe('Fail');
  });

  it('the fleet plans, stops when idle, maps pollers over shards and loops back to Plan', () => {
    const fleet = definitionOf(machines().find((m) => m.StateMachineName.endsWith('-poller-fleet'))!.DefinitionString);
    const choice = fleet.States[fleet.States.Plan!.Next as string]!;
    const choices = choice.Choices as Array<{ Variable: string; BooleanEquals?: boolean; Next: string }>;
    const idle = choices.find((c) => c.Variable === '$.plan.run' && c.BooleanEquals === false)!;
    expect(fleet.States[idle.Next]!.Type).toBe('Succeed');
    const map = fleet.States[choice.Default as string]!;
    expect(map).toMatchObject({ Type: 'Map', ItemsPath: '$.plan.shards', MaxConcurrency: 50 });
    expect(fleet.States[map.Next as string]!.Next).toBe('Plan');
    expect(functionOf('poller')[1].Properties.Timeout).toBe(900);
    // A crashed poller run is started again at once; a surge execution adds one poller mid-round.
    const pollShard = (map.ItemProcessor as { States: Record<string, { Retry?: Array<{ ErrorEquals: string[]; MaxAttempts: number }> }> }).States['Poll shard']!;
    expect(pollShard.Retry?.some((r) => r.ErrorEquals.includes('States.ALL') && r.MaxAttempts >= 1)).toBe(true);
    expect(fleet.StartAt).toBe('Surge?');
    expect(fleet.States['Surge poller']).toMatchObject({ Parameters: { 'Payload.$': '$.surge' } });
  });

  it('the local runtime runs exactly these definitions (local/conversation-state-machines.json; `npm run state-machines` rewrites it)', () => {
    expect(definitionsFromTemplate(template.toJSON() as Parameters<typeof definitionsFromTemplate>[0])).toEqual(JSON.parse(readFileSync(DEFINITIONS_FILE, 'utf8')));
  });

  it('new conversations reach the pollers through an encrypted notice queue: the API and the poller send, only the poller receives', () => {
    const [queueId] = resourcesOf<QueueProperties>('AWS::SQS::Queue').find(([id]) => id.includes('PollerNotices'))!;
    const statementsOf = (handler: HandlerName) =>
      resourcesOf<PolicyProperties>('AWS::IAM::Policy')
        .filter(([, p]) => p.Properties.Roles.some((role) => references(role, functionOf(handler)[1].Properties.Role['Fn::GetAtt'][0])))
        .flatMap(([, p]) => p.Properties.PolicyDocument.Statement)
        .filter((statement) => references(statement.Resource, queueId));
    const actions = (handler: HandlerName) => statementsOf(handler).flatMap((s) => [s.Action].flat()).sort();
    expect(actions('api')).toEqual(expect.arrayContaining(['sqs:SendMessage']));
    expect(actions('api')).not.toContain('sqs:ReceiveMessage');
    expect(actions('poller')).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']));
    // The poller tells the fleet of conversations it let go or had no room for: it sends too.
    expect(actions('poller')).toContain('sqs:SendMessage');
    expect(actions('sync-job')).toEqual([]);
    expect(functionOf('poller')[1].Properties.Environment.Variables.POLLER_NOTICE_QUEUE_URL).toBeDefined();
    expect(resources[queueId]!.Properties).toMatchObject({ SqsManagedSseEnabled: true });
  });
});

describe('alarms', () => {
  it('alarms on every dead-letter queue and on sync-job errors, to an encrypted TLS-only topic', () => {
    const queues = resourcesOf<QueueProperties>('AWS::SQS::Queue');
    const dlqIds = new Set(queues.flatMap(([, q]) => (q.Properties.RedrivePolicy ? [q.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]] : [])));
    for (const [, s] of resourcesOf<{ Target: { DeadLetterConfig?: { Arn: GetAtt } } }>('AWS::Scheduler::Schedule')) {
      if (s.Properties.Target.DeadLetterConfig) dlqIds.add(s.Properties.Target.DeadLetterConfig.Arn['Fn::GetAtt'][0]);
    }
    const alarms = resourcesOf<{
      MetricName: string;
      Threshold: number;
      ComparisonOperator: string;
      Dimensions: Array<{ Name: string; Value: GetAtt | Ref }>;
      AlarmActions: Ref[];
    }>('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    const [topicId, topic] = resourcesOf<{ KmsMasterKeyId: GetAtt; TopicName: unknown }>('AWS::SNS::Topic')[0]!;
    // Under the table's key, which CloudWatch may use for this topic only (the topic's ARN is SNS's encryption context).
    const table = resourcesOf<{ SSESpecification: { KMSMasterKeyId: GetAtt } }>('AWS::DynamoDB::Table')[0]![1];
    const keyId = topic.Properties.KmsMasterKeyId['Fn::GetAtt'][0];
    expect(keyId).toBe(table.Properties.SSESpecification.KMSMasterKeyId['Fn::GetAtt'][0]);
    const keyStatements = resource<{ KeyPolicy: { Statement: Array<Statement & { Principal: { Service?: string } }> } }>(keyId).Properties.KeyPolicy.Statement;
    const cloudWatch = keyStatements.filter((s) => s.Principal.Service === 'cloudwatch.amazonaws.com');
    expect(cloudWatch).toHaveLength(1);
    expect(actionsOf(cloudWatch[0]!).sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey*']);
    // The topic's ARN, built from its name: `arn:<partition>:sns:<region>:<account>:<name>`.
    const topicArn = cloudWatch[0]!.Condition?.StringEquals?.['kms:EncryptionContext:aws:sns:topicArn'] as { 'Fn::Join': [string, unknown[]] };
    const parts = topicArn['Fn::Join'][1];
    expect(parts[2]).toBe(':sns:');
    expect(parts.at(-1)).toBe(`:${topic.Properties.TopicName as string}`);
    expect(cloudWatch[0]!.Condition?.StringEquals?.['aws:SourceAccount']).toEqual({ Ref: 'AWS::AccountId' });
    // No alarmEmail in cdk.json: nobody is subscribed.
    template.resourceCountIs('AWS::SNS::Subscription', 0);

    const dlqAlarms = alarms.filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(dlqIds.size).toBe(4);
    expect(dlqAlarms).toHaveLength(dlqIds.size);
    const alarmedQueues = dlqAlarms.map((a) => (a.Dimensions.find((d) => d.Name === 'QueueName')!.Value as GetAtt)['Fn::GetAtt'][0]);
    expect(new Set(alarmedQueues)).toEqual(dlqIds);
    for (const alarm of dlqAlarms) {
      expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
      expect(alarm.AlarmActions).toEqual([{ Ref: topicId }]);
    }

    const syncErrors = alarms.filter((a) => a.MetricName === 'Errors');
    expect(syncErrors).toHaveLength(1);
    expect(syncErrors[0]!.Dimensions).toEqual([{ Name: 'FunctionName', Value: { Ref: functionOf('sync-job')[0] } }]);

    const topicPolicy = resourcesOf<{ PolicyDocument: { Statement: Statement[] } }>('AWS::SNS::TopicPolicy')[0]![1];
    expect(topicPolicy.Properties.PolicyDocument.Statement.some((s) => s.Effect === 'Deny' && JSON.stringify(s.Condition).includes('aws:SecureTransport'))).toBe(true);
  });
});

describe('functions', () => {
  it('one function per handler file, each Node.js 24 on arm64, traced, with its own log group and no managed policy', () => {
    const functions = gatewayFunctions();
    expect(functions).toHaveLength(handlerNames.length);
    // The only others are CDK's deploy-time helpers of the dashboard's bucket: the one that copies its files,
    // and the one that empties it when the stack is deleted.
    const others = resourcesOf<LambdaProperties>('AWS::Lambda::Function').filter(([id]) => !functions.some(([gatewayId]) => gatewayId === id));
    const helpers = ['Custom::CDKBucketDeployment', 'Custom::S3AutoDeleteObjects'].map(
      (type) => resourcesOf<{ ServiceToken: GetAtt }>(type)[0]![1].Properties.ServiceToken['Fn::GetAtt'][0],
    );
    expect(others.map(([id]) => id).sort()).toEqual(helpers.sort());
    for (const handler of handlerNames) {
      expect(existsSync(new URL(`../../functions/${handler}.ts`, import.meta.url)), handler).toBe(true);
      const [, fn] = functionOf(handler);
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.TracingConfig?.Mode).toBe('Active');
      expect(resource(fn.Properties.LoggingConfig!.LogGroup.Ref).Properties.RetentionInDays).toBe(30);
      // The poller runs lean (lib/bundling.ts leanRuntime): its memory holds long-polls, not a source map.
      expect(fn.Properties.Environment.Variables).toMatchObject({ NODE_OPTIONS: handler === 'poller' ? leanRuntime.nodeOptions : '--enable-source-maps', GATEWAY_MODE: 'aws' });
      const role = resource(fn.Properties.Role['Fn::GetAtt'][0]);
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('sets only variables that shared/config.ts knows', () => {
    const known = new Set(Object.keys(GatewayEnvironment.shape));
    known.add('NODE_OPTIONS');
    for (const [, fn] of gatewayFunctions()) {
      for (const name of Object.keys(fn.Properties.Environment.Variables)) expect(known, `${fn.Properties.Description}: ${name}`).toContain(name);
    }
  });

  it('gives BASE_URL (the dashboard distribution, which fronts the API) only to the functions that build redirect and webhook addresses', () => {
    const withBaseUrl = handlerNames.filter((h) => 'BASE_URL' in functionOf(h)[1].Properties.Environment.Variables);
    expect(withBaseUrl.sort()).toEqual(['api', 'oauth-callback']);
    const [distributionId] = resourcesOf('AWS::CloudFront::Distribution')[0]!;
    expect(functionOf('api')[1].Properties.Environment.Variables.BASE_URL).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }]],
    });
  });

  it('gives DASHBOARD_URL (where the OAuth callback sends the browser back) to the OAuth callback only', () => {
    const withDashboardUrl = handlerNames.filter((h) => 'DASHBOARD_URL' in functionOf(h)[1].Properties.Environment.Variables);
    expect(withDashboardUrl).toEqual(['oauth-callback']);
    const [distributionId] = resourcesOf('AWS::CloudFront::Distribution')[0]!;
    expect(functionOf('oauth-callback')[1].Properties.Environment.Variables.DASHBOARD_URL).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, '/']],
    });
  });
});

describe('credentials key permissions', () => {
  const credentialsKeyId = () => (functionOf('api')[1].Properties.Environment.Variables.CREDENTIALS_KEY_ID as GetAtt)['Fn::GetAtt'][0];
  const onCredentialsKey = () => statements().filter(({ statement }) => references(statement.Resource, credentialsKeyId()));

  it('binds every grant to the {account, connector} encryption context; the receivers’ to the webhook secret’s alone', () => {
    expect(onCredentialsKey().length).toBeGreaterThan(0);
    const vaultContext = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector'] },
      Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
    };
    const webhookContext = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector', 'purpose'] },
      StringEquals: { 'kms:EncryptionContext:purpose': 'webhook' },
      Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
    };
    for (const { statement, handlers } of onCredentialsKey()) {
      expect([vaultContext, webhookContext]).toContainEqual(statement.Condition);
      expect(asList(statement.Resource)).toHaveLength(1);
      // The receiver holds the webhook secret's grant and nothing else on the key.
      if (handlers.some((h) => h === 'webhook-receiver')) {
        expect(statement.Condition).toEqual(webhookContext);
        expect(actionsOf(statement)).toEqual(['kms:Decrypt']);
      }
    }
  });

  it('has its own key policy: the account administers the key but cannot use it; each gateway role is named with its context', () => {
    const policy = resource<{ KeyPolicy: { Statement: Array<Statement & { Sid?: string; Principal: { AWS: unknown } }> } }>(credentialsKeyId()).Properties.KeyPolicy.Statement;
    const admin = policy.find((statement) => statement.Sid === 'AccountAdministersButCannotUse')!;
    expect(JSON.stringify(admin.Principal)).toContain(':root');
    const use = ['kms:Encrypt', 'kms:Decrypt', 'kms:ReEncryptFrom', 'kms:ReEncryptTo', 'kms:GenerateDataKey', 'kms:GenerateDataKeyWithoutPlaintext', 'kms:CreateGrant'];
    for (const action of actionsOf(admin)) for (const forbidden of use) expect(wildcardMatch(action, forbidden, true), `${action} allows ${forbidden}`).toBe(false);
    // PutKeyPolicy stays with the account: the break-glass path (docs/permissions.md), and no lockout.
    expect(actionsOf(admin)).toContain('kms:Put*');
    const users = policy.filter((statement) => statement !== admin);
    // One statement per role and purpose, naming the role (never the account), each with the vault's context.
    expect(users.map((statement) => statement.Sid).sort()).toEqual(
      ['CredentialsApi', 'WebhookSecretApi', 'CredentialsOauthCallback', 'WebhookSecretWebhookReceiver', 'CredentialsWebhookEvent', 'CredentialsSyncJob', 'CredentialsIngest', 'CredentialsConversationTask', 'CredentialsPoller'].sort(),
    );
    for (const statement of users) {
      expect(JSON.stringify(statement.Principal)).not.toContain(':root');
      expect(statement.Condition?.Null).toEqual({ 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' });
    }
  });

  it('lets only the functions that open credentials decrypt, and only api, oauth-callback and the poller (an SSE token renewed) generate data keys', () => {
    const allowedTo = (action: string) =>
      [...new Set(onCredentialsKey().filter(({ statement }) => actionsOf(statement).includes(action)).flatMap(({ handlers }) => handlers))].sort();
    expect(allowedTo('kms:Decrypt')).toEqual(
      ['api', 'oauth-callback', 'webhook-receiver', 'webhook-event', 'sync-job', 'ingest', 'conversation-task', 'poller'].sort(),
    );
    expect(allowedTo('kms:GenerateDataKey')).toEqual(['api', 'oauth-callback', 'poller']);
    // No other statement reaches the key: no KMS action on "*" and no wildcard KMS action on this key.
    for (const { statement } of statements()) {
      if (actionsOf(statement).some((a) => a.startsWith('kms:'))) expect(asList(statement.Resource)).not.toContain('*');
    }
    for (const { statement } of onCredentialsKey()) expect(actionsOf(statement).every((a) => !a.includes('*'))).toBe(true);
  });

  it('gives CREDENTIALS_KEY_ID exactly to the functions that may decrypt', () => {
    for (const handler of handlerNames) {
      const hasVariable = 'CREDENTIALS_KEY_ID' in functionOf(handler)[1].Properties.Environment.Variables;
      const canDecrypt = onCredentialsKey().some(({ handlers }) => handlers.includes(handler));
      expect(hasVariable, handler).toBe(canDecrypt);
    }
  });
});

describe('each role, exactly (local/iam/role-policies.json, which the local runtime enforces)', () => {
  let policies: RolePolicies;
  beforeAll(() => {
    policies = policiesFromTemplate(template.toJSON() as Parameters<typeof policiesFromTemplate>[0], constructPaths(stack));
  });
  const name = (arn: string) =>
    ({
      [localArns.table]: 'table',
      [`${localArns.table}/index/gsi1`]: 'gsi1',
      [localArns.dataKey]: 'data key',
      [localArns.credentialsKey]: 'credentials key',
      [localArns.queues.syncJobs]: 'sync queue',
      [localArns.queues.webhookEvents]: 'webhook queue',
      [localArns.queues.ingestion]: 'ingestion queue',
      [localArns.queues.pollerNotices]: 'notice queue',
      [localArns.bus]: 'bus',
      [localArns.lifecycle]: 'lifecycle',
      [localArns.fleet]: 'fleet',
      [localArns.originSecret]: 'origin secret',
    })[arn] ?? arn;
  const conditionLabel = (condition: unknown) => {
    if (!condition) return '';
    const text = JSON.stringify(condition);
    return text.includes('LeadingKeys') ? ' (delivery counters)' : text.includes('webhook') ? ' (webhook secret)' : ' (vault context)';
  };
  /** Each function's grants as `action on resource`, without the runtime's own (logs, X-Ray). */
  const grantsOf = (handler: HandlerName) =>
    policies.functions[handler].statements
      .flatMap((statement) => [statement.Action].flat().flatMap((action) => [statement.Resource ?? '*'].flat().map((resource) => `${action} on ${name(resource)}${conditionLabel(statement.Condition)}`)))
      .filter((grant) => !/^(logs|xray):/.test(grant))
      .sort();
  // The table's actions on the table alone; Query on gsi1 only where the code queries it.
  const table = (actions: string[], options: { index?: boolean } = {}) => [...actions.map((a) => `dynamodb:${a} on table`), ...(options.index ? ['dynamodb:Query on gsi1'] : []), 'kms:Decrypt on data key'];
  const consumes = (queue: string) => ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueUrl', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'].map((a) => `${a} on ${queue}`);
  // The HTTP functions read the value the distribution sends in its origin header (lib/origin-verification.ts).
  const originSecret = 'secretsmanager:GetSecretValue on origin secret';
  const expected: Record<HandlerName, string[]> = {
    api: [originSecret, ...table(['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'], { index: true }), 'kms:Decrypt on credentials key (vault context)', 'kms:GenerateDataKey on credentials key (vault context)', 'kms:GenerateDataKey on credentials key (webhook secret)', 'sqs:SendMessage on sync queue', 'sqs:SendMessage on ingestion queue', 'events:PutEvents on bus', 'states:StartExecution on lifecycle', 'states:StartExecution on fleet', 'states:SendTaskSuccess on lifecycle', 'sqs:SendMessage on notice queue'],
    'oauth-callback': [originSecret, ...table(['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']), 'kms:Decrypt on credentials key (vault context)', 'kms:GenerateDataKey on credentials key (vault context)'],
    'webhook-receiver': [originSecret, ...table(['GetItem']), 'dynamodb:UpdateItem on table (delivery counters)', 'kms:Decrypt on credentials key (webhook secret)', 'sqs:SendMessage on webhook queue'],
    'webhook-event': [...consumes('webhook queue'), ...table(['GetItem', 'PutItem', 'UpdateItem']), 'kms:Decrypt on credentials key (vault context)', 'events:PutEvents on bus'],
    'sync-dispatcher': [...table([], { index: true }), 'sqs:SendMessage on sync queue'],
    'sync-job': [...consumes('sync queue'), ...table(['GetItem', 'Query', 'BatchGetItem', 'PutItem', 'UpdateItem', 'BatchWriteItem']), 'kms:Decrypt on credentials key (vault context)', 'sqs:SendMessage on sync queue', 'sqs:SendMessage on ingestion queue'],
    ingest: [...consumes('ingestion queue'), ...table(['GetItem', 'UpdateItem']), 'kms:Decrypt on credentials key (vault context)'],
    'conversation-task': [...table(['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']), 'kms:Decrypt on credentials key (vault context)', 'sqs:SendMessage on ingestion queue', 'events:PutEvents on bus', 'states:StartExecution on fleet', 'states:SendTaskSuccess on lifecycle'],
    'poller-fleet-plan': table(['Query', 'UpdateItem']),
    poller: [...table(['GetItem', 'Query', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']), 'kms:Decrypt on credentials key (vault context)', 'kms:GenerateDataKey on credentials key (vault context)', 'sqs:SendMessage on ingestion queue', 'events:PutEvents on bus', 'states:StartExecution on fleet', 'states:SendTaskSuccess on lifecycle', 'sqs:SendMessage on notice queue', 'sqs:ReceiveMessage on notice queue', 'sqs:DeleteMessage on notice queue', 'sqs:ChangeMessageVisibility on notice queue'],
  };

  for (const handler of handlerNames) {
    it(`${handler} holds exactly what its code calls`, () => {
      expect(grantsOf(handler)).toEqual([...expected[handler]].sort());
    });
  }

  it('no role may Scan, read streams, or use the data key beyond Decrypt', () => {
    for (const handler of handlerNames) {
      const grants = grantsOf(handler).join('\n');
      expect(grants).not.toMatch(/dynamodb:(Scan|GetRecords|GetShardIterator|DescribeStream|ListStreams)/);
      expect(grants).not.toMatch(/kms:(Encrypt|ReEncrypt|GenerateDataKey\*).* on data key/);
    }
  });

  it('the local runtime enforces exactly these (local/iam/role-policies.json; `npm run iam-policies` rewrites it)', () => {
    expect(policies).toEqual(JSON.parse(readFileSync(ROLE_POLICIES_FILE, 'utf8')));
  });
});
