import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { billingClient } from '../../shared/billing/client';
import { billingProblem, type BillingProblem } from '../../shared/billing/errors';
import { testBillingConnection } from '../../shared/billing/test-connection';
import { PlatformError } from '../../shared/http/platform-error';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import type { SimulatorRequest } from '../../sandbox/simulator-server';
import { newKey, startBillingSandbox, type BillingSandbox } from './billing-sandbox';

let box: BillingSandbox;
let seen: SimulatorRequest[];
beforeEach(async () => {
  box = await startBillingSandbox();
  box.site.seedCustomers(20);
  seen = [];
  box.sim.onRequest((request) => {
    seen.push(request);
  });
});
afterEach(async () => {
  await box.stop();
});

/** Runs Test Connection and returns the error it threw (failing the test if it passed). */
async function failure(run: Promise<void>): Promise<PlatformError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlatformError);
  return error as PlatformError;
}

/** Nothing a user sees may hold the key. */
function expectNoSecret(problem: BillingProblem, error: PlatformError, secret: string): void {
  expect(JSON.stringify(problem)).not.toContain(secret);
  expect(error.message).not.toContain(secret);
}

describe('testBillingConnection', () => {
  it('passes with one cheap authenticated read: the first customer', async () => {
    await testBillingConnection(box.client());
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/sites/acme/api/v2/customers');
    expect(Object.fromEntries(seen[0]!.query)).toEqual({ limit: '1' });
  });

  it('passes with a full-access key too', async () => {
    const full = newKey('live');
    box.sim.addApiKey('acme', full, { type: 'full' });
    await testBillingConnection(box.client({ credentials: { apiKey: full } }));
  });

  it('invalid key: 401, not retried, needs reconnect with the verify-or-recreate remedy', async () => {
    const wrong = newKey();
    const error = await failure(testBillingConnection(box.client({ credentials: { apiKey: wrong } })));
    expect(error).toMatchObject({ kind: 'auth', status: 401, attempts: 1, platformCode: 'api_authentication_failed' });
    const problem = billingProblem(error, { apiKey: wrong, environment: 'test', siteName: 'acme' });
    expect(problem).toMatchObject({
      health: 'needs_reconnect',
      remedy: expect.stringMatching(/verify the api key, or recreate it/i),
      platformMessage: expect.stringContaining('Invalid api key'),
    });
    expectNoSecret(problem, error, wrong);
  });

  it('a live key on a test connection: the 401 remedy says so', async () => {
    const live = newKey('live');
    const error = await failure(testBillingConnection(box.client({ credentials: { apiKey: live } })));
    const problem = billingProblem(error, { apiKey: live, environment: 'test' });
    expect(problem.remedy).toMatch(/live key but Environment is Test Mode/);
    expectNoSecret(problem, error, live);
  });

  it('unknown site: 404, needs reconnect with the check-the-subdomain remedy', async () => {
    const error = await failure(testBillingConnection(box.client({ config: { siteName: 'acme-typo', environment: 'test' } })));
    expect(error).toMatchObject({ kind: 'not_found', status: 404, platformCode: 'site_not_found', attempts: 1 });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/sites/acme-typo/api/v2/customers');
    const problem = billingProblem(error, { siteName: 'acme-typo', environment: 'test' });
    expect(problem).toMatchObject({ health: 'needs_reconnect', remedy: expect.stringMatching(/check the site name: it is the subdomain/i) });
    expect(problem.remedy).toContain('acme-typo-test');
  });

  it('publishable key: 403, needs reconnect with the key-type remedy', async () => {
    const publishable = newKey();
    box.sim.addApiKey('acme', publishable, { type: 'publishable' });
    const error = await failure(testBillingConnection(box.client({ credentials: { apiKey: publishable } })));
    expect(error).toMatchObject({ kind: 'permission', status: 403, attempts: 1 });
    const problem = billingProblem(error, { apiKey: publishable });
    expect(problem).toMatchObject({ health: 'needs_reconnect', remedy: expect.stringMatching(/read-only key \(preferred\) or a full-access key/) });
    expect(problem.reason).toMatch(/permission/);
    expectNoSecret(problem, error, publishable);
  });

  it('rate limited: 429 retried with backoff, then degraded with the reduce-frequency remedy', async () => {
    box.sim.setRateLimit({ perMinute: 1 }); // the clock is frozen: the bucket never refills
    await testBillingConnection(box.client());
    const error = await failure(testBillingConnection(box.client()));
    expect(error).toMatchObject({ kind: 'rate_limited', status: 429, attempts: 4, retryable: true });
    expect(box.sim.rateLimited()).toBe(4);
    expect(box.sleeps).toHaveLength(3);
    expect(billingProblem(error)).toMatchObject({ health: 'degraded', remedy: expect.stringMatching(/reduce the sync frequency/) });
  });

  it('platform down: 503 on every attempt is degraded, not a reconnect', async () => {
    box.sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 10 });
    const error = await failure(testBillingConnection(box.client()));
    expect(error).toMatchObject({ kind: 'unavailable', status: 503, attempts: 4 });
    expect(billingProblem(error).health).toBe('degraded');
  });

  it('an HTML page instead of JSON fails the test, degraded', async () => {
    box.sim.faults.inject({ fault: { kind: 'html' }, times: 2 });
    const error = await failure(testBillingConnection(box.client()));
    expect(error.kind).toBe('invalid_response');
    expect(billingProblem(error)).toMatchObject({ health: 'degraded', reason: expect.stringContaining('text/html') });
  });

  it('a 200 that is not a list (something else answering at the address) fails the test', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ customers: [], status: 'ok' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const client = billingClient({
        env: { BILLING_BASE_URL_TEMPLATE: `http://127.0.0.1:${port}/{site}`, ALLOW_INSECURE_PLATFORM_URLS: true },
        accountId: 'acct-1',
        config: { siteName: 'acme' },
        credentials: { apiKey: box.key },
        rateBudget: unlimitedRateBudget,
      });
      const error = await failure(testBillingConnection(client));
      expect(error).toMatchObject({ kind: 'invalid_response', attempts: 1 });
      expect(error.message).toContain('list');
      expect(billingProblem(error).health).toBe('degraded');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('an unreachable platform is a network failure, degraded', async () => {
    const client = box.client();
    await box.stop();
    const error = await failure(testBillingConnection(client));
    expect(error).toMatchObject({ kind: 'network', attempts: 4 });
    expect(billingProblem(error).health).toBe('degraded');
    box = await startBillingSandbox(); // afterEach stops it
  });
});
