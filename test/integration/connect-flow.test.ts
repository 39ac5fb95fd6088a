import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setLogSink } from '../../shared/log/logger';
import { tableText } from '../support/dynamo';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * Connect Account end to end over real HTTP: local sign-in, the API handler, the vault and
 * dynalite. Secrets are generated here at run time; afterwards no secret may appear in the
 * logs, the API's answers or the table. No platform is involved: the connections are saved
 * untested (`?test=false`); test/api/connect-check.test.ts covers Connect's test.
 */
describe('connect flow', () => {
  let gateway: TestGateway;
  const logLines: string[] = [];
  let restoreSink: ReturnType<typeof setLogSink>;

  beforeAll(async () => {
    restoreSink = setLogSink((line) => logLines.push(line));
    gateway = await startTestGateway();
    await gateway.enableAccount('acme');
    await gateway.enableAccount('globex');
  });
  afterAll(async () => {
    setLogSink(restoreSink);
    await gateway.stop();
  });

  it('stores secrets only encrypted, answers masked, and logs none of them', async () => {
    const secretKey = generatedKey('rk_test_');
    const webhookSigningSecret = generatedKey('whsec_');
    const apiKey = generatedKey('test_');
    const token = await gateway.userToken('acme');

    const payment = await gateway.call('PUT', '/api/v1/accounts/acme/connections/payment?test=false', { token, body: { secretKey, webhookSigningSecret } });
    const paymentText = await payment.text();
    expect(payment.status).toBe(200);
    const billing = await gateway.call('PUT', '/api/v1/accounts/acme/connections/billing?test=false', {
      token,
      body: { siteName: 'acme-test', apiKey, environment: 'test' },
    });
    const billingText = await billing.text();
    expect(billing.status).toBe(200);

    const view = JSON.parse(paymentText);
    expect(view.maskedSecrets).toEqual({ secretKey: `••••${secretKey.slice(-4)}`, webhookSigningSecret: `••••${webhookSigningSecret.slice(-4)}` });
    expect(view.config).toMatchObject({ keyType: 'restricted', mode: 'test', webhookSigningSecretSet: true });

    const read = await gateway.call('GET', '/api/v1/accounts/acme/connections', { token });
    const readText = await read.text();
    expect(JSON.parse(readText).connections).toHaveLength(2);

    const table = await tableText(gateway.runtime.local.dynamo);
    expect(table).toContain('CONNECTION#payment');
    const logText = logLines.join('\n');
    expect(logText).toContain('connection saved');
    for (const secret of [secretKey, webhookSigningSecret, apiKey]) {
      const forms = [secret, Buffer.from(secret).toString('base64'), secret.slice(4, -4)];
      for (const form of forms) {
        expect(table).not.toContain(form);
        expect(logText).not.toContain(form);
        expect(paymentText + billingText + readText).not.toContain(form);
      }
    }
  });

  it('reconnecting replaces the credentials; disconnect deletes them', async () => {
    const token = await gateway.userToken('globex');
    const first = generatedKey('sk_test_');
    const second = generatedKey('sk_test_');
    expect((await gateway.call('PUT', '/api/v1/accounts/globex/connections/payment?test=false', { token, body: { secretKey: first } })).status).toBe(200);
    const again = await gateway.call('PUT', '/api/v1/accounts/globex/connections/payment?test=false', { token, body: { secretKey: second } });
    expect(((await again.json()) as { maskedSecrets: Record<string, string> }).maskedSecrets.secretKey).toBe(`••••${second.slice(-4)}`);

    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'payment');
    const opened = await gateway.runtime.local.gateway.vault.open({ accountId: 'globex', connector: 'payment' }, stored!.credentials);
    expect(opened.secretKey).toBe(second);

    expect((await gateway.call('DELETE', '/api/v1/accounts/globex/connections/payment', { token })).status).toBe(204);
    expect((await gateway.call('GET', '/api/v1/accounts/globex/connections/payment', { token })).status).toBe(404);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'payment')).toBeUndefined();
  });

  it('reconnecting with only a new key keeps the webhook signing secret the endpoint uses', async () => {
    const token = await gateway.userToken('globex');
    const webhookSigningSecret = generatedKey('whsec_');
    await gateway.call('PUT', '/api/v1/accounts/globex/connections/payment?test=false', { token, body: { secretKey: generatedKey('rk_test_'), webhookSigningSecret } });
    const newKey = generatedKey('rk_test_');
    const again = (await (await gateway.call('PUT', '/api/v1/accounts/globex/connections/payment?test=false', { token, body: { secretKey: newKey } })).json()) as {
      config: Record<string, unknown>;
    };
    expect(again.config.webhookSigningSecretSet).toBe(true);
    const stored = await store.getConnection(gateway.runtime.local.gateway.table, 'globex', 'payment');
    expect(await gateway.runtime.local.gateway.vault.open({ accountId: 'globex', connector: 'payment' }, stored!.credentials)).toEqual({ secretKey: newKey, webhookSigningSecret });
  });

  it('keeps accounts apart: one account cannot read or write another', async () => {
    const token = await gateway.userToken('globex');
    const read = await gateway.call('GET', '/api/v1/accounts/acme/connections', { token });
    expect(read.status).toBe(404);
    const write = await gateway.call('PUT', '/api/v1/accounts/acme/connections/payment', { token, body: { secretKey: generatedKey('sk_test_') } });
    expect(write.status).toBe(404);
    expect(write.headers.get('content-type')).toBe('application/problem+json');
  });
});
