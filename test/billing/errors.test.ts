import { describe, expect, it } from 'vitest';
import { BillingSetupError } from '../../shared/billing/client';
import { billingKeyMode, billingProblem, billingWrongModeWarning } from '../../shared/billing/errors';
import { PlatformError, type PlatformErrorDetails } from '../../shared/http/platform-error';
import { newKey } from './billing-sandbox';

const platformError = (details: Partial<PlatformErrorDetails>): PlatformError =>
  new PlatformError({ platform: 'billing', kind: 'unavailable', attempts: 1, method: 'GET', path: '/api/v2/customers', retryable: false, ...details });

describe('billingProblem', () => {
  it('maps each kind of platform failure to a health state', () => {
    const cases: Array<[Partial<PlatformErrorDetails>, string]> = [
      [{ kind: 'auth', status: 401 }, 'needs_reconnect'],
      [{ kind: 'permission', status: 403 }, 'needs_reconnect'],
      [{ kind: 'not_found', status: 404, platformCode: 'site_not_found' }, 'needs_reconnect'],
      [{ kind: 'rate_limited', status: 429 }, 'degraded'],
      [{ kind: 'unavailable', status: 500 }, 'degraded'],
      [{ kind: 'unavailable', status: 503 }, 'degraded'],
      [{ kind: 'timeout' }, 'degraded'],
      [{ kind: 'network', reason: 'connection failed (ECONNRESET)' }, 'degraded'],
      [{ kind: 'invalid_response', status: 200, reason: 'body is not JSON (text/html, 48 bytes)' }, 'degraded'],
      [{ kind: 'invalid_request', status: 400 }, 'degraded'],
    ];
    for (const [details, health] of cases) {
      const problem = billingProblem(platformError(details));
      expect(problem.health, details.kind).toBe(health);
      expect(problem.reason.length, details.kind).toBeGreaterThan(10);
      expect(problem.remedy.length, details.kind).toBeGreaterThan(10);
    }
  });

  it('words the remedies as the spec\'s Errors table does', () => {
    expect(billingProblem(platformError({ kind: 'auth', status: 401 })).remedy).toMatch(/verify the api key, or recreate it/i);
    expect(billingProblem(platformError({ kind: 'not_found', status: 404 })).remedy).toMatch(/site name: it is the subdomain/);
    expect(billingProblem(platformError({ kind: 'permission', status: 403 })).remedy).toMatch(/read-only key \(preferred\) or a full-access key/);
    const limited = billingProblem(platformError({ kind: 'rate_limited', status: 429 })).remedy;
    expect(limited).toMatch(/reduce the sync frequency/);
    expect(limited).toMatch(/pages through data and backs off exponentially/);
  });

  it('treats a missing record (not a list) as no reason to reconnect', () => {
    const problem = billingProblem(platformError({ kind: 'not_found', status: 404, path: '/api/v2/subscriptions/sub_1', platformCode: 'resource_not_found' }));
    expect(problem.health).toBe('degraded');
  });

  it('carries the platform message, masking the connection\'s key should the platform echo it', () => {
    const key = newKey();
    const problem = billingProblem(platformError({ kind: 'auth', status: 401, platformMessage: `Invalid api key ${key}` }), { apiKey: key });
    expect(problem.platformMessage).toContain('Invalid api key');
    expect(JSON.stringify(problem)).not.toContain(key);
    expect(billingProblem(platformError({ kind: 'timeout' }))).not.toHaveProperty('platformMessage');
  });

  it('a stored connection that cannot be used needs reconnecting', () => {
    const problem = billingProblem(new BillingSetupError('no API key is stored for it'));
    expect(problem).toMatchObject({ health: 'needs_reconnect', reason: expect.stringContaining('no API key'), remedy: expect.stringMatching(/reconnect/i) });
  });

  it('never repeats an unexpected error\'s own message', () => {
    const problem = billingProblem(new Error('customer ada@example.com broke something'));
    expect(problem.health).toBe('degraded');
    expect(JSON.stringify(problem)).not.toContain('ada@example.com');
    expect(billingProblem('a string thrown').health).toBe('degraded');
  });

  it('adds the test-site hint to an unknown site on a test connection', () => {
    const problem = billingProblem(platformError({ kind: 'not_found', status: 404, platformCode: 'site_not_found' }), { siteName: 'acme', environment: 'test' });
    expect(problem.remedy).toContain('acme-test');
    const live = billingProblem(platformError({ kind: 'not_found', status: 404, platformCode: 'site_not_found' }), { siteName: 'acme-test', environment: 'live' });
    expect(live.remedy).toMatch(/looks like a test site/);
  });
});

describe('key mode', () => {
  it('reads the mode from the key prefix', () => {
    expect(billingKeyMode(newKey('test'))).toBe('test');
    expect(billingKeyMode(newKey('live'))).toBe('live');
    expect(billingKeyMode('cb_ab12cd34ef56')).toBeUndefined();
  });

  it('warns when the key mode and the Environment setting differ, without quoting the key', () => {
    const live = newKey('live');
    const warning = billingWrongModeWarning({ apiKey: live, environment: 'test' });
    expect(warning).toMatch(/live key but Environment is Test Mode/);
    expect(warning).not.toContain(live);
    expect(billingWrongModeWarning({ apiKey: newKey('test'), environment: 'test' })).toBeUndefined();
    expect(billingWrongModeWarning({ apiKey: 'unprefixed-key-1234', environment: 'live' })).toBeUndefined();
  });
});
