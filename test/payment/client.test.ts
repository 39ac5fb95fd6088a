import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PaymentSimulator } from '../../sandbox/payment-simulator';
import { connectionRateKey, forgetRateBudgets, rateBudgetFor, type Clock } from '../../shared/http/rate-budget';
import { modeOfKey, paymentClient, paymentEndpoint, paymentEndpointRateLimits, paymentRateLimits } from '../../shared/payment/client';
import { clientFor, newKey, startSimulator } from './support';

let sim: PaymentSimulator;
let key: string;

beforeEach(async () => {
  ({ sim, key } = await startSimulator());
  forgetRateBudgets();
});
afterEach(async () => {
  forgetRateBudgets();
  await sim.stop();
});

describe('paymentRateLimits', () => {
  it('live keys 100 requests/s, test keys 25/s, burst a tenth of a second (at least 2); an override wins', () => {
    expect(paymentRateLimits({ mode: 'live', keyType: 'secret' })).toEqual({ ratePerSecond: 100, burst: 10 });
    expect(paymentRateLimits({ mode: 'test', keyType: 'restricted' })).toEqual({ ratePerSecond: 25, burst: 3 });
    expect(paymentRateLimits({ mode: 'live', requestsPerSecond: 40 })).toEqual({ ratePerSecond: 40, burst: 4 });
    // Unknown mode: the lower limit is the safe guess.
    expect(paymentRateLimits({})).toEqual({ ratePerSecond: 25, burst: 3 });
    expect(paymentRateLimits({ mode: 'staging', requestsPerSecond: 'fast' })).toEqual({ ratePerSecond: 25, burst: 3 });
  });

  it('each endpoint 25/s, never above the connection; an override wins', () => {
    expect(paymentEndpointRateLimits({ mode: 'live' })).toEqual({ ratePerSecond: 25, burst: 3 });
    expect(paymentEndpointRateLimits({ mode: 'live', requestsPerSecond: 10 })).toEqual({ ratePerSecond: 10, burst: 2 });
    expect(paymentEndpointRateLimits({ mode: 'live', requestsPerSecondPerEndpoint: 50 })).toEqual({ ratePerSecond: 50, burst: 5 });
  });

  it('names the endpoint a call counts against: the operation, whatever the id', () => {
    expect(paymentEndpoint('GET', '/v1/customers')).toBe('GET /v1/customers');
    expect(paymentEndpoint('GET', '/v1/customers/cus_123')).toBe('GET /v1/customers/{id}');
    expect(paymentEndpoint('GET', '/v1/customers/cus_456')).toBe('GET /v1/customers/{id}');
    expect(paymentEndpoint('POST', '/v1/webhook_endpoints/we_1')).toBe('POST /v1/webhook_endpoints/{id}');
  });

  it('reads the mode from a key prefix', () => {
    expect(modeOfKey(newKey('rk_live_'))).toBe('live');
    expect(modeOfKey(newKey('sk_test_'))).toBe('test');
    expect(modeOfKey(newKey('pk_test_'))).toBeUndefined();
  });
});

describe('paymentClient', () => {
  it('calls the configured base URL with Basic auth: the key as username, an empty password', async () => {
    const seen: Array<{ path: string; authorization: string | undefined }> = [];
    sim.onRequest((request) => void seen.push({ path: request.path, authorization: request.headers.authorization }));
    const response = await clientFor(sim, key).request({ method: 'GET', path: '/v1/customers', query: { limit: 1 } });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/customers');
    const [scheme, encoded] = seen[0]!.authorization!.split(' ');
    expect(scheme).toBe('Basic');
    expect(Buffer.from(encoded!, 'base64').toString('utf8')).toBe(`${key}:`);
  });

  it('refuses an http:// platform address unless insecure addresses are allowed (loopback simulators only)', () => {
    const make = (allow: boolean) =>
      paymentClient({
        env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: allow },
        accountId: 'acct-a',
        config: { mode: 'test' },
        credentials: { secretKey: key },
      });
    expect(() => make(false)).toThrow(/https/);
    expect(() => make(true)).not.toThrow();
  });

  it('needs a secret key, and says so without echoing credentials', () => {
    const webhookSecret = `whsec_${'a'.repeat(24)}`;
    let message = '';
    try {
      paymentClient({
        env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: true },
        accountId: 'acct-a',
        config: {},
        credentials: { webhookSigningSecret: webhookSecret },
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/secretKey/);
    expect(message).not.toContain(webhookSecret);
  });

  it("draws from the account's shared payment rate budget when none is given", async () => {
    const slept: number[] = [];
    const clock: Clock = { now: () => 0, sleep: async (ms) => void slept.push(ms) };
    // Another caller (a Test Connection, say) made the account's budget first, from the same config.
    const config = { mode: 'live', requestsPerSecond: 2 };
    rateBudgetFor(connectionRateKey('acct-shared', 'payment'), paymentRateLimits(config), { clock });

    const client = paymentClient({
      env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: true },
      accountId: 'acct-shared',
      config,
      credentials: { secretKey: key },
    });
    for (let i = 0; i < 4; i += 1) await client.request({ method: 'GET', path: '/v1/customers', query: { limit: 1 } });
    // The third and fourth calls had to wait for the shared bucket to refill.
    expect(slept).toHaveLength(2);
    expect(sim.requests.get('GET /v1/customers')).toBe(4);
  });
});
