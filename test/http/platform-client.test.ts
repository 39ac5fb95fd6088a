import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  createPlatformClient,
  platformCallCounts,
  resetPlatformCallCounts,
  type PlatformCall,
  type PlatformClientOptions,
} from '../../shared/http/platform-client';
import { PlatformError } from '../../shared/http/platform-error';
import { unlimitedRateBudget, type RateBudget } from '../../shared/http/rate-budget';

// ---- a scripted platform on loopback ----

interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Reply = (req: IncomingMessage, res: ServerResponse) => void;

/** Answers the n-th request with the n-th reply (the last one repeats) and records what it saw. */
async function startPlatform(replies: Reply[]): Promise<{ baseUrl: string; seen: SeenRequest[]; server: Server }> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
      reply?.(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, seen, server };
}

const servers: Server[] = [];

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
const hang: Reply = () => {};
const dropConnection: Reply = (req) => req.socket.destroy();

// ---- fakes ----

function recordingSleep(): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return { delays, sleep: async (ms) => void delays.push(ms) };
}

function recordingBudget(): RateBudget & { takes: number; penalties: (number | undefined)[]; successes: number } {
  const budget = {
    takes: 0,
    successes: 0,
    penalties: [] as (number | undefined)[],
    take: async () => {
      budget.takes++;
    },
    penalize: (retryAfterMs?: number) => {
      budget.penalties.push(retryAfterMs);
    },
    recordSuccess: () => {
      budget.successes++;
    },
  };
  return budget;
}

function testKey(): string {
  return `sk_test_${randomBytes(12).toString('hex')}`;
}

function client(baseUrl: string, overrides: Partial<PlatformClientOptions> = {}) {
  return createPlatformClient({
    baseUrl,
    platform: 'payment',
    auth: { kind: 'bearer', token: testKey() },
    rateBudget: unlimitedRateBudget,
    allowInsecure: true,
    timeoutMs: 2_000,
    retry: { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 5_000, deadlineMs: 30_000 },
    sleep: async () => {},
    random: () => 0,
    ...overrides,
  });
}

async function caught(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

beforeEach(() => resetPlatformCallCounts());
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

// ---- tests ----

describe('platform client over HTTP', () => {
  it('returns parsed JSON validated by the schema', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, { object: 'list', data: [{ id: 'cus_1' }], has_more: false })]);
    const List = z.object({ data: z.array(z.object({ id: z.string() })), has_more: z.boolean() });
    const response = await client(baseUrl).request({ method: 'GET', path: '/v1/customers', schema: List });
    expect(response.status).toBe(200);
    expect(response.body.data[0]?.id).toBe('cus_1');
    expect(response.attempts).toBe(1);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe('/v1/customers');
    expect(seen[0]?.headers.accept).toBe('application/json');
  });

  it('takes each attempt from its endpoint\'s budget as well as the connection\'s, slows both on a 429, and paces at the tighter of them', async () => {
    const { baseUrl } = await startPlatform([json(429, { error: { type: 'rate_limit_error' } }), json(200, { ok: true }), json(200, { ok: true })]);
    const connection = Object.assign(recordingBudget(), { pace: () => ({ ratePerSecond: 100, waitMs: 0 }) });
    const endpoints = new Map<string, ReturnType<typeof recordingBudget>>();
    const endpointBudget = (method: string, path: string) => {
      const name = `${method} ${path.replace(/\/cus_\w+$/, '/{id}')}`;
      if (!endpoints.has(name)) endpoints.set(name, Object.assign(recordingBudget(), { pace: () => ({ ratePerSecond: 25, waitMs: 3 }) }));
      return endpoints.get(name);
    };
    const platform = client(baseUrl, { rateBudget: connection, endpointBudget });
    expect(platform.pace?.()).toMatchObject({ ratePerSecond: 100, waitMs: 0 });
    await platform.request({ method: 'GET', path: '/v1/customers', query: { limit: 100 } });
    await platform.request({ method: 'GET', path: '/v1/customers/cus_1' });
    const list = endpoints.get('GET /v1/customers')!;
    expect([list.takes, list.penalties, list.successes]).toEqual([2, [undefined], 1]);
    expect([connection.takes, connection.penalties, connection.successes]).toEqual([3, [undefined], 2]);
    expect(endpoints.get('GET /v1/customers/{id}')!.takes).toBe(1);
    // A sync job lists one object: its slices plan on the endpoint's pace, not the connection's.
    expect(platform.pace?.()).toMatchObject({ ratePerSecond: 25, waitMs: 3 });
  });

  it('retries 429 twice then succeeds, penalising the rate budget and counting every attempt', async () => {
    const { baseUrl, seen } = await startPlatform([
      json(429, { error: { type: 'rate_limit_error', message: 'Too many requests' } }),
      json(429, { error: { type: 'rate_limit_error', message: 'Too many requests' } }, { 'retry-after': '2' }),
      json(200, { ok: true }),
    ]);
    const { sleep, delays } = recordingSleep();
    const budget = recordingBudget();
    const calls: PlatformCall[] = [];
    const response = await client(baseUrl, { sleep, rateBudget: budget, onCall: (call) => calls.push(call) }).request({
      method: 'GET',
      path: '/v1/customers',
      query: { limit: 100 },
    });

    expect(response.body).toEqual({ ok: true });
    expect(response.attempts).toBe(3);
    expect(seen).toHaveLength(3);
    expect(delays).toEqual([0, 2_000]); // random 0: no jitter; then Retry-After as the floor
    expect(budget.takes).toBe(3);
    expect(budget.penalties).toEqual([undefined, 2_000]);
    expect(budget.successes).toBe(1);
    expect(calls.map((c) => [c.attempt, c.status, c.outcome, c.path])).toEqual([
      [1, 429, 'rate_limited', '/v1/customers'],
      [2, 429, 'rate_limited', '/v1/customers'],
      [3, 200, 'ok', '/v1/customers'],
    ]);
    expect(platformCallCounts()).toEqual({ payment: 3 });
  });

  it('waits at least Retry-After: 1 on a 503', async () => {
    const { baseUrl, seen } = await startPlatform([json(503, { message: 'maintenance' }, { 'retry-after': '1' }), json(200, {})]);
    const { sleep, delays } = recordingSleep();
    await client(baseUrl, { sleep }).request({ method: 'GET', path: '/api/v2/customers' });
    expect(seen).toHaveLength(2);
    expect(delays).toEqual([1_000]);
  });

  it('gives up at once with a retryable error when Retry-After is beyond what a Lambda should sleep', async () => {
    const { baseUrl, seen } = await startPlatform([json(429, { message: 'slow down', api_error_code: 'api_request_limit_exceeded' }, { 'retry-after': '60' })]);
    const { sleep, delays } = recordingSleep();
    const error = await caught(client(baseUrl, { sleep, platform: 'billing' }).request({ method: 'GET', path: '/api/v2/subscriptions' }));
    expect(seen).toHaveLength(1);
    expect(delays).toEqual([]);
    expect(error.kind).toBe('rate_limited');
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(60_000);
    expect(error.platformCode).toBe('api_request_limit_exceeded');
  });

  it('gives up after the maximum attempts with kind unavailable', async () => {
    const { baseUrl, seen } = await startPlatform([json(502, { error: { type: 'api_error', message: 'bad gateway' } })]);
    const { sleep, delays } = recordingSleep();
    const error = await caught(client(baseUrl, { sleep, random: () => 0.999 }).request({ method: 'GET', path: '/v1/invoices' }));
    expect(seen).toHaveLength(4);
    expect(delays).toHaveLength(3);
    delays.forEach((delay, i) => expect(delay).toBeLessThanOrEqual(100 * 2 ** i));
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBe(502);
    expect(error.attempts).toBe(4);
    expect(error.platformMessage).toBe('bad gateway');
  });

  it('honours Stripe-Should-Retry: false', async () => {
    const { baseUrl, seen } = await startPlatform([json(500, { error: { message: 'no' } }, { 'stripe-should-retry': 'false' })]);
    const error = await caught(client(baseUrl).request({ method: 'GET', path: '/v1/charges' }));
    expect(seen).toHaveLength(1);
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(false);
  });

  it('times out a platform that never answers, and retries', async () => {
    const { baseUrl, seen } = await startPlatform([hang]);
    const error = await caught(
      client(baseUrl, { timeoutMs: 200, retry: { maxAttempts: 2 } }).request({ method: 'GET', path: '/v1/customers' }),
    );
    expect(error.kind).toBe('timeout');
    expect(error.status).toBeUndefined();
    expect(error.attempts).toBe(2);
    expect(error.retryable).toBe(true);
    expect(seen).toHaveLength(2);
  });

  it('treats a dropped connection as a network error and retries it', async () => {
    const { baseUrl, seen } = await startPlatform([dropConnection, json(200, { recovered: true })]);
    const response = await client(baseUrl).request({ method: 'GET', path: '/v1/customers' });
    expect(response.body).toEqual({ recovered: true });
    expect(seen).toHaveLength(2);
  });

  it('reports a connection that keeps dropping as kind network', async () => {
    const { baseUrl, seen } = await startPlatform([dropConnection]);
    const error = await caught(client(baseUrl, { retry: { maxAttempts: 3 } }).request({ method: 'GET', path: '/v1/customers' }));
    expect(error.kind).toBe('network');
    expect(seen).toHaveLength(3);
  });

  it('does not resend a POST without an idempotency key after a dropped connection', async () => {
    const { baseUrl, seen } = await startPlatform([dropConnection]);
    const error = await caught(client(baseUrl).request({ method: 'POST', path: '/v58.0/conversations/', body: { contactId: '003' } }));
    expect(error.kind).toBe('network');
    expect(seen).toHaveLength(1);
  });

  it('retries a POST carrying an idempotency key, sending the key each time', async () => {
    const { baseUrl, seen } = await startPlatform([dropConnection, json(200, { id: 'x' })]);
    await client(baseUrl).request({ method: 'POST', path: '/v1/refunds', form: { charge: 'ch_1' }, idempotencyKey: 'sync-42' });
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual(['sync-42', 'sync-42']);
    expect(seen[1]?.body).toBe('charge=ch_1');
    expect(seen[1]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
  });

  it('turns an HTML 200 into invalid_response after one retry, not more', async () => {
    const { baseUrl, seen } = await startPlatform([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>Service temporarily unavailable</body></html>');
      },
    ]);
    const error = await caught(client(baseUrl, { retry: { maxAttempts: 5 } }).request({ method: 'GET', path: '/v1/customers' }));
    expect(seen).toHaveLength(2);
    expect(error.kind).toBe('invalid_response');
    expect(error.reason).toContain('not JSON (text/html');
  });

  it('turns truncated JSON into invalid_response, and recovers if the retry is whole', async () => {
    const truncated: Reply = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[{"id":"cus_');
    };
    const broken = await startPlatform([truncated]);
    const error = await caught(client(broken.baseUrl).request({ method: 'GET', path: '/v1/customers' }));
    expect(error.kind).toBe('invalid_response');
    expect(error.reason).toContain('truncated or malformed JSON');
    expect(broken.seen).toHaveLength(2);

    const flaky = await startPlatform([truncated, json(200, { data: [] })]);
    const response = await client(flaky.baseUrl).request({ method: 'GET', path: '/v1/customers' });
    expect(response.body).toEqual({ data: [] });
    expect(flaky.seen).toHaveLength(2);
  });

  it('rejects a 200 of the wrong shape without retrying', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, { data: 'not a list', email: 'someone@example.com' })]);
    const error = await caught(
      client(baseUrl).request({ method: 'GET', path: '/v1/customers', schema: z.object({ data: z.array(z.unknown()) }) }),
    );
    expect(seen).toHaveLength(1);
    expect(error.kind).toBe('invalid_response');
    expect(error.reason).toContain('data');
    expect(error.message).not.toContain('someone@example.com');
  });

  it('maps 401 with a payment-style error body to kind auth, once, without leaking the key', async () => {
    const key = testKey();
    const { baseUrl, seen } = await startPlatform([
      json(401, {
        error: {
          type: 'invalid_request_error',
          code: 'api_key_invalid',
          // Platforms echo the key they were given; the client must mask it.
          message: `Invalid API Key provided: ${key}`,
        },
      }),
    ]);
    const error = await caught(
      client(baseUrl, { auth: { kind: 'basic', username: key } }).request({
        method: 'GET',
        path: '/v1/customers',
        query: { email: 'someone@example.com' },
      }),
    );
    expect(seen).toHaveLength(1);
    expect(error.kind).toBe('auth');
    expect(error.status).toBe(401);
    expect(error.retryable).toBe(false);
    expect(error.platformCode).toBe('api_key_invalid');
    expect(error.platformMessage).toContain('Invalid API Key provided');
    expect(error.message).toContain('Invalid API Key provided');
    for (const rendering of [error.message, String(error), JSON.stringify(error), inspect(error), error.stack ?? '']) {
      expect(rendering).not.toContain(key);
      expect(rendering).not.toContain(key.slice(8)); // the random part
      expect(rendering).not.toContain('Basic ');
      expect(rendering).not.toContain('someone@example.com'); // query strings stay out of errors
    }
  });

  it.each([
    [403, 'permission'],
    [404, 'not_found'],
    [400, 'invalid_request'],
    [409, 'invalid_request'],
    [422, 'invalid_request'],
  ] as const)('maps %i to %s without retrying', async (status, kind) => {
    const { baseUrl, seen } = await startPlatform([json(status, { message: 'nope' })]);
    const error = await caught(client(baseUrl, { platform: 'billing' }).request({ method: 'GET', path: '/api/v2/customers' }));
    expect(error.kind).toBe(kind);
    expect(error.platformMessage).toBe('nope');
    expect(seen).toHaveLength(1);
  });

  it('extracts the identity platform message from {error, error_description}', async () => {
    const { baseUrl } = await startPlatform([json(400, { error: 'invalid_grant', error_description: 'audience is invalid' })]);
    const error = await caught(
      client(baseUrl, { platform: 'data', auth: { kind: 'none' } }).request({
        method: 'POST',
        path: '/services/oauth2/token',
        form: { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer' },
      }),
    );
    expect(error.kind).toBe('invalid_request');
    expect(error.platformCode).toBe('invalid_grant');
    expect(error.platformMessage).toBe('audience is invalid');
  });

  it('sends Basic auth as base64 of "key:" with an empty password', async () => {
    const key = testKey();
    const { baseUrl, seen } = await startPlatform([json(200, {})]);
    await client(baseUrl, { auth: { kind: 'basic', username: key } }).request({ method: 'GET', path: '/v1/customers' });
    const header = seen[0]?.headers.authorization ?? '';
    expect(header.startsWith('Basic ')).toBe(true);
    expect(Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8')).toBe(`${key}:`);
  });

  it('sends Bearer auth and a JSON body', async () => {
    const token = randomBytes(16).toString('hex');
    const { baseUrl, seen } = await startPlatform([json(200, { data: [] })]);
    await client(baseUrl, { platform: 'data', auth: { kind: 'bearer', token } }).request({
      method: 'POST',
      path: '/services/data/v61.0/ssot/queryv2',
      body: { sql: 'SELECT 1' },
      idempotent: true,
    });
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${token}`);
    expect(seen[0]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({ sql: 'SELECT 1' });
  });

  it('keeps bracket keys literal and encodes values, including a JSON array for status[in]', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, { list: [] })]);
    const billing = client(`${baseUrl}/api/v2`, { platform: 'billing' });
    await billing.request({
      method: 'GET',
      path: 'subscriptions',
      query: {
        limit: 100,
        'status[in]': JSON.stringify(['active', 'cancelled']),
        'updated_at[after]': 1704067200,
        include_deleted: true,
        offset: undefined,
        'customer_id[is]': 'cus 1&x=y',
      },
    });
    const url = seen[0]?.url ?? '';
    expect(url).toBe(
      '/api/v2/subscriptions?limit=100&status[in]=%5B%22active%22%2C%22cancelled%22%5D' +
        '&updated_at[after]=1704067200&include_deleted=true&customer_id[is]=cus%201%26x%3Dy',
    );
    const params = new URL(url, 'http://x').searchParams;
    expect(params.get('status[in]')).toBe('["active","cancelled"]');
    expect(params.get('customer_id[is]')).toBe('cus 1&x=y');
    expect(params.has('offset')).toBe(false);
  });

  it('keeps a caller-encoded query in the path and appends the rest', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, {})]);
    await client(baseUrl).request({ method: 'GET', path: '/v1/events?types[]=a&types[]=b', query: { 'created[gte]': 1700000000 } });
    expect(seen[0]?.url).toBe('/v1/events?types[]=a&types[]=b&created[gte]=1700000000');
  });

  it('does not follow redirects', async () => {
    const { baseUrl, seen } = await startPlatform([
      (_req, res) => {
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
        res.end();
      },
    ]);
    const error = await caught(client(baseUrl).request({ method: 'GET', path: '/v1/customers' }));
    expect(error.kind).toBe('invalid_response');
    expect(error.status).toBe(302);
    expect(seen).toHaveLength(2); // one retry, as for any unusable answer
  });

  it('sends nothing when the caller gives up while the request waits for its turn (a stale long-poll never reaches the platform)', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, { messages: [], sequence: 0 })]);
    const caller = new AbortController();
    // The caller gives up while the request waits on the rate budget, before it is sent.
    const slowTurn: RateBudget = { take: async () => caller.abort(new Error('handed over')), penalize: () => {} };
    const poll = client(baseUrl, { platform: 'messaging', rateBudget: slowTurn }).request({ method: 'GET', path: '/v58.0/conversations/c1/messages', query: { ack: 6, timeout: 30 }, signal: caller.signal });
    await expect(poll).rejects.toThrow('handed over');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toHaveLength(0);
  });

  it('returns undefined for an empty 204', async () => {
    const { baseUrl } = await startPlatform([
      (_req, res) => {
        res.writeHead(204);
        res.end();
      },
    ]);
    const response = await client(baseUrl, { platform: 'messaging' }).request({
      method: 'GET',
      path: '/v58.0/conversations/c1/messages',
      query: { ack: -1, timeout: 30 },
    });
    expect(response.status).toBe(204);
    expect(response.body).toBeUndefined();
  });
});

describe('platform client configuration', () => {
  it('refuses http:// unless allowInsecure is set', () => {
    expect(() => client('http://127.0.0.1:9', { allowInsecure: false })).toThrow(/https/);
    expect(() => client('http://127.0.0.1:9', { allowInsecure: true })).not.toThrow();
    expect(() => client('https://api.example.com', { allowInsecure: false })).not.toThrow();
  });

  it('refuses credentials in the base URL', () => {
    expect(() => client('https://user:pass@api.example.com')).toThrow(/credentials/);
  });

  it('refuses paths that would leave the base URL', async () => {
    const payments = client('https://api.example.com/v1', { allowInsecure: false });
    await expect(payments.request({ method: 'GET', path: '../admin' })).rejects.toThrow(/stay under/);
    await expect(payments.request({ method: 'GET', path: '/customers/../../admin' })).rejects.toThrow(/stay under/);
  });

  it('refuses a JSON body and a form together', async () => {
    const { baseUrl, seen } = await startPlatform([json(200, {})]);
    await expect(
      client(baseUrl).request({ method: 'POST', path: '/x', body: { a: 1 }, form: { a: 1 } }),
    ).rejects.toThrow(/either/);
    expect(seen).toHaveLength(0);
  });

  it('does not quote a bad header value (it may be the token)', async () => {
    const token = `${randomBytes(8).toString('hex')}\nX-Injected: 1`;
    const payments = client('https://api.example.com', { auth: { kind: 'bearer', token } });
    const error = await payments.request({ method: 'GET', path: '/v1/customers' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(String(error)).toContain('invalid name or value');
    expect(String(error)).not.toContain(token.slice(0, 16));
  });
});
