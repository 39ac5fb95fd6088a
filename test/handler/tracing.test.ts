import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformClient } from '../../shared/http/platform-client';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import { activateTracer, pathShape, type ActiveTracer, type SubsegmentLike } from '../../shared/tracing/segments';

/**
 * X-Ray subsegments for platform calls (shared/tracing/segments.ts; AWS calls' in test/aws/traced-calls.test.ts), recorded
 * by a stand-in for Powertools Tracer (X-Ray has no local service): one subsegment per attempt,
 * named by platform, annotated with the path's shape, never the URL, an id, a query or a body.
 */
interface Recorded {
  name: string;
  annotations: Record<string, unknown>;
  errors: string[];
  closed: boolean;
}
const recorded: Recorded[] = [];
const tracer: ActiveTracer = {
  awsAttribute: (call) => call,
  provider: {
    captureAsyncFunc: (name, work) => {
      const entry: Recorded = { name, annotations: {}, errors: [], closed: false };
      recorded.push(entry);
      const subsegment: SubsegmentLike = {
        id: 'subsegment',
        addAnnotation: (key, value) => void (entry.annotations[key] = value),
        addError: (error) => void entry.errors.push(String(error)),
        close: () => void (entry.closed = true),
        // AWS calls' fields (test/aws/traced-calls.test.ts holds them to X-Ray's own capture).
        addAttribute: () => {},
        addThrottleFlag: () => {},
        addErrorFlag: () => {},
        addFaultFlag: () => {},
      };
      return work(subsegment);
    },
  },
};

let server: Server;
let url: string;
let answers: number[] = [];
beforeAll(async () => {
  server = createServer((_req, res) => {
    const status = answers.shift() ?? 200;
    res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"id":"cus_123"}' : '{"error":{"message":"slow down"}}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  activateTracer(undefined);
  await new Promise((resolve) => server.close(resolve));
});

describe('platform call segments', () => {
  it('path shapes keep the words and hide what the path is about', () => {
    expect(pathShape('/v1/customers/cus_123')).toBe('/v1/customers/{id}');
    expect(pathShape('/api/v2/customers?email[is]=ann@example.com')).toBe('/api/v2/customers');
    expect(pathShape('/api/v1/playbook/profiles/ann%40example.com')).toBe('/api/v1/playbook/profiles/{id}');
    expect(pathShape('/services/data/v61.0/ssot/queryv2')).toBe('/services/data/v61.0/ssot/queryv2');
    expect(pathShape('/api/v2/customers/john-doe/subscriptions')).toBe('/api/v2/customers/{id}/subscriptions');
    expect(pathShape('/api/v2/customers/AzZiXYT6x')).toBe('/api/v2/customers/{id}');
  });

  it('without an active tracer a call records nothing', async () => {
    const client = createPlatformClient({ baseUrl: url, platform: 'payment', auth: { kind: 'none' }, rateBudget: unlimitedRateBudget, allowInsecure: true });
    await client.request({ method: 'GET', path: '/v1/customers/cus_123' });
    expect(recorded).toEqual([]);
  });

  it('with one, each attempt is a closed subsegment named by platform, annotated by shape and outcome', async () => {
    activateTracer(tracer);
    answers = [429];
    const client = createPlatformClient({
      baseUrl: url,
      platform: 'payment',
      auth: { kind: 'bearer', token: 'sk_test_never_in_a_trace' },
      rateBudget: unlimitedRateBudget,
      allowInsecure: true,
      sleep: async () => {},
    });
    await client.request({ method: 'GET', path: '/v1/customers/cus_123', query: { email: 'ann@example.com' } });
    expect(recorded).toEqual([
      { name: 'platform payment', annotations: { platform: 'payment', method: 'GET', operation: 'GET /v1/customers/{id}', attempt: 1, outcome: 429 }, errors: [], closed: true },
      { name: 'platform payment', annotations: { platform: 'payment', method: 'GET', operation: 'GET /v1/customers/{id}', attempt: 2, outcome: 200 }, errors: [], closed: true },
    ]);
    const text = JSON.stringify(recorded);
    for (const leak of ['cus_123', 'ann@example.com', '127.0.0.1', 'sk_test', 'email']) expect(text).not.toContain(leak);
  });
});

describe('where the X-Ray SDK loads', () => {
  /** Imports shared/handler/traces.ts in a fresh process: how many middlewares `traces()` gives, and whether the X-Ray SDK loaded. */
  const load = (env: Record<string, string>) => {
    const script = `
      const { registerHooks } = await import('node:module');
      const loaded = new Set();
      registerHooks({ resolve(specifier, context, next) { const resolved = next(specifier, context); loaded.add(resolved.url); return resolved; } });
      const { traces } = await import(${JSON.stringify(new URL('../../shared/handler/traces.ts', import.meta.url).href)});
      process.stdout.write(JSON.stringify({ middlewares: traces().length, xray: [...loaded].some((url) => url.includes('aws-xray-sdk-core')) }));`;
    const { AWS_EXECUTION_ENV: _, ...rest } = process.env;
    return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...rest, ...env } })) as { middlewares: number; xray: boolean };
  };

  it('in Lambda: the handler subsegment, from Powertools Tracer', () => {
    expect(load({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x' })).toEqual({ middlewares: 1, xray: true });
  });

  it('elsewhere (npm start, tests, benchmarks): nothing, and no async hook on every promise', () => {
    expect(load({})).toEqual({ middlewares: 0, xray: false });
  });
});
