import { createHash } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { json } from '../../shared/api/http';
import { GatewayEnvironment } from '../../shared/config';
import { useGateway, type Gateway } from '../../shared/gateway';
import { httpFunction } from '../../shared/handler/http-function';
import { log, setLogSink } from '../../shared/log/logger';
import { ORIGIN_HEADER, originVerified } from '../../shared/origin/origin-check';
import { useOriginSecret, type OriginSecretSource } from '../../shared/origin/origin-secret';
import { useAwsStandIn } from '../support/use-aws-stand-in';
import { generatedKey } from '../support/local-runtime';

/**
 * The API only through the distribution: every HTTP function (httpFunction) refuses a request
 * without the distribution's origin header, or with a wrong one, before its own work runs; with
 * the right one the work runs and never sees the header. In AWS the value is read from Secrets
 * Manager once per warm container (mocked here: it has no local stand-in).
 */
const event = (headers: Record<string, string>): APIGatewayProxyEventV2 =>
  ({
    version: '2.0',
    routeKey: 'POST /webhooks/payments',
    rawPath: '/webhooks/payments',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...headers },
    requestContext: { http: { method: 'POST', path: '/webhooks/payments' }, requestId: 'origin-1' },
    body: '{}',
    isBase64Encoded: false,
  }) as unknown as APIGatewayProxyEventV2;
const answer = (response: APIGatewayProxyResultV2) => (typeof response === 'string' ? { statusCode: 200, headers: {}, body: response } : response);

let lines: string[] = [];
let restoreLogs: ReturnType<typeof setLogSink>;
beforeEach(() => {
  lines = [];
  restoreLogs = setLogSink((line) => lines.push(line));
});
afterEach(() => setLogSink(restoreLogs));

describe('originVerified (pure)', () => {
  const expected = generatedKey('origin_');
  const digest = createHash('sha256').update(expected).digest();
  it('accepts exactly the expected value', () => {
    expect(originVerified(expected, digest)).toBe(true);
    expect(originVerified(undefined, digest)).toBe(false);
    expect(originVerified('', digest)).toBe(false);
    expect(originVerified(expected.slice(0, -1), digest)).toBe(false);
    expect(originVerified(`${expected}x`, digest)).toBe(false);
    expect(originVerified(expected.toUpperCase(), digest)).toBe(false);
  });
});

describe('every HTTP function checks the origin header first', () => {
  const value = generatedKey('origin_');
  let restore: OriginSecretSource | undefined;
  let ran: Array<Record<string, string | undefined>>;
  const handler = httpFunction(async (request) => {
    ran.push({ ...request.headers });
    return json(200, { ok: true });
  });
  beforeEach(() => {
    ran = [];
    restore = useOriginSecret(async () => value);
  });
  afterEach(() => useOriginSecret(restore));

  it.each([
    ['without the header', {}],
    ['with a wrong value', { [ORIGIN_HEADER]: generatedKey('origin_') }],
    ['with the value cut short', { [ORIGIN_HEADER]: value.slice(0, 20) }],
  ])('refuses a request %s: 403 problem+json naming the way in, and its work never runs', async (_name, headers) => {
    const response = answer(await handler(event(headers)));
    expect(response.statusCode).toBe(403);
    expect(response.headers?.['content-type']).toBe('application/problem+json');
    expect(JSON.parse(response.body ?? '')).toMatchObject({ type: 'urn:integration-gateway:problem:not-through-gateway', status: 403, remedy: expect.stringContaining('ApiUrl') });
    expect(ran).toEqual([]);
    expect(JSON.stringify(response)).not.toContain(value);
    expect(lines.join('\n')).not.toContain(value);
  });

  it('lets the distribution’s request through, without the header: nothing downstream sees it', async () => {
    const sent = event({ [ORIGIN_HEADER]: value });
    const response = answer(await handler(sent));
    expect(response.statusCode).toBe(200);
    expect(ran).toHaveLength(1);
    expect(ran[0]).not.toHaveProperty(ORIGIN_HEADER);
    expect(JSON.stringify(ran)).not.toContain(value);
    // The caller's event is left as it was.
    expect(sent.headers[ORIGIN_HEADER]).toBe(value);
    expect(lines.join('\n')).not.toContain(value);
    // Known to the log redaction from then on: a line that carried it by mistake shows [redacted].
    log.info('a careless line', { headers: { [ORIGIN_HEADER]: value } });
    expect(lines.at(-1)).toContain('[redacted]');
    expect(lines.at(-1)).not.toContain(value);
  });
});

describe('in AWS: the value from Secrets Manager, read once per container', () => {
  const secretArn = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:origin-verify-AbCdEf';
  const value = generatedKey('origin_');
  // Secrets Manager on loopback (test/support/aws-stand-in.ts), reached by the signed call the functions make.
  const secrets = useAwsStandIn();
  const reads = () => secrets().calls('secretsmanager.GetSecretValue');
  let previous: Gateway | undefined;
  const handler = httpFunction(async () => json(200, { ok: true }));
  beforeEach(() => {
    useOriginSecret(undefined);
    previous = useGateway({ env: GatewayEnvironment.parse({ ORIGIN_SECRET_ARN: secretArn }) } as Gateway);
  });
  afterEach(() => {
    useGateway(previous);
    useOriginSecret(undefined);
  });

  it('reads the secret on the first request and never again; compares every request with it', async () => {
    secrets().putSecret(secretArn, value);
    for (let n = 0; n < 5; n += 1) expect(answer(await handler(event({ [ORIGIN_HEADER]: value }))).statusCode).toBe(200);
    expect(answer(await handler(event({ [ORIGIN_HEADER]: generatedKey('origin_') }))).statusCode).toBe(403);
    expect(reads()).toBe(1);
  });

  it('a failed read refuses the request (nothing runs) and is tried again on the next one', async () => {
    secrets().putSecret(secretArn, value);
    // A refusal the call does not retry (retried ones would be answered on the same request).
    secrets().failNext('secretsmanager.GetSecretValue', 1, { status: 400, code: 'AccessDeniedException' });
    expect(answer(await handler(event({ [ORIGIN_HEADER]: value }))).statusCode).toBe(500);
    expect(answer(await handler(event({ [ORIGIN_HEADER]: value }))).statusCode).toBe(200);
    expect(reads()).toBe(2);
  });
});
