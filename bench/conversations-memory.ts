import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { bundleHandler, leanRuntime } from '../lib/bundling';
import { GatewayEnvironment } from '../shared/config';
import { log, setLogSink } from '../shared/log/logger';
import { pollerCapacity, POLLER_MEMORY_BUDGET } from '../shared/messaging/fleet';
import { PollerRun } from '../shared/messaging/poller';
import { functionSettings } from '../shared/handler/function-settings';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { connectMessagingSandbox, platformIdOf } from '../test/messaging/support';
import { SimulatorProcess, startConversations } from './conversations-world';
import type { Figures } from './results-file';
import { median, slope } from './statistics';

/**
 * What one held conversation costs a poller process, measured in a child process of its own, started
 * with the poller Lambda's Node options (lib/bundling.ts leanRuntime), that holds nothing else per
 * conversation: the simulator (behind TLS, as the platform is) in its own process, dynalite in
 * another, no lifecycle executions and no fleet. 1,000 conversations are started through the API,
 * then poller runs of STEP conversations each take them one after the other; after each, RSS and
 * heap after a full GC (the median of SAMPLES). The figure per conversation is the slope of RSS over
 * conversations held from STEP to 1,000 (least squares), so what is paid once (the first TLS
 * connection, the young generation, undici) does not count per conversation.
 *
 * And the poller's floor: its bundle as the stack builds it, imported in a fresh process with the
 * same options, fetch loaded as the first poll loads it (median of FLOOR_SAMPLES). Then
 *
 *   capacity = (128 MB × POLLER_MEMORY_BUDGET − floor) / RSS per held conversation   (shared/messaging/fleet.ts pollerCapacity)
 */

const ROOT = new URL('..', import.meta.url).pathname;
const MB = 1024 * 1024;
const STEP = 250;
const STEPS = 4;
const SAMPLES = 3;
const FLOOR_SAMPLES = 5;

interface Measured {
  heap: number;
  rss: number;
}

interface ChildFigures {
  none: Measured;
  points: Array<Measured & { held: number }>;
  tls: boolean;
}

async function settled(gc: () => void): Promise<Measured> {
  const samples: Measured[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const m = process.memoryUsage();
    samples.push({ heap: m.heapUsed, rss: m.rss });
  }
  return { heap: median(samples.map((s) => s.heap)), rss: median(samples.map((s) => s.rss)) };
}

/** In the child: start the conversations, then hold them STEP at a time, measuring after each step. */
async function holdInSteps(): Promise<ChildFigures> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  setLogSink(() => {});
  setMetricSink(() => {});
  const total = STEP * STEPS;
  const simulator = await SimulatorProcess.start({ pollSecondsToMs: 1000, sessionTokenLifetimeMs: 24 * 3600 * 1000 }, true);
  const tls = simulator.tlsUrl !== undefined && simulator.caPem !== undefined;
  if (tls) setDefaultCACertificates([...getCACertificates('default'), simulator.caPem!]);
  const sandbox = await connectMessagingSandbox(simulator, simulator.world(), {
    settings: { maxConcurrentConversations: 100_000 },
    dynamoInChildProcess: true,
    env: { POLLER_HEARTBEAT_SECONDS: '5', POLLER_LEASE_SECONDS: '20', POLLER_IDLE_SECONDS: '600', POLLER_SWEEP_SECONDS: '1', PLATFORM_TIMEOUT_MS: '20000', LONG_POLL_TIMEOUT_SECONDS: '30' },
  });
  const runs: Array<{ run: PollerRun; done: Promise<unknown> }> = [];
  try {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // Nothing per conversation in this process but what the poller holds: no fleet, no lifecycle executions.
    gateway.stateMachines.startFleet = async () => undefined;
    gateway.stateMachines.startLifecycle = async () => undefined;
    // The platform is https in production: each held poll is a TLS connection.
    const viaTls: typeof fetch = (input, init) => fetch(tls ? String(input).replace(simulator.url, simulator.tlsUrl!) : input, init);

    const platformIds: string[] = [];
    await startConversations(sandbox, total, 20, async (id) => {
      platformIds.push(await platformIdOf(sandbox, id));
    });
    const none = await settled(gc);
    const points: ChildFigures['points'] = [];
    for (let step = 1; step <= STEPS; step++) {
      const run = new PollerRun({ gateway: { ...gateway, env: { ...gateway.env, POLLER_CAPACITY: STEP } }, log, shard: 0, shards: 1, endsAt: Date.now() + 600_000, fetch: viaTls });
      runs.push({ run, done: run.run().catch(() => undefined) });
      const deadline = Date.now() + 120_000;
      while ((run.holding < STEP || (await simulator.polling(platformIds)) < step * STEP) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      const held = runs.reduce((sum, { run: r }) => sum + r.holding, 0);
      points.push({ held, ...(await settled(gc)) });
    }
    return { none, points, tls };
  } finally {
    for (const { run } of runs) run.kill();
    await Promise.all(runs.map(({ done }) => done));
    await sandbox.stop();
  }
}

/** The poller bundle as the stack builds it, imported in fresh processes with `nodeOptions`: its RSS (MB, median) once fetch is loaded. */
async function pollerFloorMb(options: { nodeOptions: string; sourceMap: boolean }): Promise<number> {
  const dir = join(ROOT, 'bench', '.work', 'conversations', options.sourceMap ? 'mapped' : 'lean');
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, 'poller.mjs');
  await bundleHandler('poller', outfile, { sourceMap: options.sourceMap });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'AKIDBENCH', AWS_SECRET_ACCESS_KEY: 'bench', GATEWAY_MODE: 'aws', AWS_LAMBDA_FUNCTION_NAME: 'IntegrationGateway-poller' };
  for (const setting of functionSettings.poller) env[setting] = setting.endsWith('_URL') || setting.endsWith('_TEMPLATE') ? 'https://bench.example.com/{site}' : `bench-${setting.toLowerCase()}`;
  // `fetch` touched: its HTTP stack (undici, ~11 MB) loads with the first poll, so it is part of the floor.
  const script = `await import(${JSON.stringify(outfile)});globalThis.fetch;new Headers();for(let i=0;i<3;i++){globalThis.gc();await new Promise(r=>setTimeout(r,50))}process.stdout.write(String(process.memoryUsage().rss))`;
  const samples: number[] = [];
  for (let i = 0; i < FLOOR_SAMPLES; i++) {
    samples.push(Number(execFileSync(process.execPath, ['--expose-gc', ...options.nodeOptions.split(' '), '--input-type=module', '-e', script], { encoding: 'utf8', env })) / MB);
  }
  return median(samples);
}

/** Runs holdInSteps in a child process with the poller's Node options; its figures come back on stdout. */
function measureInChild(): Promise<ChildFigures> {
  const file = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', ...leanRuntime.nodeOptions.split(' '), '--import', 'tsx', file, 'child'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) return reject(new Error(`memory child exited ${code}: ${out.slice(-500)}`));
      resolve(JSON.parse(line) as ChildFigures);
    });
  });
}

export async function benchPollerMemory(): Promise<{ figures: Figures; notes: string[] }> {
  const child = await measureInChild();
  const { none, points } = child;
  const kb = (bytes: number) => bytes / 1024;
  const rssKb = slope(points.map((p) => ({ x: p.held, y: kb(p.rss) })));
  const heapKb = slope(points.map((p) => ({ x: p.held, y: kb(p.heap) })));
  const last = points[points.length - 1]!;
  const floorMb = await pollerFloorMb(leanRuntime);
  // As the other functions run (source maps, V8's default young generation): what the poller was before it ran lean.
  const mappedFloorMb = await pollerFloorMb({ nodeOptions: '--enable-source-maps', sourceMap: true });
  const capacity = pollerCapacity({ memoryMb: 128, floorMb, perConversationKb: rssKb });
  const round = (value: number) => Math.round(value * 10) / 10;
  const defaultCapacity = GatewayEnvironment.parse({}).POLLER_CAPACITY;
  return {
    figures: {
      // What a held conversation costs the poller's process: the slope of RSS (sockets and TLS buffers are outside the heap).
      memory_kb_per_conversation: round(rssKb),
      memory_rss_kb_per_conversation: round(rssKb),
      memory_heap_kb_per_conversation: round(heapKb),
      // The same as the old figure: at 1,000 held against the process holding none (what is paid once included).
      memory_rss_kb_per_conversation_vs_none: round(kb(last.rss - none.rss) / last.held),
      memory_held_at_1000: last.held,
      memory_tls: child.tls ? 1 : 0,
      poller_bundle_rss_mb: round(floorMb),
      poller_bundle_rss_mb_with_source_maps: round(mappedFloorMb),
      poller_capacity_128mb: capacity,
      poller_memory_at_capacity_mb: round(floorMb + (defaultCapacity * rssKb) / 1024),
    },
    notes: [
      `Memory per held conversation (memory_*): a child process with the poller's Node options (${leanRuntime.nodeOptions}) holding nothing else per conversation (simulator behind ${child.tls ? 'TLS' : 'plain HTTP'} in its own process, dynalite in another, no fleet or lifecycle executions), poller runs of ${STEP} taking the conversations in turn; after each, RSS and heap after a full GC (median of ${SAMPLES}): ${points.map((p) => `${p.held} held ${round(p.rss / MB)} MB`).join(', ')} (none held: ${round(none.rss / MB)} MB). Per conversation, the least-squares slope: RSS ${round(rssKb)} KB, heap ${round(heapKb)} KB.`,
      `The poller bundle imported in a fresh process with fetch loaded (median of ${FLOOR_SAMPLES}): ${round(floorMb)} MB lean (poller_bundle_rss_mb), ${round(mappedFloorMb)} MB with source maps and V8's default young generation as the other functions run. A 128 MB poller holds (128 MB × ${POLLER_MEMORY_BUDGET} − ${round(floorMb)} MB) / ${round(rssKb)} KB = ${capacity} conversations (poller_capacity_128mb); POLLER_CAPACITY's default is ${defaultCapacity}, which takes about ${round(floorMb + (defaultCapacity * rssKb) / 1024)} MB (poller_memory_at_capacity_mb).`,
    ],
  };
}

if (process.argv[2] === 'child' && process.argv[1] === fileURLToPath(import.meta.url)) {
  const figures = await holdInSteps();
  process.stdout.write(`\n${JSON.stringify(figures)}\n`);
  process.exit(0);
}
