import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, SQSEvent } from 'aws-lambda';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { json } from '../../shared/api/http';
import { ProblemError, problems } from '../../shared/api/problem';
import { taskFunction } from '../../shared/handler/engine';
import { httpFunction } from '../../shared/handler/http-function';
import { queueFunction } from '../../shared/handler/queue-function';
import { log, setLogSink } from '../../shared/log/logger';
import { registerSecret } from '../../shared/log/redaction';
import { metrics, recordMetric, setMetricSink, type EmfDocument } from '../../shared/metrics/gateway-metrics';
import { ORIGIN_HEADER } from '../../shared/origin/origin-check';
import { useOriginSecret, type OriginSecretSource } from '../../shared/origin/origin-secret';
import { generatedKey } from '../support/local-runtime';

/**
 * Each middleware of the handler engine (shared/handler/), shown by its effect on a handler that
 * does nothing else: problem+json from thrown errors, security headers, the log context, the
 * metrics flush, SQS partial batch responses, and the raw body reaching the handler untouched.
 */
let lines: Array<Record<string, unknown>> = [];
let documents: EmfDocument[] = [];
let restoreLogs: ReturnType<typeof setLogSink>;
let restoreMetrics: ReturnType<typeof setMetricSink>;
// Every HTTP function first checks the distribution's origin header (test/handler/origin-check.test.ts): these events carry it.
const originValue = generatedKey('origin_');
let restoreOrigin: OriginSecretSource | undefined;
beforeEach(() => {
  restoreOrigin = useOriginSecret(async () => originValue);
  lines = [];
  documents = [];
  restoreLogs = setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  restoreMetrics = setMetricSink((document) => documents.push(document));
});
afterEach(() => {
  useOriginSecret(restoreOrigin);
  setLogSink(restoreLogs);
  setMetricSink(restoreMetrics);
});

function httpEvent(options: { path?: string; account?: string; body?: string; base64?: boolean; requestId?: string } = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'POST /test',
    rawPath: options.path ?? '/test',
    rawQueryString: options.account ? `account=${options.account}` : '',
    ...(options.account ? { queryStringParameters: { account: options.account } } : {}),
    headers: { 'content-type': 'application/json', [ORIGIN_HEADER]: originValue },
    requestContext: { http: { method: 'POST', path: options.path ?? '/test' }, requestId: options.requestId ?? 'req-1' },
    ...(options.body !== undefined ? { body: options.body } : {}),
    isBase64Encoded: options.base64 ?? false,
  } as unknown as APIGatewayProxyEventV2;
}
const header = (response: APIGatewayProxyResultV2, name: string): string[] =>
  typeof response === 'string' ? [] : Object.entries(response.headers ?? {}).filter(([key]) => key.toLowerCase() === name).map(([, value]) => String(value));
const statusOf = (response: APIGatewayProxyResultV2) => (typeof response === 'string' ? 200 : response.statusCode);
const bodyOf = (response: APIGatewayProxyResultV2) => JSON.parse(typeof response === 'string' ? response : (response.body ?? '')) as Record<string, unknown>;

describe('errors → application/problem+json', () => {
  it('a thrown domain error becomes its problem document, with its status and remedy', async () => {
    const handler = httpFunction(async () => {
      throw problems.conflict('The data connection does not allow writing engagement data.', 'Set direction to write or read_write.');
    });
    const response = await handler(httpEvent());
    expect(statusOf(response)).toBe(409);
    expect(header(response, 'content-type')).toEqual(['application/problem+json']);
    expect(bodyOf(response)).toEqual({
      type: 'urn:integration-gateway:problem:conflict',
      title: 'Conflict',
      status: 409,
      detail: 'The data connection does not allow writing engagement data.',
      remedy: 'Set direction to write or read_write.',
    });
    expect(lines.find((line) => line.message === 'request refused')).toMatchObject({ status: 409, requestId: 'req-1' });
  });

  it('anything unexpected becomes a bare 500 that reveals nothing, and is logged with the error', async () => {
    const secret = generatedKey('sk_live_');
    const handler = httpFunction(async () => {
      throw new Error(`database exploded near ${secret}`);
    });
    const response = await handler(httpEvent());
    expect(statusOf(response)).toBe(500);
    expect(bodyOf(response)).toMatchObject({ type: 'urn:integration-gateway:problem:internal', status: 500 });
    expect(JSON.stringify(response)).not.toContain('exploded');
    const logged = lines.find((line) => line.message === 'request failed');
    expect(logged).toMatchObject({ level: 'ERROR', status: 500, error: { name: 'Error' } });
    expect(JSON.stringify(logged)).toContain('database exploded');
    expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it('headers a problem asks for are sent (a 401 names its scheme)', async () => {
    const handler = httpFunction(async () => {
      throw new ProblemError({ type: 'urn:x', title: 'Unauthorized', status: 401 }, { 'www-authenticate': 'Basic realm="x"' });
    });
    expect(header(await handler(httpEvent()), 'www-authenticate')).toEqual(['Basic realm="x"']);
  });
});

describe('security headers', () => {
  const expected = {
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
  it('are on every answer, success and problem, each exactly once', async () => {
    const ok = await httpFunction(async () => json(200, { ok: true }))(httpEvent());
    const refused = await httpFunction(async () => {
      throw problems.notFound('nothing here');
    })(httpEvent());
    for (const response of [ok, refused]) {
      for (const [name, value] of Object.entries(expected)) expect(header(response, name), name).toEqual([value]);
      expect(header(response, 'strict-transport-security')[0]).toMatch(/^max-age=\d+; includeSubDomains/);
      expect(header(response, 'content-security-policy')[0]).toContain("default-src 'none'");
      expect(header(response, 'content-security-policy')[0]).toContain("frame-ancestors 'none'");
    }
  });

  it("an answer's own header wins (an HTML page's Content-Security-Policy), never sent twice", async () => {
    const page = "default-src 'none'; style-src 'unsafe-inline'";
    const response = await httpFunction(async () => ({ status: 200, headers: { 'content-type': 'text/html', 'content-security-policy': page }, body: '<p>ok</p>' }))(httpEvent());
    expect(header(response, 'content-security-policy')).toEqual([page]);
    expect(header(response, 'x-content-type-options')).toEqual(['nosniff']);
  });
});

describe('the raw body', () => {
  it('reaches the handler exactly as sent: no JSON body parser in front (signatures are checked over these bytes)', async () => {
    const sent = '{ "b":1,\n  "a" : "é\\u00e9" }  ';
    let received: Buffer | undefined;
    const handler = httpFunction(async (request) => {
      received = request.rawBody;
      return json(200, {});
    });
    await handler(httpEvent({ body: sent }));
    expect(received?.toString('utf8')).toBe(sent);
    const binary = Buffer.from([0x7b, 0xff, 0x00, 0x7d]);
    await handler(httpEvent({ body: binary.toString('base64'), base64: true }));
    expect(received?.equals(binary)).toBe(true);
  });
});

describe('log context', () => {
  it('every line of an invocation carries its request and account ids; concurrent invocations never mix', async () => {
    const handler = httpFunction(async (request) => {
      await new Promise((resolve) => setTimeout(resolve, request.query.account === 'acme' ? 20 : 1));
      log.info('working', { step: 1 });
      return json(200, {});
    });
    await Promise.all([
      handler(httpEvent({ account: 'acme', requestId: 'req-acme' })),
      handler(httpEvent({ path: '/api/v1/accounts/globex/connections', requestId: 'req-globex' })),
      handler(httpEvent({ account: 'Not An Id!', requestId: 'req-junk' })),
    ]);
    const working = lines.filter((line) => line.message === 'working');
    expect(working).toHaveLength(3);
    expect(working.find((line) => line.requestId === 'req-acme')).toMatchObject({ accountId: 'acme', level: 'INFO', service: 'integration-gateway' });
    expect(working.find((line) => line.requestId === 'req-globex')).toMatchObject({ accountId: 'globex' });
    // A value that is not shaped like an account id is not logged as one.
    expect(working.find((line) => line.requestId === 'req-junk')).not.toHaveProperty('accountId');
    // Nothing leaks into lines written outside an invocation.
    log.info('outside');
    expect(lines.find((line) => line.message === 'outside')).not.toHaveProperty('requestId');
  });
});

describe('metrics flushed after each invocation', () => {
  it('as CloudWatch EMF, one document per dimension set, dimensions from the catalogue only, no account data', async () => {
    const handler = taskFunction(async () => {
      recordMetric.webhookVerified('payment');
      recordMetric.webhookVerified('payment');
      recordMetric.webhookRefused('billing', 'signature');
      recordMetric.recordsSynced('billing', 'customers', 120);
      recordMetric.ingestionRecords(48, 2);
      recordMetric.liveConversations(12);
      recordMetric.pollsOpen(0);
      log.info('done', { accountId: 'acme' });
      return 'ok';
    });
    await handler({});
    expect(documents.length).toBeGreaterThanOrEqual(4);
    const byMetric = new Map<string, Record<string, unknown>>();
    for (const document of documents) {
      const directive = document._aws.CloudWatchMetrics[0]!;
      expect(directive.Namespace).toBe('IntegrationGateway');
      for (const { Name } of directive.Metrics) byMetric.set(Name, { ...(document as unknown as Record<string, unknown>), dimensions: directive.Dimensions });
      // No account id, anywhere in the document: not a dimension, not a property.
      expect(JSON.stringify(document)).not.toContain('acme');
      for (const set of directive.Dimensions) expect(set.every((name) => ['service', 'connector', 'object', 'reason'].includes(name))).toBe(true);
    }
    expect(byMetric.get('WebhooksVerified')).toMatchObject({ connector: 'payment', service: 'integration-gateway', WebhooksVerified: [1, 1], dimensions: [['service', 'connector']] });
    expect(byMetric.get('WebhooksRefused')).toMatchObject({ connector: 'billing', reason: 'signature', WebhooksRefused: 1 });
    expect(byMetric.get('RecordsSynced')).toMatchObject({ connector: 'billing', object: 'customers', RecordsSynced: 120, dimensions: [['service', 'connector', 'object']] });
    expect(byMetric.get('IngestionRecordsAccepted')).toMatchObject({ IngestionRecordsAccepted: 48, dimensions: [['service']] });
    expect(byMetric.get('LiveConversations')).toMatchObject({ LiveConversations: 12 });
    // Zero is sent as nothing (the alarms read missing data as 0).
    expect(byMetric.has('PollsOpen')).toBe(false);
    // Flushed: the next invocation starts empty.
    documents = [];
    await taskFunction(async () => 'nothing')({});
    expect(documents).toEqual([]);
  });

  it('are flushed when the handler throws too', async () => {
    const failing = taskFunction(async () => {
      recordMetric.syncRun('payment', 'failed');
      throw new Error('step failed');
    });
    await expect(failing({})).rejects.toThrow('step failed');
    const names = documents.flatMap((document) => document._aws.CloudWatchMetrics[0]!.Metrics.map((metric) => metric.Name));
    expect(names).toEqual(expect.arrayContaining(['SyncRuns', 'SyncFailures']));
  });

  it('an invocation that counts what an earlier one did sends the same document, serialized once, with its own timestamp', async () => {
    const serialized = vi.spyOn(Metrics.prototype, 'serializeMetrics');
    const verified = (times: number) =>
      taskFunction(async () => {
        for (let n = 0; n < times; n += 1) recordMetric.webhookVerified('billing');
      })({});
    try {
      await verified(1);
      const first = documents[0]!;
      const before = serialized.mock.calls.length;
      await new Promise((resolve) => setTimeout(resolve, 5));
      await verified(1);
      expect(serialized.mock.calls.length).toBe(before);
      const second = documents[1]!;
      expect(second._aws.Timestamp).toBeGreaterThan(first._aws.Timestamp);
      expect({ ...second, _aws: { ...second._aws, Timestamp: 0 } }).toEqual({ ...first, _aws: { ...first._aws, Timestamp: 0 } });
      expect(second).toMatchObject({ connector: 'billing', WebhooksVerified: 1 });
      // Other content is serialized anew.
      await verified(2);
      expect(serialized.mock.calls.length).toBe(before + 1);
      expect(documents[2]).toMatchObject({ connector: 'billing', WebhooksVerified: [1, 1] });
      expect(documents).toHaveLength(3);
    } finally {
      serialized.mockRestore();
    }
  });

  it('a dimension the catalogue does not name (an account id) is refused, not published', () => {
    expect(() => metrics.count('WebhooksVerified', 1, { connector: 'payment', accountId: 'acme' } as never)).toThrow(/takes the dimensions connector/);
    expect(() => metrics.count('RecordsSynced', 1, { connector: 'payment' })).toThrow(/connector, object/);
    metrics.publishStoredMetrics();
    expect(documents).toEqual([]);
  });
});

describe('SQS partial batch responses', () => {
  const Message = z.object({ accountId: z.string(), n: z.number() });
  const record = (messageId: string, body: string) => ({
    messageId,
    receiptHandle: messageId,
    body,
    attributes: { ApproximateReceiveCount: '2', SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:111122223333:test',
    awsRegion: 'us-east-1',
  });

  it('reports exactly the records that failed or did not parse; each failure is logged with its message and account', async () => {
    const done: number[] = [];
    const handler = queueFunction(
      Message,
      async (message) => {
        if (message.n === 2) throw new Error('platform unavailable');
        log.info('applied', { n: message.n });
        done.push(message.n);
      },
      { accountOf: (message) => message.accountId },
    );
    const event: SQSEvent = {
      Records: [
        record('m1', JSON.stringify({ accountId: 'acme', n: 1 })),
        record('m2', JSON.stringify({ accountId: 'globex', n: 2 })),
        record('m3', '{"not":"a message"}'),
        record('m4', 'not json'),
        record('m5', JSON.stringify({ accountId: 'acme', n: 5 })),
      ],
    };
    const response = await handler(event);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(['m2', 'm3', 'm4']);
    expect(done.sort()).toEqual([1, 5]);
    expect(lines.filter((line) => line.message === 'applied').map((line) => [line.messageId, line.accountId])).toEqual(
      expect.arrayContaining([
        ['m1', 'acme'],
        ['m5', 'acme'],
      ]),
    );
    const failure = lines.find((line) => line.message === 'message failed; it will be retried' && line.messageId === 'm2');
    expect(failure).toMatchObject({ accountId: 'globex', receiveCount: '2', error: { message: 'platform unavailable' } });
  });

  it('a batch where every record fails is reported record by record, not thrown', async () => {
    const handler = queueFunction(Message, async () => {
      throw new Error('down');
    });
    const response = await handler({ Records: [record('a', JSON.stringify({ accountId: 'acme', n: 1 })), record('b', JSON.stringify({ accountId: 'acme', n: 2 }))] });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'a' }, { itemIdentifier: 'b' }]);
  });
});

describe('the Powertools logger', () => {
  it('passes every line through the redaction step: no secret in any field, message or error', async () => {
    const apiKey = generatedKey('live_');
    registerSecret(apiKey);
    const secretKey = generatedKey('sk_test_');
    const handler = taskFunction(async () => {
      log.with({ credentials: { apiKey } }).warn(`platform refused ${secretKey}`, { error: new Error(`Invalid API Key provided: ${secretKey}`), header: `Bearer ${generatedKey('tok')}`, note: `key ${apiKey}` });
      return 'ok';
    });
    await handler({});
    const text = JSON.stringify(lines);
    expect(lines[0]).toMatchObject({ level: 'WARN', service: 'integration-gateway', message: 'platform refused [redacted]' });
    expect(typeof lines[0]!.timestamp).toBe('string');
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain(secretKey);
    expect(text).not.toMatch(/Bearer tok/);
  });
});
