import { DataPlatform } from './data-simulator';
import { IdentityService } from './identity-simulator';
import { MessagingApi } from './messaging-api-simulator';
import { MessagingPlatform } from './messaging-simulator';
import { startSimulatorServer, type RunningSimulator, type SimulatorRequest, type SimulatorResponse } from './simulator-server';

/**
 * One sandbox server for the CRM vendor's three services: identity (`/services/oauth2/*`), the
 * customer data platform (a360 exchange, query, ingestion) and the messaging platform
 * (conversations). On the real platform the identity service and the messaging API share the
 * instance host and the data tenant is reached from the same login, so one loopback server is
 * faithful enough and gives the gateway one URL to configure: it is the login URL (the JWT `aud`),
 * the `instance_url`, and (without a scheme, like the real exchange answers) the data tenant.
 *
 * Tests drive each service through its object: `identity`, `data`, `messaging`.
 */

export interface CrmSimulatorOptions {
  port?: number;
  host?: string;
  /** Milliseconds since the epoch; shared by all three services. */
  now?: () => number;
  /** Access token lifetime, identity and data-platform tokens alike. Default 2 h. */
  accessTokenLifetimeMs?: number;
  /** Query rows per batch. Default 49,999 like the platform. */
  queryBatchSize?: number;
  sessionTokenLifetimeMs?: number;
  /** Milliseconds per long-poll `timeout` second. Default 1000. */
  pollSecondsToMs?: number;
  /** An agent who joins every conversation and echoes texts (for `npm start`). */
  echoAgent?: boolean;
  /** Messaging for In-App and Web: the end users' access token lifetime. Default 1 h. */
  messagingApiTokenLifetimeMs?: number;
  /** Milliseconds added to every answer (real calls take 100s of ms); settable later with `setLatency`, with a jitter too. */
  latencyMs?: number;
}

export interface RunningCrmSimulator extends RunningSimulator {
  identity: IdentityService;
  data: DataPlatform;
  messaging: MessagingPlatform;
  /** Messaging for In-App and Web's Messaging API (Server-Sent Events): the platform's current chat product. */
  messagingApi: MessagingApi;
  /** Same as `url`: what the gateway configures as its login URL and instance URL. */
  loginUrl: string;
}

/** The CRM's own error body for faults and unknown paths: `[{message, errorCode}]`. */
function crmErrorBody(status: number, message: string): unknown {
  const errorCode =
    status === 401 ? 'INVALID_SESSION_ID'
    : status === 403 ? 'FORBIDDEN'
    : status === 404 ? 'NOT_FOUND'
    : status === 429 ? 'REQUEST_LIMIT_EXCEEDED'
    : status === 503 ? 'SERVER_UNAVAILABLE'
    : status >= 500 ? 'UNKNOWN_EXCEPTION'
    : 'BAD_REQUEST';
  return [{ message, errorCode }];
}

export async function startCrmSimulator(options: CrmSimulatorOptions = {}): Promise<RunningCrmSimulator> {
  // The URL is known only once the server listens; the services read it lazily.
  let baseUrl = '';
  const identity = new IdentityService({ baseUrl: () => baseUrl, now: options.now, accessTokenLifetimeMs: options.accessTokenLifetimeMs });
  const data = new DataPlatform({ identity, batchSize: options.queryBatchSize });
  const messaging = new MessagingPlatform({
    identity,
    sessionTokenLifetimeMs: options.sessionTokenLifetimeMs,
    pollSecondsToMs: options.pollSecondsToMs,
    echoAgent: options.echoAgent,
  });

  const messagingApi = new MessagingApi({ ...(options.now ? { now: options.now } : {}), tokenLifetimeMs: options.messagingApiTokenLifetimeMs, echoAgent: options.echoAgent });

  const route = async (request: SimulatorRequest, signal: AbortSignal): Promise<SimulatorResponse | undefined> =>
    (await identity.route(request)) ?? data.route(request) ?? (await messaging.route(request, signal)) ?? (await messagingApi.route(request, signal));

  // Every answer's latency is the shared server's (`setLatency`, `POST /__sandbox/latency`).
  const server = await startSimulatorServer({
    name: 'crm',
    route,
    errorBody: crmErrorBody,
    port: options.port,
    host: options.host,
    latency: { ms: Math.max(0, Math.round(options.latencyMs ?? 0)) },
  });
  baseUrl = server.url;
  return {
    ...server,
    identity,
    data,
    messaging,
    messagingApi,
    loginUrl: server.url,
  };
}
