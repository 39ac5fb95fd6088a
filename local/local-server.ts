import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import type { LocalSignIn } from './local-sign-in';

type HttpFunction = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>;

/** A route as lib/api.ts deploys it: method, path, the handler, and whether the JWT authorizer guards it. */
export interface LocalRoute {
  method: string;
  /** Exact path, or a prefix ending in `/*` for `{proxy+}` routes. */
  path: string;
  handler: HttpFunction;
  authorized: boolean;
}

/** The header the front adds to every request it hands a route, as the distribution adds its origin header. */
export interface OriginHeader {
  readonly name: string;
  readonly value: string;
}

/** Extra paths only the local runtime serves (sign-in, schedules, the index page). */
export type LocalExtra = (req: IncomingMessage, body: Buffer, url: URL) => Promise<{ status: number; headers?: Record<string, string>; body: string } | undefined>;

/** API Gateway's payload cap; bigger bodies never reach a function there, so not here either. */
const API_GATEWAY_MAX_BODY = 10 * 1024 * 1024;

function textual(contentType: string | undefined): boolean {
  return !contentType || /^(text\/|application\/(json|x-www-form-urlencoded|problem\+json))/i.test(contentType);
}

/** Builds the payload-2.0 event API Gateway would hand the function. Non-text bodies arrive base64, as there. */
export function apiGatewayEvent(req: IncomingMessage, url: URL, body: Buffer, routeKey: string, claims?: Record<string, unknown>): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  const base64 = body.length > 0 && !textual(headers['content-type']);
  // As API Gateway's payload 2.0 does: the cookies arrive apart from the headers.
  const cookies = headers.cookie ? headers.cookie.split(/;\s*/).filter(Boolean) : [];
  delete headers.cookie;
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(cookies.length ? { cookies } : {}),
    ...(url.search ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: { method: req.method ?? 'GET', path: url.pathname, protocol: 'HTTP/1.1', sourceIp: req.socket.remoteAddress ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
      requestId,
      routeKey,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
      ...(claims ? { authorizer: { jwt: { claims, scopes: [] } } } : {}),
    } as APIGatewayProxyEventV2['requestContext'],
    ...(body.length > 0 ? { body: body.toString(base64 ? 'base64' : 'utf8') } : {}),
    isBase64Encoded: base64,
  };
}

/**
 * The local HTTP front: API Gateway's routing, JWT authorizer and payload format in front of the
 * very same handler functions that Lambda runs. With `origin` it also plays the distribution: every
 * route's request carries the origin header, the viewer's own copy overwritten (as CloudFront does);
 * without it, it is the HTTP API's own address, which the functions refuse.
 */
export async function startLocalServer(options: {
  port: number;
  host?: string;
  routes: LocalRoute[];
  signIn: LocalSignIn;
  extra?: LocalExtra;
  origin?: OriginHeader;
}): Promise<{ url: string; server: Server; stop(): Promise<void> }> {
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      send(res, 500, { 'content-type': 'application/json' }, JSON.stringify({ message: 'Internal Server Error' }));
      process.stderr.write(`local server error: ${String(error)}\n`);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = await readBody(req, API_GATEWAY_MAX_BODY);
    if (!body) return send(res, 413, { 'content-type': 'application/json' }, JSON.stringify({ message: 'Request Entity Too Large' }));

    const route = options.routes.find((r) => matches(r, req.method ?? 'GET', url.pathname));
    if (!route) {
      const answer = await options.extra?.(req, body, url);
      if (answer) return send(res, answer.status, answer.headers ?? {}, answer.body);
      return send(res, 404, { 'content-type': 'application/json' }, JSON.stringify({ message: 'Not Found' }));
    }
    let claims: Record<string, unknown> | undefined;
    if (route.authorized) {
      claims = await options.signIn.verify(req.headers.authorization);
      if (!claims) return send(res, 401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }, JSON.stringify({ message: 'Unauthorized' }));
    }
    const event = apiGatewayEvent(req, url, body, `${route.method} ${route.path}`, claims);
    if (options.origin) event.headers[options.origin.name] = options.origin.value;
    const result = await route.handler(event);
    if (typeof result === 'string') return send(res, 200, { 'content-type': 'application/json' }, result);
    const headers = Object.fromEntries(Object.entries(result.headers ?? {}).map(([k, v]) => [k, String(v)]));
    const payload = result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? '');
    send(res, result.statusCode ?? 200, headers, payload);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    server,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function matches(route: LocalRoute, method: string, path: string): boolean {
  if (route.method !== 'ANY' && route.method !== method) return false;
  if (route.path.endsWith('/*')) return path.startsWith(route.path.slice(0, -1));
  return route.path === path;
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer): void {
  if (res.headersSent) return;
  res.writeHead(status, headers);
  res.end(body);
}
