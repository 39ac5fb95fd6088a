import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setLogSink } from '../../shared/log/logger';
import { startTestGateway, type TestGateway } from '../support/local-runtime';
import { startDataSandbox, type DataSandbox } from './support';
import * as store from '../../shared/store/store';

/** Connect Account and Test Connection for the data connector through the API, against the CRM simulator. */
describe('data connector through the API', () => {
  let sandbox: DataSandbox;
  let gateway: TestGateway;
  const logLines: string[] = [];
  let restore: ReturnType<typeof setLogSink>;

  beforeAll(async () => {
    restore = setLogSink((line) => logLines.push(line));
    sandbox = await startDataSandbox();
    gateway = await startTestGateway({
      DATA_LOGIN_URL: sandbox.env.DATA_LOGIN_URL,
      DATA_SANDBOX_LOGIN_URL: sandbox.env.DATA_SANDBOX_LOGIN_URL,
      ALLOW_INSECURE_PLATFORM_URLS: 'true',
    });
    await gateway.enableAccount('acme');
  });
  afterAll(async () => {
    setLogSink(restore);
    await gateway.stop();
    await sandbox.stop();
  });

  it('connects with the JWT bearer form, tests healthy, and never shows or logs the private key', async () => {
    const token = await gateway.userToken('acme');
    const connected = await gateway.call('PUT', '/api/v1/accounts/acme/connections/data', { token, body: { ...sandbox.config, ...sandbox.credentials } });
    const connectedText = await connected.text();
    expect(connected.status).toBe(200);
    expect(JSON.parse(connectedText)).toMatchObject({ connector: 'data', config: { clientId: sandbox.config.clientId, loginUrl: 'production' } });

    const tested = await gateway.call('POST', '/api/v1/accounts/acme/connections/data/test', { token });
    expect(await tested.json()).toMatchObject({ ok: true, health: { state: 'healthy' } });

    const keyBody = sandbox.credentials.privateKey.split('\n').slice(1, -2).join('');
    for (const text of [connectedText, logLines.join('\n')]) expect(text).not.toContain(keyBody.slice(0, 40));
  });

  it('a private key that does not match the uploaded certificate fails Test Connection with the spec’s remedy', async () => {
    const token = await gateway.userToken('acme');
    const { rsaKeyPem } = await import('./support');
    const reconnected = await gateway.call('PUT', '/api/v1/accounts/acme/connections/data', {
      token,
      body: { ...sandbox.config, privateKey: rsaKeyPem(2048, 'pkcs8').privateKeyPem },
    });
    expect(reconnected.status).toBe(200);
    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/data/test', { token })).json()) as { ok: boolean; health: { state: string; remedy: string } };
    expect(tested.ok).toBe(false);
    expect(tested.health.state).toBe('needs_reconnect');
    expect(tested.health.remedy).toMatch(/private key must match the certificate/i);
  });

  it('a profile read on bad credentials answers with the spec’s remedy (409) and marks the connection; an outage is a 503', async () => {
    const token = await gateway.userToken('acme');
    const [someone] = sandbox.sim.data.seedUnifiedIndividuals(1);
    const created = await gateway.call('POST', '/api/v1/accounts/acme/api-keys', { token, body: { name: 'profiles' } });
    const key = ((await created.json()) as { key: string }).key;
    const read = () => gateway.call('GET', `/api/v1/playbook/profiles/${encodeURIComponent(someone!.Email)}`, { token: key });

    expect((await gateway.call('PUT', '/api/v1/accounts/acme/connections/data', { token, body: { ...sandbox.config, ...sandbox.credentials } })).status).toBe(200);
    const good = await read();
    expect(good.status).toBe(200);
    expect(await good.json()).toMatchObject({ individualId: someone!.IndividualId });

    const { rsaKeyPem } = await import('./support');
    const saved = await gateway.call('PUT', '/api/v1/accounts/acme/connections/data?test=false', { token, body: { ...sandbox.config, privateKey: rsaKeyPem(2048, 'pkcs8').privateKeyPem } });
    expect(((await saved.json()) as { health: { state: string } }).health.state).toBe('unknown');
    const refused = await read();
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await refused.json()) as { title: string; detail: string; remedy: string };
    expect(problem.title).not.toMatch(/did not answer/);
    expect(problem.remedy).toMatch(/private key must match the certificate/i);
    expect((await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'data'))?.health).toMatchObject({ state: 'needs_reconnect' });

    expect((await gateway.call('PUT', '/api/v1/accounts/acme/connections/data', { token, body: { ...sandbox.config, ...sandbox.credentials } })).status).toBe(200);
    sandbox.sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 20 });
    try {
      const outage = await read();
      expect(outage.status).toBe(503);
      expect(((await outage.json()) as { remedy: string }).remedy).toMatch(/tries again on its own/);
    } finally {
      sandbox.sim.faults.clear();
    }
  });
});
