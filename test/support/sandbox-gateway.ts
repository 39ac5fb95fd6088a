import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalRuntime, type LocalRuntime } from '../../local/local-runtime';
import { startSandbox, type RunningSandbox } from '../../local/sandbox';

/** What `sandbox-keys.json` holds: the values a user pastes into the dashboard's forms. */
export interface SandboxKeysFile {
  paymentRestrictedKey: string;
  paymentSecretKey: string;
  billingSite: string;
  billingReadOnlyKey: string;
  data: { clientId: string; clientSecret: string; username: string; privateKeyFile: string; loginUrl: 'production'; apiRegion: 'US' };
  messaging: { clientId: string; clientSecret: string; username: string; privateKeyFile: string; messagingPlatformKey: string };
}

export interface SandboxGateway {
  runtime: LocalRuntime;
  sandbox: RunningSandbox;
  url: string;
  keys: SandboxKeysFile;
  stop(): Promise<void>;
}

/**
 * The gateway exactly as `npm start` runs it: the sandbox simulators on the ports after the gateway's (with
 * the OAuth clients registered for this gateway's callback addresses) and the local runtime, on a free block of
 * ports, with a throwaway data folder and an in-memory table.
 */
export async function startSandboxGateway(): Promise<SandboxGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-sandbox-'));
  for (let attempt = 1; ; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    let sandbox: RunningSandbox | undefined;
    try {
      sandbox = await startSandbox({}, dataDir, port);
      const runtime = await startLocalRuntime({ port, schedules: false, retryDelayMs: 10, env: sandbox.env });
      const keys = JSON.parse(readFileSync(join(dataDir, 'sandbox-keys.json'), 'utf8')) as SandboxKeysFile;
      const running = sandbox;
      return {
        runtime,
        sandbox,
        url: runtime.url,
        keys,
        async stop() {
          // Work still queued (a disconnect's purge jobs) finishes before the table goes.
          await Promise.all(Object.values(runtime.local.queues).map((queue) => queue.idle()));
          await runtime.stop();
          await running.stop();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      await sandbox?.stop();
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 10) throw error;
    }
  }
}
