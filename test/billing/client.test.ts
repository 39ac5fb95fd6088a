import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BillingSetupError, billingClient, billingRateLimits, billingSiteUrl } from '../../shared/billing/client';
import { PlatformError } from '../../shared/http/platform-error';
import { SharedRateBudget, connectionRateKey, forgetRateBudgets, rateBudgetFor } from '../../shared/http/rate-budget';
import type { SimulatorRequest } from '../../sandbox/simulator-server';
import { newKey, startBillingSandbox, type BillingSandbox } from './billing-sandbox';

let box: BillingSandbox;
beforeEach(async () => {
  box = await startBillingSandbox();
});
afterEach(async () => {
  await box.stop();
});

const localEnv = () => ({ BILLING_BASE_URL_TEMPLATE: `${box.sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: true });

describe('billingClient', () => {
  it('calls the site address with /api/v2 paths and Basic auth: the key as username, empty password', async () => {
    const seen: SimulatorRequest[] = [];
    box.sim.onRequest((request) => {
      seen.push(request);
    });
    const response = await box.client().request({ method: 'GET', path: '/api/v2/customers', query: { limit: 1 } });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/sites/acme/api/v2/customers');
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`${box.key}:`).toString('base64')}`);
    expect(box.requests('customers')).toBe(1);
  });

  it('reads the site name from the config, lower-cased, and refuses anything but a subdomain', () => {
    expect(billingSiteUrl('https://{site}.chargebee.com', 'acme-test')).toBe('https://acme-test.chargebee.com');
    const make = (siteName: string) =>
      billingClient({ env: localEnv(), accountId: 'acct-1', config: { siteName }, credentials: { apiKey: box.key } });
    expect(() => make(' ACME ')).not.toThrow();
    for (const bad of ['evil.example.com', 'acme/../x', 'https://acme.chargebee.com', '']) {
      expect(() => make(bad)).toThrow(BillingSetupError);
    }
  });

  it('needs an API key, and never puts one in what it throws', () => {
    const key = newKey();
    expect(() => billingClient({ env: localEnv(), accountId: 'acct-1', config: { siteName: 'acme' }, credentials: {} })).toThrow(/no API key/);
    try {
      billingClient({ env: localEnv(), accountId: 'acct-1', config: { siteName: 'bad.site' }, credentials: { apiKey: key } });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(BillingSetupError);
      expect(String(error)).not.toContain(key);
    }
  });

  it('refuses http:// unless insecure platform URLs are allowed (the loopback sandbox only)', () => {
    const options = { accountId: 'acct-1', config: { siteName: 'acme' }, credentials: { apiKey: box.key } };
    expect(() => billingClient({ ...options, env: { ...localEnv(), ALLOW_INSECURE_PLATFORM_URLS: false } })).toThrow(/https/);
    expect(() => billingClient({ ...options, env: { BILLING_BASE_URL_TEMPLATE: 'https://billing.example.com', ALLOW_INSECURE_PLATFORM_URLS: false } })).toThrow(/\{site\}/);
  });

  it('keeps the key out of a 401 error', async () => {
    const wrong = newKey();
    const error = await box.client({ credentials: { apiKey: wrong } }).request({ method: 'GET', path: '/api/v2/customers' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    expect((error as PlatformError).status).toBe(401);
    expect(JSON.stringify({ ...(error as PlatformError), message: (error as PlatformError).message })).not.toContain(wrong);
  });
});

describe('rate limits', () => {
  it('allows 150 requests a minute with a small burst by default, and the plan rate when configured', () => {
    expect(billingRateLimits({})).toEqual({ ratePerSecond: 2.5, burst: 5 });
    expect(billingRateLimits({ requestsPerMinute: 3_500 })).toEqual({ ratePerSecond: 3_500 / 60, burst: 20 });
    expect(billingRateLimits({ requestsPerMinute: 600 })).toEqual({ ratePerSecond: 10, burst: 20 });
    expect(billingRateLimits({ requestsPerMinute: 1_000_000 }).ratePerSecond).toBe(3_500 / 60);
    expect(billingRateLimits({ requestsPerMinute: 30 })).toEqual({ ratePerSecond: 0.5, burst: 2 });
  });

  it('draws from the account\'s shared billing budget when none is given', async () => {
    const accountId = 'acct-budget';
    const key = connectionRateKey(accountId, 'billing');
    forgetRateBudgets(key);
    try {
      const client = billingClient({
        env: localEnv(),
        accountId,
        config: { siteName: 'acme', requestsPerMinute: 600 },
        credentials: { apiKey: box.key },
      });
      await client.request({ method: 'GET', path: '/api/v2/customers', query: { limit: 1 } });
      // The client made the account's budget from its plan limits; every caller with those limits shares it.
      const shared = rateBudgetFor(key, billingRateLimits({ requestsPerMinute: 600 }));
      expect(shared).toBeInstanceOf(SharedRateBudget);
      expect((shared as SharedRateBudget).limits).toMatchObject({ ratePerSecond: 10, burst: 20 });
    } finally {
      forgetRateBudgets(key);
    }
  });

  it('refuses a requestsPerMinute no plan has', () => {
    expect(() =>
      billingClient({ env: localEnv(), accountId: 'acct-1', config: { siteName: 'acme', requestsPerMinute: 0 }, credentials: { apiKey: box.key } }),
    ).toThrow(BillingSetupError);
  });
});
