import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { bundleHandler } from '../lib/bundling';
import { GatewayEnvironment } from '../shared/config';
import { log } from '../shared/log/logger';
import { PollerRun } from '../shared/messaging/poller';
import { functionSettings } from '../shared/handler/function-settings';
import { connectMessagingSandbox, platformIdOf } from '../test/messaging/support';
import { SimulatorProcess } from './conversations-world';
import type { Figures } from './results-file';

/**
 * What one held conversation costs a poller process, measured in a process that holds nothing
 * else per conversation: the simulator (behind TLS, as the platform is) in its own process,
 * dynalite in another, no lifecycle executions and no fleet here; conversations are started
 * through the API, then one poller run holds them. Heap and RSS after a full GC with no poller,
 * then with a run holding 200, then 1,000 conversations. And the poller Lambda's own RSS once its
 * bundle is imported, so the capacity of a 128 MB poller follows:
 *
 *   capacity = (128 MB × 75% − bundle RSS) / RSS per held conversation
 */

const ROOT = new URL('..', import.meta.url).pathname;
const MB = 1024 * 1024;
/** The share of a 128 MB function the poller may fill: the rest is headroom (GC, bursts of answers). */
export const POLLER_MEMORY_BUDGET = 0.75;

function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

async function settled(gc: () => void): Promise<{ heap: number; rss: number; external: number }> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss, external: m.external + m.arrayBuffers };
}

/** The poller bundle as the stack builds it, imported in a fresh process: its RSS is the function's floor. */
async function pollerBundleRssMb(): Promise<number> {
  const dir = join(ROOT, 'bench', '.work', 'conversations');
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, 'poller.mjs');
  await bundleHandler('poller', outfile);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'AKIDBENCH', AWS_SECRET_ACCESS_KEY: 'bench', GATEWAY_MODE: 'aws', AWS_LAMBDA_FUNCTION_NAME: 'IntegrationGateway-poller' };
  for (const setting of functionSettings.poller) env[setting] = setting.endsWith('_URL') || setting.endsWith('_TEMPLATE') ? 'https://bench.example.com/{site}' : `bench-${setting.toLowerCase()}`;
  const script = `await import(${JSON.stringify(outfile)});for(let i=0;i<3;i++){globalThis.gc();await new Promise(r=>setTimeout(r,50))}process.stdout.write(String(process.memoryUsage().rss))`;
  const rss = Number(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', env }));
  return rss / MB;
}

export async function benchPollerMemory(): Promise<{ figures: Figures; notes: string[] }> {
  const gc = collector();
  const simulator = await SimulatorProcess.start({ pollSecondsToMs: 1000, sessionTokenLifetimeMs: 24 * 3600 * 1000 }, true);
  const tls = simulator.tlsUrl !== undefined && simulator.caPem !== undefined;
  if (tls) setDefaultCACertificates([...getCACertificates('default'), simulator.caPem!]);
  const sandbox = await connectMessagingSandbox(simulator, simulator.world(), {
    settings: { maxConcurrentConversations: 100_000 },
    dynamoInChildProcess: true,
    env: { POLLER_HEARTBEAT_SECONDS: '5', POLLER_LEASE_SECONDS: '20', POLLER_IDLE_SECONDS: '600', POLLER_SWEEP_SECONDS: '1', PLATFORM_TIMEOUT_MS: '20000', LONG_POLL_TIMEOUT_SECONDS: '30' },
  });
  const gateway = sandbox.gateway.runtime.local.gateway;
  // Nothing per conversation in this process but what the poller holds: no fleet, no lifecycle executions.
  gateway.stateMachines.startFleet = async () => undefined;
  gateway.stateMachines.startLifecycle = async () => undefined;
  // The platform is https in production: each held poll is a TLS connection.
  const viaTls: typeof fetch = (input, init) => fetch(tls ? String(input).replace(simulator.url, simulator.tlsUrl!) : input, init);

  const ids: string[] = [];
  const platformIds: string[] = [];
  const startConversations = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next++ < count) {
          const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
          if (started.status !== 201) throw new Error(`start answered ${started.status}`);
          ids.push(started.body.id as string);
          platformIds.push(await platformIdOf(sandbox, started.body.id as string));
        }
      }),
    );
  };
  const hold = async (capacity: number) => {
    const run = new PollerRun({ gateway: { ...gateway, env: { ...gateway.env, POLLER_CAPACITY: capacity } }, log, shard: 0, shards: 1, endsAt: Date.now() + 600_000, fetch: viaTls });
    const done = run.run();
    const deadline = Date.now() + 120_000;
    while ((run.holding < capacity || (await simulator.polling(platformIds)) < capacity) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    const held = run.holding;
    const measured = await settled(gc);
    return { run, done, held, measured };
  };

  try {
    await startConversations(1000);
    const none = await settled(gc);
    const small = await hold(200);
    small.run.kill();
    await small.done.catch(() => undefined);
    // The killed run's leases lapse (lease 20 s + skew) before the next run may take them.
    await new Promise((resolve) => setTimeout(resolve, 25_000));
    const large = await hold(1000);
    const at1000 = large.measured;
    large.run.kill();
    await large.done.catch(() => undefined);
    const perConversation = (after: { heap: number; rss: number; external: number }, held: number) => ({
      heap: (after.heap - none.heap) / held / 1024,
      rss: (after.rss - none.rss) / held / 1024,
    });
    const at200 = perConversation(small.measured, small.held);
    const at1000PerConversation = perConversation(at1000, large.held);
    const bundleRss = await pollerBundleRssMb();
    // The larger of the two RSS figures per conversation: sockets and TLS buffers are not in the heap.
    const rssKb = Math.max(at200.rss, at1000PerConversation.rss);
    const capacity = Math.floor(((128 * POLLER_MEMORY_BUDGET - bundleRss) * 1024) / rssKb);
    const round = (value: number) => Math.round(value * 10) / 10;
    return {
      figures: {
        // What a held conversation costs the poller's process, the larger RSS figure (sockets and TLS buffers are outside the heap).
        memory_kb_per_conversation: round(rssKb),
        memory_heap_kb_per_conversation: round(at1000PerConversation.heap),
        memory_heap_kb_per_conversation_at_200: round(at200.heap),
        memory_rss_kb_per_conversation: round(at1000PerConversation.rss),
        memory_rss_kb_per_conversation_at_200: round(at200.rss),
        memory_held_at_1000: large.held,
        memory_tls: tls ? 1 : 0,
        poller_bundle_rss_mb: round(bundleRss),
        poller_capacity_128mb: capacity,
      },
      notes: [
        `Memory per held conversation (memory_*): one poller run in a process with nothing else per conversation (simulator behind ${tls ? 'TLS' : 'plain HTTP'} in its own process, dynalite in another, no fleet or lifecycle executions), after a full GC, against the same process holding no poll: heap ${round(at200.heap)} KB at 200 and ${round(at1000PerConversation.heap)} KB at 1,000; RSS ${round(at200.rss)} KB and ${round(at1000PerConversation.rss)} KB.`,
        `The poller bundle imported in a fresh process: ${round(bundleRss)} MB RSS. A 128 MB poller holds (128 MB × ${POLLER_MEMORY_BUDGET} − ${round(bundleRss)} MB) / ${round(rssKb)} KB = ${capacity} conversations (poller_capacity_128mb), against POLLER_CAPACITY's default of ${GatewayEnvironment.parse({}).POLLER_CAPACITY}.`,
      ],
    };
  } finally {
    await sandbox.stop();
  }
}
