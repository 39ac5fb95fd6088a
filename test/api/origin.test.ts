import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localHttpRoutes } from '../../local/http-routes';
import { IamEnforcement, runAs } from '../../local/iam/enforcement';
import { localOriginSecret } from '../../local/local-origin-secret';
import { startLocalServer } from '../../local/local-server';
import { ORIGIN_HEADER } from '../../shared/origin/origin-check';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * The API only through the distribution, end to end. The local runtime's front plays the
 * distribution (it adds the origin header); a second server with the same routes and handlers plays
 * the HTTP API's own execute-api address, which a caller could reach around the distribution. Every
 * route refuses a request that came that way, and the refusal changes nothing.
 */
let gateway: TestGateway;
let direct: Awaited<ReturnType<typeof startLocalServer>>;
let operator: string;
beforeAll(async () => {
  gateway = await startTestGateway();
  direct = await startLocalServer({ port: 0, routes: localHttpRoutes(), signIn: gateway.runtime.local.signIn });
  operator = await gateway.operatorToken();
});
afterAll(async () => {
  await direct.stop();
  await gateway.stop();
});

const putAccount = (base: string, accountId: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/api/v1/accounts/${accountId}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: accountId, integrationsEnabled: true }),
  });
const accountExists = async (accountId: string) => (await store.getAccount(gateway.runtime.local.gateway.table, accountId)) !== undefined;

async function expectRefused(response: Response): Promise<void> {
  expect(response.status).toBe(403);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(((await response.json()) as { type: string }).type).toBe('urn:integration-gateway:problem:not-through-gateway');
}

describe('a request that did not come through the distribution', () => {
  it('is refused on every route (403 not-through-gateway), whatever function serves it', async () => {
    for (const route of localHttpRoutes()) {
      const path = route.path.replace(/\/\*$/, '/accounts/acme');
      const method = route.method === 'ANY' ? 'GET' : route.method;
      const response = await fetch(`${direct.url}${path}?account=acme&state=s&code=c`, {
        method,
        headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      await expectRefused(response);
    }
  });

  it('changes nothing: an operator creating an account is refused, without the header or with a wrong one', async () => {
    await expectRefused(await putAccount(direct.url, 'bypass'));
    await expectRefused(await putAccount(direct.url, 'bypass', { [ORIGIN_HEADER]: generatedKey('origin_') }));
    expect(await accountExists('bypass')).toBe(false);
  });

  it('a webhook delivery sent around the distribution is refused before it is read: nothing enqueued', async () => {
    const waiting = gateway.runtime.local.queues.webhookEvents.depth;
    await expectRefused(await fetch(`${direct.url}/webhooks/billing?account=acme`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":"ev_1"}' }));
    expect(gateway.runtime.local.queues.webhookEvents.depth).toBe(waiting);
  });
});

describe('a request through the distribution (the local front)', () => {
  it('passes the check and does its work', async () => {
    expect((await putAccount(gateway.url, 'through')).status).toBe(200);
    expect(await accountExists('through')).toBe(true);
  });

  it('passes even when the caller sends a header of that name itself: the front overwrites it, as CloudFront does', async () => {
    expect((await putAccount(gateway.url, 'overwritten', { [ORIGIN_HEADER]: 'guess' })).status).toBe(200);
    expect(await accountExists('overwritten')).toBe(true);
  });
});

describe('reading the secret, judged against each role (local/iam/)', () => {
  it('the functions behind the routes may read it; another function is refused as AWS would', async () => {
    // An enforcement of its own: this deliberate refusal stays out of the run's IAM usage report.
    const { header, source } = localOriginSecret(new IamEnforcement());
    for (const handler of ['api', 'oauth-callback', 'webhook-receiver'] as const) {
      expect(await runAs(handler, source)).toBe(header.value);
    }
    await expect(runAs('sync-job', source)).rejects.toThrow(/not authorized to perform: secretsmanager:GetSecretValue/);
  });
});
