import { KeyObject } from 'node:crypto';
import type { CrmSimulatorOptions } from '../sandbox/crm-simulator';
import type { MessagingWorld } from '../test/messaging/support';
import { ChildProcessCalls } from './child-process-calls';
import type { SimulatorCall, SimulatorReport } from './conversations-simulator';

/** The CRM simulator in a child process (bench/conversations-simulator.ts), driven over IPC. */
export class SimulatorProcess {
  private readonly child = new ChildProcessCalls<SimulatorCall>(new URL('./conversations-simulator.ts', import.meta.url));
  url = '';
  /** With `tls`: the same simulator behind https, and its self-signed certificate. */
  tlsUrl: string | undefined;
  caPem: string | undefined;

  private constructor() {}

  static async start(options: CrmSimulatorOptions, tls = false): Promise<SimulatorProcess> {
    const process = new SimulatorProcess();
    const started = (await process.call({ op: 'start', options, tls })) as { url: string; tlsUrl?: string; caPem?: string };
    process.url = started.url;
    process.tlsUrl = started.tlsUrl;
    process.caPem = started.caPem;
    return process;
  }

  call(call: SimulatorCall): Promise<unknown> {
    return this.child.call(call);
  }

  report(platformIds: string[]): Promise<SimulatorReport> {
    return this.call({ op: 'report', platformIds }) as Promise<SimulatorReport>;
  }

  async polling(platformIds: string[]): Promise<number> {
    return (await this.call({ op: 'polling', platformIds })) as number;
  }

  /** What the messaging sandbox needs to set the world up. */
  world(): MessagingWorld {
    return {
      loginUrl: this.url,
      registerConnectedApp: async ({ publicKey, ...registration }) => {
        // A key object does not cross the IPC channel: its PEM does.
        const certificatePem = publicKey instanceof KeyObject ? (publicKey.export({ type: 'spki', format: 'pem' }) as string) : registration.certificatePem;
        await this.call({ op: 'registerConnectedApp', registration: { ...registration, ...(certificatePem ? { certificatePem } : {}) } });
      },
      registerUser: (registration) => this.call({ op: 'registerUser', registration }),
      registerMessagingChannel: async (key) => void (await this.call({ op: 'registerMessagingChannel', key })),
      stop: () => this.child.stop({ op: 'stop' }),
    };
  }
}

/** A third into the agents' window, kills the poller run holding the most conversations: how many it held. */
export async function killBusiestPoller(machines: { pollers(): Array<{ holding: number; kill(): void }> }, windowMs: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, windowMs / 3));
  const victim = machines.pollers().sort((a, b) => b.holding - a.holding)[0];
  if (!victim) return 0;
  victim.kill();
  return victim.holding;
}

/** What a bench needs of the messaging sandbox to start a conversation as a playbook. */
interface PlaybookCaller {
  playbook(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown>; retryAfterS?: number }>;
}

/**
 * Starts one inbound conversation as a well-behaved playbook would: a start the gateway did not
 * answer (a reset keep-alive socket under load, a 502) is tried again up to three times, and a 429
 * (the account's quota of playbook sends, 20/s after a burst of 100 by default) waits its
 * `Retry-After` and goes again. Returns the conversation's id and how many starts were repeated.
 */
export async function startConversation(sandbox: PlaybookCaller): Promise<{ id: string; retries: number; throttled: number }> {
  let retries = 0;
  let throttled = 0;
  for (;;) {
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' }).catch(() => ({ status: 0, body: {} as Record<string, unknown>, retryAfterS: undefined }));
    if (started.status === 201) return { id: started.body.id as string, retries, throttled };
    if (started.status === 429) {
      throttled++;
      await new Promise((resolve) => setTimeout(resolve, (started.retryAfterS ?? 1) * 1000));
      continue;
    }
    if ((started.status === 0 || started.status === 502) && retries < 3) {
      retries++;
      continue;
    }
    throw new Error(`start answered ${started.status}: ${JSON.stringify(started.body)}`);
  }
}

/**
 * Starts `count` conversations, `workers` at a time, each as `startConversation` does; `started` is
 * told each one as it is answered. Returns how many starts were repeated and how many met a 429.
 */
export async function startConversations(
  sandbox: PlaybookCaller,
  count: number,
  workers: number,
  started: (id: string) => Promise<void> | void,
): Promise<{ retries: number; throttled: number }> {
  let next = 0;
  const totals = { retries: 0, throttled: 0 };
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      const { id, retries, throttled } = await startConversation(sandbox);
      totals.retries += retries;
      totals.throttled += throttled;
      await started(id);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return totals;
}
