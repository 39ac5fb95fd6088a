import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortRun, userShellEnv } from '../support/free-ports';

/**
 * `npm start` itself (bin/local.ts in a child process, as a user runs it): it serves the gateway
 * and the sandbox, and refuses to start over a lost or damaged key file with what to do.
 */
describe('npm start', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-start-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  // Free now (checked, not guessed); the sandbox uses the next three.
  let port: number;
  beforeAll(async () => {
    port = await freePortRun(4);
  });

  function start(extraEnv: Record<string, string> = {}): { output: () => string; exited: Promise<number | null>; stop: () => void } {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
      env: { ...userShellEnv(), PORT: String(port), LOCAL_DATA_DIR: dataDir, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    return { output: () => text, exited: new Promise((resolve) => child.once('exit', resolve)), stop: () => child.kill('SIGTERM') };
  }

  async function waitFor(predicate: () => boolean, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('serves the gateway and the sandbox, and prints the spec addresses', async () => {
    const gateway = start();
    try {
      await waitFor(() => gateway.output().includes('sandbox keys to connect with'));
      for (const address of ['/auth/crmmessaging/callback', '/auth/crmdata/callback', '/webhooks/billing', '/webhooks/payments', '/api/v1/openapi.json', 'Dashboard:']) {
        expect(gateway.output()).toContain(address);
      }
      const openapi = await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`);
      expect(openapi.status).toBe(200);
      const sandbox = await fetch(`http://127.0.0.1:${port + 1}/__sandbox/stats`);
      expect(sandbox.status).toBe(200);
    } finally {
      gateway.stop();
      await gateway.exited;
    }
  });

  it('refuses to start when the key file is damaged, saying what to do', async () => {
    writeFileSync(join(dataDir, 'vault.key'), 'not a key file');
    const gateway = start();
    const code = await gateway.exited;
    expect(code).toBe(1);
    expect(gateway.output()).toMatch(/Cannot start: The local key file .* is damaged .* Restore it from your backup/);
  });

  it('refuses to start when a setting is wrong, naming it and what is wrong', async () => {
    // A real billing address (so the sandbox stays off for it) without the {site} placeholder.
    const gateway = start({ BILLING_BASE_URL_TEMPLATE: 'https://acme.chargebee.com' });
    const code = await gateway.exited;
    expect(code).toBe(1);
    expect(gateway.output()).toMatch(/Cannot start: Settings are not valid:\s+BILLING_BASE_URL_TEMPLATE: must contain \{site\}/);
  });
});
