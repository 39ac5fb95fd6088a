import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startLocalDynamo } from '../local/local-dynamo';
import { ORIGIN_HEADER } from '../shared/origin/origin-check';
import { sdkTableClient } from '../shared/store/sdk-table-client';
import * as store from '../shared/store/store';

/**
 * The first request of a fresh process: a handler's bundle imported and its first request answered,
 * in a Node process of its own, as a cold Lambda answers the delivery, page or playbook read that
 * woke it. DynamoDB is dynalite on loopback; every other AWS service is pointed at a closed
 * loopback port, so a request that reached one would fail at once rather than wait (each request
 * below is one the function answers from the table alone, and the outcome is checked).
 */

const ACCOUNT = 'bench-cold';
const at = () => new Date().toISOString();
/** The origin header's value for these runs: every HTTP function reads it from Secrets Manager on its first request. */
const ORIGIN_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:IntegrationGateway-origin-verify-AbCdEf';
const originValue = randomBytes(32).toString('base64url');
const http = (method: string, path: string, query: Record<string, string>, headers: Record<string, string>, body = '', claims?: Record<string, unknown>) => ({
  version: '2.0',
  routeKey: `${method} ${path}`,
  rawPath: path,
  rawQueryString: new URLSearchParams(query).toString(),
  queryStringParameters: query,
  // As the distribution sends it.
  headers: { ...headers, [ORIGIN_HEADER]: originValue },
  requestContext: { http: { method, path, sourceIp: '127.0.0.1' }, requestId: randomUUID(), ...(claims ? { authorizer: { jwt: { claims } } } : {}) },
  body,
  isBase64Encoded: false,
});
const sqs = (body: unknown) => ({
  Records: [{ messageId: randomUUID(), receiptHandle: 'first', body: JSON.stringify(body), attributes: { ApproximateReceiveCount: '1' }, messageAttributes: {}, eventSource: 'aws:sqs' }],
});

/**
 * Each function's first request, and what answering it looks like (an HTTP status under 500, or a
 * task's result). Each reads the table: the connection, account or lease it would act on.
 */
export const FIRST_REQUESTS: Record<string, { event: () => unknown; answered: (result: unknown) => boolean }> = {
  // A payment delivery for an account with no payment connection: checked, the connection looked up, 404.
  'webhook-receiver': {
    event: () => http('POST', '/webhooks/payments', { account: ACCOUNT }, { 'content-type': 'application/json', 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` }, '{"id":"evt_1"}'),
    answered: (result) => status(result) === 404,
  },
  // The dashboard's first read after a quiet hour: the account's connections.
  api: {
    event: () => http('GET', `/api/v1/accounts/${ACCOUNT}/connections`, {}, { accept: 'application/json' }, '', { sub: 'bench-user', token_use: 'id', 'custom:account_id': ACCOUNT }),
    answered: (result) => status(result) === 200,
  },
  // A return from the platform's sign-in with a state the gateway never issued: looked up, refused.
  'oauth-callback': {
    event: () => http('GET', '/auth/crmdata/callback', { code: 'c', state: 'unknown-state' }, {}),
    answered: (result) => (status(result) ?? 500) < 500,
  },
  'sync-dispatcher': { event: () => ({ frequency: 'hourly' }), answered: (result) => (result as { enqueued?: unknown }).enqueued === 0 },
  // A job for a connection that is gone: read, and dropped.
  'sync-job': {
    event: () => sqs({ accountId: ACCOUNT, connector: 'payment', object: 'customers', trigger: 'manual', requestedAt: at() }),
    answered: (result) => Array.isArray((result as { batchItemFailures?: unknown[] }).batchItemFailures) && (result as { batchItemFailures: unknown[] }).batchItemFailures.length === 0,
  },
  // An event of a connection that is gone: claimed, and recorded ignored.
  'webhook-event': {
    event: () => sqs({ accountId: ACCOUNT, connector: 'payment', eventId: 'evt_first', eventType: 'customer.updated', receivedAt: at(), payload: { id: 'evt_first', type: 'customer.updated', created: 1, data: { object: { id: 'cus_1', object: 'customer' } } } }),
    answered: (result) => (result as { batchItemFailures?: unknown[] }).batchItemFailures?.length === 0,
  },
  // Engagement events of an account with no data connection: looked up, left for a retry.
  ingest: {
    event: () => sqs({ accountId: ACCOUNT, event: { event_id: 'e1', customer_email: 'first@example.com', event_type: 'conversation_ended', event_timestamp: at(), conversation_id: 'c1', channel: 'chat' } }),
    answered: (result) => Array.isArray((result as { batchItemFailures?: unknown[] }).batchItemFailures),
  },
  // The fleet's round: the lease taken, the live conversations counted (none), the plan returned.
  'poller-fleet-plan': { event: () => ({ executionId: `first-${randomUUID()}`, round: 1 }), answered: (result) => typeof result === 'object' && result !== null && !('error' in result) },
  // A poller whose round is over as it starts: it claims nothing and hands over.
  poller: { event: () => ({ shard: 0, shards: 1, endsAt: Date.now() }), answered: (result) => (result as { shard?: unknown }).shard === 0 },
  // A lifecycle's failure step for a conversation that is not stored: read, and refused as Step Functions would see it.
  'conversation-task': {
    event: () => ({ step: 'mark-failed', input: { accountId: ACCOUNT, conversationId: 'first-conversation', error: { Error: 'States.Timeout' } } }),
    answered: (result) => /first-conversation of account bench-cold is not stored/.test(String((result as { error?: unknown }).error)),
  },
};

function status(result: unknown): number | undefined {
  return typeof result === 'object' && result !== null ? (result as { statusCode?: number }).statusCode : undefined;
}

/** A fresh process: import the bundle, answer the first request; both timed from before the import. */
const CHILD = `
const event = JSON.parse(process.env.FIRST_EVENT);
const context = { functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, awsRequestId: 'first', getRemainingTimeInMillis: () => 60000 };
const started = performance.now();
const { handler } = await import(process.env.FIRST_BUNDLE);
const imported = performance.now();
let result;
try { result = await handler(event, context); } catch (error) { result = { error: String(error && error.message || error).slice(0, 200) }; }
process.stdout.write(JSON.stringify({ importMs: imported - started, firstRequestMs: performance.now() - started, result }));
`;

export interface FirstRequestRun {
  importMs: number;
  firstRequestMs: number;
  result: unknown;
}

/**
 * Secrets Manager's GetSecretValue on loopback, for the origin secret the HTTP functions read once per
 * container (no local stand-in exists, and a mock cannot reach a child process). It answers that one
 * action, in the service's JSON shape, and nothing else.
 */
async function startOriginSecretEndpoint(): Promise<{ url: string; stop(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue') {
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ __type: 'InvalidRequestException', message: 'only GetSecretValue' }));
        return;
      }
      const answer = { ARN: ORIGIN_SECRET_ARN, Name: 'IntegrationGateway-origin-verify', VersionId: randomUUID(), SecretString: originValue, VersionStages: ['AWSCURRENT'], CreatedDate: Date.now() / 1000 };
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Dynalite with the bench account in it (and the origin secret's endpoint), for the runs; stop it after. */
export async function firstRequestTable(): Promise<{ env: NodeJS.ProcessEnv; stop(): Promise<void> }> {
  const dynamo = await startLocalDynamo({ tableName: 'IntegrationGateway-Table' });
  const secrets = await startOriginSecretEndpoint();
  await store.putAccount({ client: sdkTableClient(dynamo.client), tableName: dynamo.tableName }, { accountId: ACCOUNT, name: 'bench', integrationsEnabled: true, createdAt: at(), updatedAt: at() });
  return {
    env: {
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
      ORIGIN_SECRET_ARN,
      TABLE_NAME: dynamo.tableName,
      AWS_MAX_ATTEMPTS: '1',
    },
    stop: async () => {
      await secrets.stop();
      await dynamo.stop();
    },
  };
}

/** Run beside this process's dynalite (so not a synchronous child: the table answers from here). */
export async function firstRequest(name: string, bundle: string, env: NodeJS.ProcessEnv): Promise<FirstRequestRun> {
  const request = FIRST_REQUESTS[name];
  if (!request) throw new Error(`no first request for ${name}`);
  const { stdout: output } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...env, FIRST_BUNDLE: bundle, FIRST_EVENT: JSON.stringify(request.event()), LOG_LEVEL: 'error' },
  });
  const run = JSON.parse(output.slice(output.lastIndexOf('{"importMs"'))) as FirstRequestRun;
  if (!request.answered(run.result)) throw new Error(`${name}: the first request was not answered as expected: ${JSON.stringify(run.result).slice(0, 300)}`);
  return run;
}
