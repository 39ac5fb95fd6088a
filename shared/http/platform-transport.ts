import { Buffer } from 'node:buffer';
import { DEFAULT_MIN_VERSION } from 'node:tls';
import type { ConnectorName } from '../connectors';
import type { HttpMethod, PlatformAuth, PlatformRequest, QueryValue } from './platform-request';

/**
 * The platform client's transport: the request's URL, headers and body, and one attempt over Node's
 * global `fetch` (undici) with a timeout, its answer classified (usable JSON, an error status, a body
 * that is not what it should be, a timeout, a network failure). Retries and budgets are the client's.
 *
 * TLS: Node's default minimum is TLS 1.2 (`tls.DEFAULT_MIN_VERSION`) and this transport passes no
 * agent, dispatcher or TLS option, so nothing weaker can be negotiated. Checking an https platform's
 * address fails if the process was started with a weaker minimum (`--tls-min-v1.0`).
 */

/** Checks a platform address once, when the client is made. */
export function checkedBaseUrl(baseUrl: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError('platform base URL is not a valid URL');
  }
  if (url.username || url.password) {
    throw new TypeError('platform base URL must not carry credentials; pass them as auth');
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    throw new TypeError(`platform base URL must use https (got ${url.protocol}//${url.host})`);
  }
  if (url.search || url.hash) throw new TypeError('platform base URL must not have a query or fragment');
  if (url.protocol === 'https:' && (DEFAULT_MIN_VERSION === 'TLSv1' || DEFAULT_MIN_VERSION === 'TLSv1.1')) {
    throw new Error(`this process allows ${DEFAULT_MIN_VERSION}; platform calls need TLS 1.2 or later`);
  }
  return url;
}

/** `key=value&...` with literal keys (brackets kept) and encoded values; undefined values skipped. */
export function encodeQuery(query: Record<string, QueryValue>): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const literalKey = encodeURIComponent(key).replace(/%5B/gi, '[').replace(/%5D/gi, ']');
    pairs.push(`${literalKey}=${encodeURIComponent(String(value))}`);
  }
  return pairs.join('&');
}

/** The full URL for a request. Refuses paths that would leave the configured host. */
export function requestUrl(base: URL, path: string, query?: Record<string, QueryValue>): URL {
  const [pathPart = '', presetQuery] = path.split(/\?(.*)/s, 2);
  const prefix = base.pathname.replace(/\/+$/, ''); // '' for a bare host, '/api/v2' for a prefix
  const url = new URL(base.href);
  url.pathname = `${prefix}/${pathPart.replace(/^\/+/, '')}`;
  const encoded = [presetQuery, query ? encodeQuery(query) : ''].filter((q) => q).join('&');
  url.search = encoded;
  // `..` segments are resolved by URL; make sure the result is still on the platform's host and prefix.
  if (url.origin !== base.origin || !url.pathname.startsWith(`${prefix}/`)) {
    throw new TypeError('request path must stay under the platform base URL');
  }
  return url;
}

export function authorizationHeader(auth: PlatformAuth): string | undefined {
  switch (auth.kind) {
    case 'basic':
      return `Basic ${Buffer.from(`${auth.username}:${auth.password ?? ''}`, 'utf8').toString('base64')}`;
    case 'bearer':
      return `Bearer ${auth.token}`;
    case 'none':
      return undefined;
  }
}

/** The credentials a platform's error text must never repeat. */
export function secretsOf(auth: PlatformAuth): string[] {
  switch (auth.kind) {
    case 'basic':
      return [auth.username, auth.password ?? ''].filter((s) => s);
    case 'bearer':
      return [auth.token];
    case 'none':
      return [];
  }
}

/** What the client's headers are made of, besides the request's own. */
export interface HeaderSettings {
  platform: ConnectorName;
  authorization: string | undefined;
  userAgent: string | undefined;
  idempotencyHeader: string | undefined;
}

export function requestHeaders(request: PlatformRequest<unknown>, settings: HeaderSettings): Headers {
  const headers = new Headers();
  try {
    headers.set('accept', 'application/json');
    headers.set('user-agent', settings.userAgent ?? 'integration-gateway');
    for (const [name, value] of Object.entries(request.headers ?? {})) headers.set(name, value);
    if (request.body !== undefined) headers.set('content-type', 'application/json');
    if (request.form !== undefined) headers.set('content-type', 'application/x-www-form-urlencoded');
    if (request.idempotencyKey) headers.set(settings.idempotencyHeader ?? 'Idempotency-Key', request.idempotencyKey);
    if (settings.authorization) headers.set('authorization', settings.authorization);
  } catch {
    // The runtime's message quotes the bad value, which may be the token: say less.
    throw new TypeError(`${settings.platform} platform: a request header has an invalid name or value`);
  }
  return headers;
}

export function requestBody(request: PlatformRequest<unknown>): string | undefined {
  if (request.body !== undefined && request.form !== undefined) {
    throw new TypeError('a platform request has either a JSON body or a form, not both');
  }
  if (request.body !== undefined) return JSON.stringify(request.body);
  if (request.form !== undefined) return encodeQuery(request.form);
  return undefined;
}

/** The body of a 2xx as JSON, or why it is not usable. Empty means undefined (204, 202 without body). */
export function parseJsonBody(text: string, contentType: string | null): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    const type = contentType?.split(';')[0]?.trim() || 'no content type';
    const looksJson = /^\s*[[{]/.test(text);
    return {
      ok: false,
      reason: looksJson
        ? `body is truncated or malformed JSON (${Buffer.byteLength(text)} bytes, ${type})`
        : `body is not JSON (${type}, ${Buffer.byteLength(text)} bytes)`,
    };
  }
}

function parseQuietly(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What one attempt came to. */
export type AttemptResult =
  | { kind: 'ok'; status: number; headers: Headers; body: unknown }
  | { kind: 'status'; status: number; headers: Headers; body: unknown }
  | { kind: 'invalid_response'; status: number; headers: Headers; reason: string }
  | { kind: 'timeout' }
  | { kind: 'network'; code: string | undefined };

function networkCode(error: unknown): string | undefined {
  // undici: TypeError('fetch failed') whose cause carries the socket error's code. Only the code is
  // kept: messages are not needed and could one day carry more than we want in an error.
  const cause = error instanceof Error ? error.cause : undefined;
  const code = cause && typeof cause === 'object' && 'code' in cause ? cause.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** What a request abandoned through its signal rejects with. */
export function abandoned(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The request was abandoned', 'AbortError');
}

export interface AttemptInit {
  method: HttpMethod;
  headers: Headers;
  body: string | undefined;
}

/** One attempt: sent, read whole within `timeoutMs`, and classified. Rejects only when `signal` abandons it. */
export async function attemptOnce(send: typeof fetch, url: URL, init: AttemptInit, timeoutMs: number, signal: AbortSignal | undefined): Promise<AttemptResult> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const abandon = (): void => controller.abort();
  signal?.addEventListener('abort', abandon, { once: true });
  // Given up while waiting for its turn (the listener above would never hear it): send nothing, or a
  // long-poll its caller has handed over would still reach the platform next to the new holder's.
  if (signal?.aborted) controller.abort();
  try {
    // No redirects: platform hosts are fixed by configuration, and a redirect would carry the
    // Authorization header somewhere nobody chose.
    const response = await send(url, { ...init, redirect: 'manual', signal: controller.signal });
    // Reading the body is inside the timeout too: a platform that stalls mid-body is a timeout.
    const text = await response.text();
    const { status, headers } = response;
    if (status >= 200 && status < 300) {
      const parsed = parseJsonBody(text, headers.get('content-type'));
      return parsed.ok ? { kind: 'ok', status, headers, body: parsed.value } : { kind: 'invalid_response', status, headers, reason: parsed.reason };
    }
    if (status >= 300 && status < 400) {
      return { kind: 'invalid_response', status, headers, reason: 'the platform answered with a redirect, which is not followed' };
    }
    return { kind: 'status', status, headers, body: parseQuietly(text) };
  } catch (error) {
    if (signal?.aborted) throw abandoned(signal);
    if (timedOut) return { kind: 'timeout' };
    return { kind: 'network', code: networkCode(error) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abandon);
  }
}
