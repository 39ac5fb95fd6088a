import type { APIGatewayProxyEventV2, APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyResultV2 } from 'aws-lambda';
import * as z from 'zod/mini';
import { PROBLEM_CONTENT_TYPE, ProblemError, fieldErrors, problems, type Problem } from './problem';

/**
 * A request as the gateway's HTTP handlers see it, whichever front end delivered it
 * (API Gateway in AWS, the local server under `npm start`).
 */
export interface HttpRequest {
  method: string;
  path: string;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  query: Record<string, string>;
  /** The exact bytes the client sent (signatures are checked over these). */
  rawBody: Buffer;
  requestId: string;
  /** Claims of a verified sign-in token, when the route is behind the authorizer. */
  claims?: Record<string, unknown>;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** API Gateway's payload 2.0 event → HttpRequest. Base64 bodies are decoded to the original bytes. */
export function requestFromApiGateway(event: APIGatewayProxyEventV2 | APIGatewayProxyEventV2WithJWTAuthorizer): HttpRequest {
  // for...in rather than Object.entries: no array per header on every request (the webhook receivers' hot path).
  const headers: Record<string, string> = {};
  const given = event.headers;
  for (const name in given) {
    const value = given[name];
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  // Payload 2.0 hands cookies over apart from the headers: put them back where a Cookie header would be.
  if (event.cookies?.length) headers.cookie = event.cookies.join('; ');
  const query: Record<string, string> = {};
  const parameters = event.queryStringParameters;
  for (const name in parameters) {
    const value = parameters[name];
    if (value !== undefined) query[name] = value;
  }
  const body = event.body ?? '';
  const authorizer = (event.requestContext as { authorizer?: { jwt?: { claims?: Record<string, unknown> } } }).authorizer;
  return {
    method: event.requestContext.http.method.toUpperCase(),
    path: event.rawPath,
    headers,
    query,
    rawBody: event.isBase64Encoded ? Buffer.from(body, 'base64') : Buffer.from(body, 'utf8'),
    requestId: event.requestContext.requestId,
    ...(authorizer?.jwt?.claims ? { claims: authorizer.jwt.claims } : {}),
  };
}

/** The handler engine adds the other security headers to every answer (shared/handler/security-headers.ts). */
export function responseToApiGateway(response: HttpResponse): APIGatewayProxyResultV2 {
  return { statusCode: response.status, headers: response.headers, body: response.body };
}

export const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...SECURITY_HEADERS, ...headers },
    body: status === 204 ? '' : JSON.stringify(body),
  };
}

export function problemResponse(problem: Problem, headers: Record<string, string> = {}): HttpResponse {
  return {
    status: problem.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...SECURITY_HEADERS, ...headers },
    body: JSON.stringify(problem),
  };
}

export function redirect(location: string): HttpResponse {
  return { status: 302, headers: { location, ...SECURITY_HEADERS }, body: '' };
}

/** Body size caps, checked before parsing. API Gateway's own cap (10 MB) is far too generous. */
export const BODY_LIMITS = {
  /** Connection configs with a private key are a few KB; 50 engagement events fit easily. */
  api: 256 * 1024,
  /** Platform events can carry whole invoices with line items. */
  webhook: 1024 * 1024,
} as const;

export function assertBodyWithin(request: HttpRequest, limitBytes: number): void {
  if (request.rawBody.length > limitBytes) throw problems.payloadTooLarge(limitBytes);
}

/**
 * Checks size, content type and JSON, then validates with the route's schema. Every failure is a
 * problem document; the body's values are never echoed back (they may hold secrets).
 */
export function parseJsonBody<S extends z.core.$ZodType>(request: HttpRequest, schema: S, limitBytes: number = BODY_LIMITS.api): z.infer<S> {
  assertBodyWithin(request, limitBytes);
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (contentType !== 'application/json') throw problems.unsupportedMediaType('application/json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(request.rawBody.toString('utf8'));
  } catch {
    throw problems.malformedJson();
  }
  const result = z.safeParse(schema, parsed);
  if (!result.success) throw problems.invalidBody(fieldErrors(result.error));
  return result.data;
}

/** Any thrown value → a response. Unexpected errors become a bare 500 with no internals. */
export function responseForError(error: unknown): HttpResponse {
  if (error instanceof ProblemError) return problemResponse(error.problem, error.headers);
  return problemResponse(problems.internal().problem);
}
