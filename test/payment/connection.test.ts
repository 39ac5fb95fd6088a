import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PaymentSimulator } from '../../sandbox/payment-simulator';
import { PlatformError } from '../../shared/http/platform-error';
import { PAYMENT_REMEDIES, paymentProblem } from '../../shared/payment/errors';
import { PaymentSyncSettings } from '../../shared/payment/settings';
import { EventWindowExceeded, paymentSource } from '../../shared/payment/sync';
import { testPaymentConnection } from '../../shared/payment/test-connection';
import { clientFor, newKey, startSimulator } from './support';

let sim: PaymentSimulator;
let key: string;

beforeEach(async () => {
  ({ sim, key } = await startSimulator());
  sim.seedCustomers(5);
});
afterEach(async () => {
  await sim.stop();
});

/** Runs Test Connection and returns what it threw. */
async function failureOf(client = clientFor(sim, key)): Promise<unknown> {
  try {
    await testPaymentConnection(client);
  } catch (error) {
    return error;
  }
  throw new Error('expected Test Connection to fail');
}

describe('testPaymentConnection', () => {
  it('makes one cheap authenticated read', async () => {
    const queries: string[] = [];
    sim.onRequest((request) => void queries.push(`${request.method} ${request.path}?${request.query.toString()}`));
    await testPaymentConnection(clientFor(sim, key));
    expect(queries).toEqual(['GET /v1/customers?limit=1']);
  });

  it('throws the PlatformError as it is', async () => {
    const error = await failureOf(clientFor(sim, newKey('sk_test_')));
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ kind: 'auth', status: 401, platform: 'payment' });
  });
});

describe('paymentProblem over real failures', () => {
  it('invalid key: needs reconnect, verify or recreate the key, with the masked platform message', async () => {
    const unknownKey = newKey('sk_live_');
    const problem = paymentProblem(await failureOf(clientFor(sim, unknownKey)));
    expect(problem).toMatchObject({ health: 'needs_reconnect', remedy: PAYMENT_REMEDIES.invalidKey });
    expect(problem.remedy).toMatch(/verify.*recreate/i);
    expect(problem.platformMessage).toMatch(/Invalid API Key provided/);
    expect(JSON.stringify(problem)).not.toContain(unknownKey);
    expect(JSON.stringify(problem)).not.toContain(unknownKey.slice(-4));
    expect(sim.requests.get('GET /v1/customers')).toBe(1); // a 401 is never retried
  });

  it('restricted key without read access: needs reconnect, use a key with read access', async () => {
    const restricted = newKey('rk_test_');
    sim.addApiKey(restricted, { access: { subscriptions: 'read' } }); // customers: none
    const problem = paymentProblem(await failureOf(clientFor(sim, restricted)));
    expect(problem).toMatchObject({ health: 'needs_reconnect', remedy: PAYMENT_REMEDIES.readAccess });
    expect(problem.reason).toMatch(/customers.*403/);
    expect(problem.platformMessage).toMatch(/rak_customer_read/);
    expect(JSON.stringify(problem)).not.toContain(restricted);
  });

  it('publishable key: needs reconnect, with the read-access remedy', async () => {
    const publishable = newKey('pk_test_');
    sim.addApiKey(publishable);
    const problem = paymentProblem(await failureOf(clientFor(sim, publishable)));
    expect(problem).toMatchObject({ health: 'needs_reconnect', remedy: PAYMENT_REMEDIES.readAccess });
    expect(problem.reason).toMatch(/publishable/i);
  });

  it('a 429 storm: degraded, reduce sync frequency / backoff, after the retries ran out', async () => {
    sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 10 });
    const problem = paymentProblem(await failureOf());
    expect(problem).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.rateLimited });
    expect(problem.remedy).toMatch(/reduce the sync frequency/i);
    expect(problem.remedy).toMatch(/backs off exponentially/);
    expect(sim.requests.get('GET /v1/customers')).toBe(4);
  });

  it('the simulator\'s own rate limit answers in the platform\'s words', async () => {
    sim.setRateLimit({ perSecond: 1, burst: 1 });
    sim.setNow(Date.now()); // frozen: the bucket never refills
    await testPaymentConnection(clientFor(sim, key));
    const problem = paymentProblem(await failureOf());
    expect(problem).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.rateLimited });
    expect(problem.platformMessage).toMatch(/rate limit/i);
  });

  it('5xx, timeouts and dropped connections: degraded, the platform is unavailable', async () => {
    sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 10 });
    expect(paymentProblem(await failureOf())).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.unavailable });
    sim.faults.clear();

    sim.faults.inject({ fault: { kind: 'drop' }, times: 10 });
    expect(paymentProblem(await failureOf())).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.unavailable, reason: expect.stringMatching(/connection/) });
    sim.faults.clear();

    sim.faults.inject({ fault: { kind: 'timeout' }, times: 10 });
    const timedOut = paymentProblem(await failureOf(clientFor(sim, key, { timeoutMs: 50 })));
    expect(timedOut).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.unavailable, reason: expect.stringMatching(/in time/) });
  });

  it('an HTML page instead of the API: degraded, nothing stored, says what came back', async () => {
    sim.faults.inject({ fault: { kind: 'html' }, times: 10 });
    const problem = paymentProblem(await failureOf());
    expect(problem).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.unreadable });
    expect(problem.reason).toMatch(/not JSON \(text\/html/);
  });

  it('a key of the other mode: needs reconnect with a key of the matching mode', async () => {
    const live = sim.createCustomer({}, { mode: 'live' }).record;
    const error = await clientFor(sim, key)
      .request({ method: 'GET', path: `/v1/customers/${live.id}` })
      .catch((e: unknown) => e);
    expect(paymentProblem(error)).toMatchObject({ health: 'needs_reconnect', remedy: PAYMENT_REMEDIES.wrongMode });
  });

  it('a page request the platform refuses (limit above 100): the pagination remedy', async () => {
    const error = await clientFor(sim, key)
      .request({ method: 'GET', path: '/v1/customers', query: { limit: 101 } })
      .catch((e: unknown) => e);
    expect(paymentProblem(error)).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.pagination });
  });

  it('another platform already connected: needs reconnect, only one platform may have read/write', () => {
    const error = new PlatformError({
      platform: 'payment',
      kind: 'invalid_request',
      status: 400,
      attempts: 1,
      method: 'GET',
      path: '/v1/customers',
      retryable: false,
      platformMessage: 'This account is already connected to another platform with read_write access.',
    });
    expect(paymentProblem(error)).toMatchObject({ health: 'needs_reconnect', remedy: PAYMENT_REMEDIES.singleConnection });
  });

  it('an event window past 30 days: degraded, the gateway runs a full sync', async () => {
    const source = paymentSource('customers', clientFor(sim, key), PaymentSyncSettings.parse({}), { now: () => sim.now() });
    const error = await source.fetchPage({ mode: 'incremental', since: sim.clock.nowSeconds() - 40 * 86_400 }, undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventWindowExceeded);
    expect(paymentProblem(error)).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.eventWindow });
  });

  it('anything else: degraded, and nothing of its message is passed on', () => {
    const leaky = new Error(`boom with ${newKey('sk_live_')}`);
    const problem = paymentProblem(leaky);
    expect(problem).toMatchObject({ health: 'degraded', remedy: PAYMENT_REMEDIES.unexpected });
    expect(problem.platformMessage).toBeUndefined();
    expect(JSON.stringify(problem)).not.toMatch(/sk_live_/);
  });
});
