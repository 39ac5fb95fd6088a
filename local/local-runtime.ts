import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import { handler as syncDispatcher } from '../functions/sync-dispatcher';
import { useGateway } from '../shared/gateway';
import { METRICS_NAMESPACE } from '../shared/metrics/catalogue';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { startLocalGateway, type LocalGateway, type LocalGatewayOptions } from './local-gateway';
import { LocalAuthorization } from './local-authorization';
import { LocalScheduler, SCHEDULES, type Frequency } from './local-scheduler';
import { localHttpRoutes } from './http-routes';
import { LocalMetrics } from './local-metrics';
import { startLocalServer, type LocalExtra, type OriginHeader } from './local-server';
import { attachQueueConsumers } from './queue-consumers';
import { runAs } from './iam/enforcement';
import { localOriginSecret } from './local-origin-secret';
import { useOriginSecret } from '../shared/origin/origin-secret';

export interface LocalRuntime {
  url: string;
  local: LocalGateway;
  /** What the handlers reported as CloudWatch metrics (also on GET /local/metrics). */
  metrics: LocalMetrics;
  scheduler: LocalScheduler;
  /** The dashboard's sign-in (the stand-in for Cognito managed login). */
  authorization: LocalAuthorization;
  /** The origin header the front adds as the distribution does: for tests that hand a function an event themselves. */
  origin: OriginHeader;
  stop(): Promise<void>;
}

const SignInRequest = z.strictObject({ accountId: z.string().optional(), operator: z.boolean().optional() });

/**
 * The whole gateway on this machine: the local services, the same handlers behind an
 * API-Gateway-shaped HTTP front, queue consumers and schedules. `npm start` and the end-to-end
 * tests both run it.
 */
export async function startLocalRuntime(options: LocalGatewayOptions & { port?: number; schedules?: boolean }): Promise<LocalRuntime> {
  const local = await startLocalGateway(options);
  useGateway(local.gateway);
  const metrics = new LocalMetrics();
  const previousMetricSink = setMetricSink((document) => metrics.record(document));
  attachQueueConsumers(local);
  const scheduler = new LocalScheduler((event) => runAs('sync-dispatcher', () => syncDispatcher(event)));
  if (options.schedules !== false) scheduler.start();
  const authorization = new LocalAuthorization(local.signIn, options.now);

  const extra: LocalExtra = async (req, body, url) => {
    const signIn = await authorization.handle(req, body, url);
    if (signIn) return signIn;
    const reply = (status: number, value: unknown) => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) });
    if (req.method === 'POST' && url.pathname === '/local/sign-in') {
      const parsed = SignInRequest.safeParse(safeJson(body));
      if (!parsed.success) return reply(400, { message: 'Send {"accountId":"<id>"} or {"operator":true}.' });
      return reply(200, { token: await local.signIn.issue(parsed.data) });
    }
    const schedule = /^\/local\/schedules\/(\w+)$/.exec(url.pathname);
    if (req.method === 'POST' && schedule) {
      const frequency = schedule[1] as Frequency;
      if (!(frequency in SCHEDULES)) return reply(404, { message: `Schedules are ${Object.keys(SCHEDULES).join(', ')}.` });
      return reply(200, await scheduler.fire(frequency));
    }
    if (req.method === 'GET' && url.pathname === '/local/metrics') {
      return reply(200, { namespace: METRICS_NAMESPACE, metrics: metrics.list() });
    }
    if (req.method === 'GET' && url.pathname === '/local/queues') {
      return reply(
        200,
        Object.fromEntries(Object.entries(local.queues).map(([name, queue]) => [name, { waiting: queue.depth, deadLetters: queue.deadLetters.length }])),
      );
    }
    const redrive = /^\/local\/queues\/(\w+)\/redrive$/.exec(url.pathname);
    if (req.method === 'POST' && redrive) {
      const queue = local.queues[redrive[1] as keyof LocalGateway['queues']];
      if (!queue) return reply(404, { message: `Queues are ${Object.keys(local.queues).join(', ')}.` });
      return reply(200, { redriven: queue.redrive() });
    }
    if (req.method === 'GET') {
      const page = await dashboardFile(url.pathname);
      // The deployed distribution's headers (lib/dashboard-hosting.ts), with this origin as the sign-in domain.
      if (page) return { status: 200, headers: { 'content-type': page.contentType, 'cache-control': 'no-cache', ...DASHBOARD_HEADERS }, body: page.body };
    }
    return undefined;
  };

  // The front plays the distribution: it adds the origin header the functions check (shared/origin/).
  const origin = localOriginSecret();
  const previousOriginSecret = useOriginSecret(origin.source);
  const server = await startLocalServer({ port: options.port ?? 0, routes: localHttpRoutes(), signIn: local.signIn, extra, origin: origin.header });
  return {
    url: server.url,
    local,
    metrics,
    scheduler,
    authorization,
    origin: origin.header,
    async stop() {
      scheduler.stop();
      await server.stop();
      await local.stop();
      useGateway(undefined);
      useOriginSecret(previousOriginSecret);
      setMetricSink(previousMetricSink);
    },
  };
}

function safeJson(body: Buffer): unknown {
  try {
    return body.length ? JSON.parse(body.toString('utf8')) : {};
  } catch {
    return undefined;
  }
}

const DASHBOARD_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/**
 * The dashboard's static files (dashboard/), served at the root as the distribution serves them; `/` is its
 * index page. The names are listed once at start: an allow-list, so no requested path ever reaches the disk.
 */
const DASHBOARD_DIRECTORY = new URL('../dashboard/', import.meta.url);
const DASHBOARD_FILES = new Map(
  readdirSync(DASHBOARD_DIRECTORY)
    .map((name) => [name, CONTENT_TYPES[/\.([a-z]+)$/.exec(name)?.[1] ?? '']] as const)
    .filter((entry): entry is readonly [string, string] => /^[a-z0-9-]+\.[a-z]+$/.test(entry[0]) && entry[1] !== undefined),
);

async function dashboardFile(pathname: string): Promise<{ contentType: string; body: string } | undefined> {
  const name = pathname === '/' ? 'index.html' : pathname.slice(1);
  const contentType = DASHBOARD_FILES.get(name);
  if (!contentType) return undefined;
  return { contentType, body: await readFile(new URL(name, DASHBOARD_DIRECTORY), 'utf8') };
}
