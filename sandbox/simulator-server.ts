import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import { FaultPlan, FaultRule, RandomFaults, type Fault } from './faults';

/**
 * How long the platform takes to answer: real list calls take 200-600 ms for 100 records, so a
 * benchmark whose simulator answers in a millisecond cannot show whether a sync keeps the platform
 * busy. Each answer waits `ms` plus a uniform random amount in [-jitterMs, +jitterMs] (never below 0).
 */
export const Latency = z.object({
  ms: z.number().int().min(0).max(60_000),
  jitterMs: z.number().int().min(0).max(60_000).default(0),
});
export type Latency = z.input<typeof Latency>;

/** What a simulator's route handler receives: the parsed request. */
export interface SimulatorRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  rawBody: Buffer;
}

/** What a route handler answers. `body` is sent as JSON unless `raw` is given. */
export interface SimulatorResponse {
  status: number;
  body?: unknown;
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /**
   * A streamed answer (Server-Sent Events): the head goes out at once, then whatever `write` is
   * given until the promise settles (the answer ends) or the client leaves (`signal`).
   */
  stream?: (write: (chunk: string) => void, signal: AbortSignal) => Promise<void>;
}

export interface SimulatorOptions {
  name: string;
  /** The platform's own answer; return undefined for 404. May be async (long-polls). */
  route: (request: SimulatorRequest, signal: AbortSignal) => SimulatorResponse | undefined | Promise<SimulatorResponse | undefined>;
  /** The platform's error body for a status, so injected faults look like the real thing. */
  errorBody: (status: number, message: string) => unknown;
  /** More figures for `/__sandbox/stats`, e.g. the 429s a simulator's rate limit served. */
  stats?: () => Record<string, unknown>;
  /** Per-answer latency from the start (also settable later: `setLatency`, `POST /__sandbox/latency`). */
  latency?: Latency;
  port?: number;
  host?: string;
}

export interface RunningSimulator {
  name: string;
  url: string;
  faults: FaultPlan;
  /** Requests received, by `METHOD path` (control requests excluded). */
  requests: Map<string, number>;
  totalRequests(): number;
  /** Sets how long each answer takes: milliseconds, or with a jitter (0 for none). */
  setLatency(latency: Latency | number): void;
  latency(): { ms: number; jitterMs: number };
  /** The most API requests that were being answered at once since the start (or the last reset). */
  maxInFlight(): number;
  resetMaxInFlight(): void;
  /**
   * API requests that arrived since the start (or the last `resetArrivals`), and when the first and
   * the last of them arrived (`performance.now()` of the simulator's process): the pace a client
   * sent at, as the platform saw it.
   */
  arrivals(): { requests: number; firstMs?: number; lastMs?: number };
  resetArrivals(): void;
  stop(): Promise<void>;
}

const CONTROL_PREFIX = '/__sandbox';
/** Connections waiting to be accepted (the kernel caps it at net.core.somaxconn, 4096 here). */
export const ACCEPT_BACKLOG = 4096;

/**
 * The HTTP shell every simulator shares: fault injection before routing, request counting,
 * JSON answers, and control endpoints (`/__sandbox/faults`, `/__sandbox/stats`) so a person
 * running `npm start` can inject faults with curl.
 */
export async function startSimulatorServer(options: SimulatorOptions): Promise<RunningSimulator> {
  const faults = new FaultPlan();
  const requests = new Map<string, number>();
  const openSockets = new Set<import('node:net').Socket>();
  let latency = Latency.parse(options.latency ?? { ms: 0 });
  let inFlight = 0;
  let maxInFlight = 0;
  let arrived: { requests: number; firstMs?: number; lastMs?: number } = { requests: 0 };
  // Not a seeded generator: how long an answer takes must not change which records a seed makes.
  const delayOf = (): number => Math.max(0, latency.ms + Math.round((Math.random() * 2 - 1) * latency.jitterMs));

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, { status: 500, body: options.errorBody(500, `simulator error: ${String(error)}`) });
    });
  });
  server.on('connection', (socket) => {
    openSockets.add(socket);
    socket.on('close', () => openSockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const rawBody = await readBody(req);
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith(CONTROL_PREFIX)) return control(method, url.pathname, rawBody, res);

    const label = `${method} ${url.pathname}`;
    requests.set(label, (requests.get(label) ?? 0) + 1);
    const at = performance.now();
    arrived = { requests: arrived.requests + 1, firstMs: arrived.firstMs ?? at, lastMs: at };
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      // Listening before any injected delay: a client that gives up during a slow fault is gone, and
      // its request must not go on to hold (say) a long-poll slot nobody is waiting on.
      const abort = new AbortController();
      res.on('close', () => abort.abort());
      const fault = faults.next(method, url.pathname);
      if (fault && (await serveFault(fault, res))) return;
      if (abort.signal.aborted || res.destroyed) return;

      // The platform decides at arrival (its rate limiter included), then takes its time to answer.
      const answer = await options.route(
        { method, path: url.pathname, query: url.searchParams, headers: req.headers, rawBody },
        abort.signal,
      );
      const delay = delayOf();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      if (res.destroyed) return;
      if (answer?.stream) return await streamAnswer(res, answer, answer.stream, abort.signal);
      send(res, answer ?? { status: 404, body: options.errorBody(404, `no such resource: ${url.pathname}`) });
    } finally {
      inFlight -= 1;
    }
  }

  /** Returns true when the fault replaced the answer; false when the normal answer should follow. */
  async function serveFault(fault: Fault, res: ServerResponse): Promise<boolean> {
    switch (fault.kind) {
      case 'status': {
        const headers: Record<string, string> = {};
        if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
        send(res, { status: fault.status, headers, body: options.errorBody(fault.status, `injected ${fault.status}`) });
        return true;
      }
      case 'expired-token':
        send(res, { status: 401, body: options.errorBody(401, 'Session expired or invalid') });
        return true;
      case 'timeout':
        // Never answer; the socket stays open until the client gives up or the server stops.
        return true;
      case 'drop':
        res.socket?.destroy();
        return true;
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
        return false;
      case 'html':
        send(res, { status: 200, contentType: 'text/html', raw: '<!doctype html><html><body>Sign in</body></html>' });
        return true;
      case 'truncated':
        send(res, { status: 200, raw: '{"object":"list","data":[{"id":"cus_' });
        return true;
    }
  }

  function control(method: string, path: string, rawBody: Buffer, res: ServerResponse): void {
    try {
      if (path === `${CONTROL_PREFIX}/faults` && method === 'POST') {
        faults.inject(FaultRule.parse(JSON.parse(rawBody.toString('utf8'))));
        return send(res, { status: 204 });
      }
      if (path === `${CONTROL_PREFIX}/faults/random` && method === 'POST') {
        faults.setRandom(RandomFaults.parse(JSON.parse(rawBody.toString('utf8'))));
        return send(res, { status: 204 });
      }
      if (path === `${CONTROL_PREFIX}/faults` && method === 'DELETE') {
        faults.clear();
        return send(res, { status: 204 });
      }
      if (path === `${CONTROL_PREFIX}/latency` && method === 'POST') {
        latency = Latency.parse(JSON.parse(rawBody.toString('utf8')));
        return send(res, { status: 204 });
      }
      if (path === `${CONTROL_PREFIX}/latency` && method === 'GET') {
        return send(res, { status: 200, body: latency });
      }
      if (path === `${CONTROL_PREFIX}/stats` && method === 'GET') {
        return send(res, {
          status: 200,
          body: { requests: Object.fromEntries(requests), faultsServed: Object.fromEntries(faults.served), latency, maxInFlight, ...options.stats?.() },
        });
      }
      send(res, { status: 404, body: { message: 'unknown sandbox control path' } });
    } catch (error) {
      const detail = error instanceof z.ZodError ? z.prettifyError(error) : String(error);
      send(res, { status: 400, body: { message: detail } });
    }
  }

  // A port in use fails the start (it would otherwise hang, with the error unhandled).
  // The accept queue a platform's load balancer would have. With Node's default (511), 1,000
  // connections arriving while the process was busy for 300 ms overflowed it (488 dropped SYNs,
  // retried by TCP 1 s later): a fleet round change opens that many polls at once.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1', backlog: ACCEPT_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;

  return {
    name: options.name,
    url: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    faults,
    requests,
    totalRequests: () => [...requests.values()].reduce((sum, n) => sum + n, 0),
    setLatency: (next) => {
      latency = Latency.parse(typeof next === 'number' ? { ms: Math.max(0, Math.round(next)) } : next);
    },
    latency: () => ({ ...latency }),
    maxInFlight: () => maxInFlight,
    resetMaxInFlight: () => {
      maxInFlight = inFlight;
    },
    arrivals: () => ({ ...arrived }),
    resetArrivals: () => {
      arrived = { requests: 0 };
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of openSockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function streamAnswer(res: ServerResponse, answer: SimulatorResponse, stream: NonNullable<SimulatorResponse['stream']>, signal: AbortSignal): Promise<void> {
  res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'text/event-stream', 'cache-control': 'no-cache', ...answer.headers });
  res.flushHeaders();
  await stream((chunk) => {
    if (!res.destroyed) res.write(chunk);
  }, signal);
  if (!res.destroyed) res.end();
}

function send(res: ServerResponse, answer: SimulatorResponse): void {
  if (res.headersSent || res.destroyed) return;
  const payload = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
  res.writeHead(answer.status, {
    'content-type': answer.contentType ?? 'application/json',
    ...answer.headers,
  });
  res.end(payload);
}
