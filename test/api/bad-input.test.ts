import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/** Every bad request gets a problem document and changes nothing. */
describe('API bad input', () => {
  let gateway: TestGateway;
  let token: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    await gateway.enableAccount('acme');
    token = await gateway.userToken('acme');
  });
  afterAll(() => gateway.stop());

  async function expectProblem(response: Response, status: number): Promise<Record<string, unknown>> {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ status, type: expect.stringMatching(/^urn:integration-gateway:problem:/), title: expect.any(String) });
    return problem;
  }

  async function expectNoConnection(): Promise<void> {
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'payment')).toBeUndefined();
  }

  const connectPath = '/api/v1/accounts/acme/connections/payment';

  it('malformed JSON: 400', async () => {
    await expectProblem(await gateway.call('PUT', connectPath, { token, rawBody: '{"secretKey":', headers: { 'content-type': 'application/json' } }), 400);
    await expectNoConnection();
  });

  it('wrong content type: 415 with the header to send', async () => {
    const problem = await expectProblem(await gateway.call('PUT', connectPath, { token, rawBody: 'secretKey=x', headers: { 'content-type': 'text/plain' } }), 415);
    expect(problem.remedy).toContain('application/json');
    await expectNoConnection();
  });

  it('oversized body: 413 before parsing', async () => {
    const huge = JSON.stringify({ secretKey: generatedKey('sk_test_'), padding: 'x'.repeat(300 * 1024) });
    await expectProblem(await gateway.call('PUT', connectPath, { token, rawBody: huge, headers: { 'content-type': 'application/json' } }), 413);
    await expectNoConnection();
  });

  it('unknown fields are refused, and the value sent is never echoed', async () => {
    const secretKey = generatedKey('sk_test_');
    const response = await gateway.call('PUT', connectPath, { token, body: { secretKey, sneaky: secretKey } });
    const text = await response.clone().text();
    const problem = await expectProblem(response, 400);
    expect(problem.errors).toEqual([expect.objectContaining({ path: '(body)' })]);
    expect(text).not.toContain(secretKey);
    await expectNoConnection();
  });

  it('a publishable key is refused with why', async () => {
    const secretKey = generatedKey('pk_live_');
    const response = await gateway.call('PUT', connectPath, { token, body: { secretKey } });
    const text = await response.clone().text();
    const problem = await expectProblem(response, 400);
    expect(JSON.stringify(problem.errors)).toContain('publishable key');
    expect(text).not.toContain(secretKey);
    await expectNoConnection();
  });

  it('a placeholder copied from an example is named as such, not as a wrong prefix (payment and billing)', async () => {
    const payment = await expectProblem(
      await gateway.call('PUT', connectPath, { token, body: { secretKey: 'rk_test_<your restricted key>', webhookSigningSecret: 'whsec_<secret>' } }),
      400,
    );
    const messages = payment.errors as Array<{ path: string; message: string }>;
    expect(messages.map((e) => e.path).sort()).toEqual(['secretKey', 'webhookSigningSecret']);
    for (const { message } of messages) {
      expect(message).toMatch(/placeholder \(the part in <…>\)/);
      expect(message).not.toMatch(/begin with/);
    }
    const billing = await expectProblem(
      await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing', { token, body: { siteName: 'acme-test', apiKey: 'test_<your read-only key>', environment: 'test' } }),
      400,
    );
    expect(billing.errors).toEqual([{ path: 'apiKey', message: expect.stringMatching(/placeholder/) }]);
    // A right prefix with a damaged rest says what is wrong with the rest.
    const damaged = await expectProblem(await gateway.call('PUT', connectPath, { token, body: { secretKey: 'rk_test_abc def ghi jkl' } }), 400);
    expect(JSON.stringify(damaged.errors)).toMatch(/only letters and digits/);
    await expectNoConnection();
  });

  it('a billing site given as a URL is refused with the subdomain to enter', async () => {
    const response = await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing', {
      token,
      body: { siteName: 'https://acme-test.chargebee.com', apiKey: generatedKey('test_'), environment: 'test' },
    });
    const problem = await expectProblem(response, 400);
    expect(JSON.stringify(problem.errors)).toContain('enter acme-test');
  });

  it('no sign-in: 401; another account: 404; not an operator: 403', async () => {
    expect((await gateway.call('GET', '/api/v1/accounts/acme')).status).toBe(401);
    expect((await gateway.call('GET', '/api/v1/accounts/acme', { token: 'not-a-token' })).status).toBe(401);
    await expectProblem(await gateway.call('GET', '/api/v1/accounts/acme', { token: await gateway.userToken('other') }), 404);
    await expectProblem(await gateway.call('PUT', '/api/v1/accounts/acme', { token, body: { name: 'x', integrationsEnabled: true } }), 403);
  });

  it('Integrations not enabled: 403 with the remedy', async () => {
    const operator = await gateway.operatorToken();
    await gateway.call('PUT', '/api/v1/accounts/initech', { token: operator, body: { name: 'Initech', integrationsEnabled: false } });
    const response = await gateway.call('PUT', '/api/v1/accounts/initech/connections/payment', {
      token: await gateway.userToken('initech'),
      body: { secretKey: generatedKey('sk_test_') },
    });
    const problem = await expectProblem(response, 403);
    expect(problem.remedy).toMatch(/support contact/);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'initech', 'payment')).toBeUndefined();
  });

  it('bad path parameters and unknown operations', async () => {
    await expectProblem(await gateway.call('GET', '/api/v1/accounts/acme/connections/fax', { token }), 400);
    await expectProblem(await gateway.call('GET', '/api/v1/nothing-here', { token }), 404);
    await expectProblem(await gateway.call('GET', '/api/v1/accounts/%E0%A4', { token }), 400);
    await expectProblem(await gateway.call('POST', '/api/v1/accounts/acme', { token, body: {} }), 405);
  });

  it('the messaging connection form names each missing field', async () => {
    const problem = await expectProblem(await gateway.call('PUT', '/api/v1/accounts/acme/connections/messaging', { token, body: {} }), 400);
    expect(JSON.stringify(problem)).toContain('clientId');
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'messaging')).toBeUndefined();
  });
});
