import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalRuntime } from '../../local/local-runtime';
import { startSandbox } from '../../local/sandbox';
import { forgetDataTokens } from '../../shared/data/auth';
import { forgetIdentitySessions } from '../../shared/identity/identity-session';
import { freePortRun } from '../support/free-ports';
import { generatedKey } from '../support/local-runtime';

interface Keys {
  paymentRestrictedKey: string;
  billingReadOnlyKey: string;
  data?: { clientId: string; clientSecret: string; username: string; privateKeyFile: string; loginUrl: string; apiRegion: string };
  messaging?: { clientId: string; clientSecret: string; username: string; privateKeyFile: string; messagingPlatformKey: string; loginUrl: string };
}

/**
 * The sandbox of `npm start` registers a data-platform and a messaging OAuth client, each with an
 * integration user and key pair, at first start, writes what to paste into their forms to
 * LOCAL_DATA_DIR, and registers the same clients again at every start, so connections made
 * earlier stay healthy.
 */
describe('sandbox keys (npm start)', () => {
  const folders: string[] = [];
  const newFolder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-sandbox-'));
    folders.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  // The sandbox listens on the three ports after the gateway's.
  const freePort = async () => freePortRun(4);
  const keysIn = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'sandbox-keys.json'), 'utf8')) as Keys;

  /** npm start in process: the sandbox, then the gateway pointed at it, over the same data folder. */
  async function start(dataDir: string) {
    const sandbox = await startSandbox({}, dataDir, await freePort());
    const runtime = await startLocalRuntime({ dataDir, port: 0, schedules: false, env: sandbox.env });
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const response = await fetch(`${runtime.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await response.json()) as { health: { state: string; reason?: string } };
    };
    return {
      call,
      token: () => runtime.local.signIn.issue({ accountId: 'acme' }),
      operator: () => runtime.local.signIn.issue({ operator: true }),
      async stop() {
        await runtime.stop();
        await sandbox.stop();
      },
    };
  }

  it('writes the data form (client id, username, key file in LOCAL_DATA_DIR, mode 0600), and the data connector reaches healthy with it, across a restart', async () => {
    const dataDir = newFolder();
    const first = await start(dataDir);
    const keys = keysIn(dataDir);
    expect(keys.data).toMatchObject({ clientId: expect.stringMatching(/^3MVG9/), username: expect.stringMatching(/@/), loginUrl: 'production', apiRegion: 'US' });
    expect(keys.data!.privateKeyFile).toBe(join(dataDir, 'sandbox-data-private-key.pem'));
    const pem = readFileSync(keys.data!.privateKeyFile, 'utf8');
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(statSync(keys.data!.privateKeyFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'sandbox-keys.json')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dataDir, 'sandbox-keys.json'), 'utf8')).not.toContain('PRIVATE KEY');
    // The messaging connector's client is registered the same way, with its own key pair and a channel.
    expect(keys.messaging).toMatchObject({ clientId: expect.stringMatching(/^3MVG9/), messagingPlatformKey: expect.any(String), loginUrl: 'production' });
    expect(keys.messaging!.clientId).not.toBe(keys.data!.clientId);
    expect(keys.messaging!.privateKeyFile).toBe(join(dataDir, 'sandbox-messaging-private-key.pem'));
    expect(statSync(keys.messaging!.privateKeyFile).mode & 0o777).toBe(0o600);

    const form = { clientId: keys.data!.clientId, username: keys.data!.username, loginUrl: keys.data!.loginUrl, apiRegion: keys.data!.apiRegion, privateKey: pem };
    try {
      await first.call('PUT', '/api/v1/accounts/acme', await first.operator(), { name: 'Acme', integrationsEnabled: true });
      expect((await first.call('PUT', '/api/v1/accounts/acme/connections/data', await first.token(), form)).health.state).toBe('healthy');
      const m = keys.messaging!;
      const messagingForm = { clientId: m.clientId, clientSecret: m.clientSecret, username: m.username, messagingPlatformKey: m.messagingPlatformKey, certificate: readFileSync(m.privateKeyFile, 'utf8') };
      expect((await first.call('PUT', '/api/v1/accounts/acme/connections/messaging', await first.token(), messagingForm)).health.state).toBe('healthy');
    } finally {
      await first.stop();
    }

    // A fresh simulator (and a fresh gateway process: no cached tokens) knows nothing: the sandbox registers the same clients again.
    forgetDataTokens();
    forgetIdentitySessions();
    const second = await start(dataDir);
    try {
      expect(keysIn(dataDir).data).toEqual(keys.data);
      expect(readFileSync(keys.data!.privateKeyFile, 'utf8')).toBe(pem);
      expect(await second.call('POST', '/api/v1/accounts/acme/connections/data/test', await second.token())).toMatchObject({ ok: true, health: { state: 'healthy' } });
      expect(await second.call('POST', '/api/v1/accounts/acme/connections/messaging/test', await second.token())).toMatchObject({ ok: true, health: { state: 'healthy' } });
    } finally {
      await second.stop();
    }
  });

  it('a keys file from before the data platform keeps its payment and billing keys and gains the data client', async () => {
    const dataDir = newFolder();
    const old = { paymentRestrictedKey: generatedKey('rk_test_'), paymentSecretKey: generatedKey('sk_test_'), billingSite: 'acme-test', billingReadOnlyKey: generatedKey('test_') };
    writeFileSync(join(dataDir, 'sandbox-keys.json'), JSON.stringify(old));
    const sandbox = await startSandbox({}, dataDir, await freePort());
    await sandbox.stop();
    expect(keysIn(dataDir)).toMatchObject({ ...old, data: { clientId: expect.any(String), privateKeyFile: expect.any(String) }, messaging: { clientId: expect.any(String) } });
  });

  it('SANDBOX_LATENCY_MS and SANDBOX_JITTER_MS slow every simulator from the start, the data and messaging one too', async () => {
    const sandbox = await startSandbox({ SANDBOX_LATENCY_MS: '250', SANDBOX_JITTER_MS: '40' }, newFolder(), await freePort());
    try {
      const { payment, billing, crm } = sandbox.simulators;
      for (const simulator of [payment!, billing!, crm!]) expect(simulator.latency()).toEqual({ ms: 250, jitterMs: 40 });
    } finally {
      await sandbox.stop();
    }
  });
});
