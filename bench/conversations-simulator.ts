import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { startCrmSimulator, type CrmSimulatorOptions, type RunningCrmSimulator } from '../sandbox/crm-simulator';
import { ACCEPT_BACKLOG } from '../sandbox/simulator-server';
import type { RandomFaults } from '../sandbox/faults';
import { answerCalls } from './child-process-calls';
import type { ConnectedAppRegistration, UserRegistration } from '../sandbox/identity-simulator';
import type { PollStats, PollTimings } from '../sandbox/messaging-simulator';

/**
 * The CRM simulator in its own process for `npm run bench -- conversations`, so the platform's
 * side (1,000 conversations' polls, the agents replying) does not share the gateway's event loop,
 * as it would not in production. The bench drives it over the IPC channel (`SimulatorProcess` in
 * bench/conversations-world.ts); the agents run here, next to the platform they act on.
 */

export type SimulatorCall =
  | { op: 'start'; options: CrmSimulatorOptions; tls: boolean }
  | { op: 'registerConnectedApp'; registration: ConnectedAppRegistration }
  | { op: 'registerUser'; registration: UserRegistration }
  | { op: 'registerMessagingChannel'; key: string }
  | { op: 'randomFaults'; random: RandomFaults | undefined }
  /** Agents join each conversation, then reply every 3-15 s until `untilMs` (epoch). */
  | { op: 'agents'; platformIds: string[]; untilMs: number }
  | { op: 'polling'; platformIds: string[] }
  | { op: 'report'; platformIds: string[] }
  | { op: 'resetLag' }
  /** Messaging for In-App and Web: a deployment, agents writing on its conversations, and what its streams did. */
  | { op: 'registerDeployment'; orgId: string; deploymentName: string }
  | { op: 'sseAgents'; platformIds: string[]; untilMs: number }
  | { op: 'sseReport' }
  | { op: 'stop' };

export interface SimulatorReport {
  /** Per conversation: when each event for the gateway was emitted (ms epoch). */
  emitted: number[][];
  timings: PollTimings[];
  stats: PollStats;
  lag: EventLoopLag;
}

export interface EventLoopLag {
  p50: number;
  p99: number;
  max: number;
}

let crm: RunningCrmSimulator | undefined;
let tls: { server: TlsServer; dir: string } | undefined;
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();

export function lagOf(histogram: ReturnType<typeof monitorEventLoopDelay>): EventLoopLag {
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  return { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
}

/**
 * A TLS front for the simulator (the platform is https in production): a self-signed
 * certificate made with openssl for this run, kept in a temporary folder removed at stop.
 */
async function startTlsFront(port: number): Promise<{ url: string; caPem: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const caPem = readFileSync(join(dir, 'cert.pem'), 'utf8');
  const server = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert: caPem }, (socket) => {
    const upstream: Socket = connect(port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  });
  // A load balancer's accept queue, as the simulator's own.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: ACCEPT_BACKLOG }, resolve));
  tls = { server, dir };
  const address = server.address();
  return { url: `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, caPem };
}

async function agents(platformIds: string[], untilMs: number): Promise<void> {
  const messaging = crm!.messaging;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all(
    platformIds.map(async (id) => {
      await sleep(Math.random() * 1000);
      messaging.agentJoins(id, 'Agent');
      while (Date.now() < untilMs - 1000) {
        await sleep(3000 + Math.random() * 12_000);
        if (Date.now() < untilMs - 1000) messaging.agentSays(id, `reply at ${Date.now()}`);
      }
    }),
  );
}

/** Each agent message's text and when it was written, for the Messaging API scenario's lost and duplicated counts. */
const sseWritten: Array<{ text: string; at: number }> = [];

async function sseAgents(platformIds: string[], untilMs: number): Promise<void> {
  const api = crm!.messagingApi;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all(
    platformIds.map(async (id) => {
      await sleep(Math.random() * 1000);
      api.agentJoins(id, 'Agent');
      for (let n = 0; Date.now() < untilMs - 1000; n++) {
        await sleep(3000 + Math.random() * 12_000);
        if (Date.now() >= untilMs - 1000) break;
        const text = `${id} reply ${n}`;
        sseWritten.push({ text, at: Date.now() });
        api.agentWrites(id, text, 'Agent');
      }
    }),
  );
}

async function handle(call: SimulatorCall): Promise<unknown> {
  switch (call.op) {
    case 'start': {
      crm = await startCrmSimulator(call.options);
      const port = Number(new URL(crm.url).port);
      const front = call.tls ? await startTlsFront(port) : undefined;
      return { url: crm.url, ...(front ? { tlsUrl: front.url, caPem: front.caPem } : {}) };
    }
    case 'registerConnectedApp':
      return crm!.identity.registerConnectedApp(call.registration);
    case 'registerUser':
      crm!.identity.registerUser(call.registration);
      return undefined;
    case 'registerMessagingChannel':
      return crm!.messaging.registerMessagingChannel(call.key);
    case 'randomFaults':
      return crm!.faults.setRandom(call.random);
    case 'agents':
      return agents(call.platformIds, call.untilMs);
    case 'polling':
      return call.platformIds.filter((id) => crm!.messaging.isPolling(id)).length;
    case 'report': {
      const messaging = crm!.messaging;
      const report: SimulatorReport = {
        emitted: call.platformIds.map((id) => {
          const count = messaging.transcript(id).filter((entry) => entry.role !== 'EndUser').length;
          return Array.from({ length: count }, (_, i) => messaging.emittedAtOf(id, i + 1) ?? 0);
        }),
        timings: call.platformIds.map((id) => messaging.pollTimings(id)),
        stats: messaging.pollStats(),
        lag: lagOf(lag),
      };
      return report;
    }
    case 'registerDeployment':
      crm!.messagingApi.registerDeployment(call.orgId, call.deploymentName);
      return undefined;
    case 'sseAgents':
      return sseAgents(call.platformIds, call.untilMs);
    case 'sseReport':
      return { written: sseWritten, streams: crm!.messagingApi.streamStats(), unauthorized: crm!.messagingApi.unauthorized, lag: lagOf(lag) };
    case 'resetLag':
      lag.reset();
      return undefined;
    case 'stop':
      tls?.server.close();
      if (tls) rmSync(tls.dir, { recursive: true, force: true });
      await crm?.stop();
      setImmediate(() => process.exit(0));
      return undefined;
  }
}

answerCalls(handle);
