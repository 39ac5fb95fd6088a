import type * as z from 'zod/mini';
import type { ConnectorName } from '../connectors';
import type { PlatformErrorKind } from './platform-error';

/** The shapes a platform request and its answer take: shared by the client, its transport and its retries. */

export type PlatformAuth =
  /** Basic: the billing and payment platforms take the API key as username with an empty password. */
  { kind: 'basic'; username: string; password?: string } | { kind: 'bearer'; token: string } | { kind: 'none' };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type QueryValue = string | number | boolean | undefined;

/** One HTTP attempt, reported to `onCall` and counted for the benchmarks. */
export interface PlatformCall {
  platform: ConnectorName;
  method: HttpMethod;
  /** Path without the query string. */
  path: string;
  /** HTTP status; undefined for a timeout or a network error. */
  status: number | undefined;
  /** 'ok' for a usable 2xx, otherwise what went wrong on this attempt. */
  outcome: 'ok' | PlatformErrorKind;
  /** 1 for the first attempt of a request. */
  attempt: number;
  durationMs: number;
}

export interface PlatformRequest<T = unknown> {
  method: HttpMethod;
  /** Path below baseUrl. Encode ids with `encodeURIComponent`. May carry a pre-encoded query. */
  path: string;
  /**
   * Keys go out literally, so bracket filters (`status[in]`, `created[gte]`) stay readable;
   * values are URL-encoded. Undefined values are left out. Arrays are the caller's business
   * (`types[0]`, or a JSON array for the billing platform's `[in]`) because platforms disagree.
   */
  query?: Record<string, QueryValue>;
  headers?: Record<string, string>;
  /** JSON body. */
  body?: unknown;
  /** Form body (`application/x-www-form-urlencoded`), e.g. OAuth token requests. */
  form?: Record<string, QueryValue>;
  /** Validates the parsed 2xx body; a mismatch is an 'invalid_response' error, not retried. */
  schema?: z.core.$ZodType<T>;
  idempotencyKey?: string;
  /**
   * Whether sending this twice is harmless. Default: true for GET, PUT and DELETE, and for any
   * request with an idempotencyKey. Set it for read-only POSTs (the data platform's SQL query).
   */
  idempotent?: boolean;
  /** Overrides the client's per-attempt timeout (long-polls wait longer than ordinary calls). */
  timeoutMs?: number;
  /** Tokens to take from the rate budget per attempt. Default 1. */
  cost?: number;
  /** Abandons the request (a poller handing over or stopping): the promise rejects with the signal's reason, no retry. */
  signal?: AbortSignal;
}

export interface PlatformResponse<T> {
  status: number;
  headers: Headers;
  /** Parsed JSON (validated when a schema was given); undefined for an empty body (204). */
  body: T;
  attempts: number;
}
