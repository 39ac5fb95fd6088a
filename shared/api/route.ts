import type * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import type { QuotaKind } from '../tenants/quotas';
import type { Logger } from '../log/logger';
import type { Caller } from './caller';
import type { HttpRequest, HttpResponse } from './http';

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface RouteContext<P, B, Q = undefined> {
  request: HttpRequest;
  params: P;
  body: B;
  /** The query string, validated by the route's `query` schema (undefined when the route has none). */
  query: Q;
  /** Present on every route except public ones; a playbook caller's `accountId` comes from its key. */
  caller: Caller;
  gateway: Gateway;
  log: Logger;
}

/**
 * One API operation. The same object drives validation, the handler and the OpenAPI document,
 * so the published contract cannot drift from what the code accepts.
 */
export interface Route<
  P extends z.core.$ZodType = z.core.$ZodType,
  B extends z.core.$ZodType | undefined = z.core.$ZodType | undefined,
  R extends z.core.$ZodType | undefined = z.core.$ZodType | undefined,
  Q extends z.core.$ZodType | undefined = z.core.$ZodType | undefined,
> {
  method: Method;
  /** OpenAPI-style template: `/api/v1/accounts/{accountId}`. */
  path: string;
  operationId: string;
  summary: string;
  /**
   * Who may call: `signed-in` dashboard users (the default, behind the JWT authorizer), `playbook`
   * callers with an account API key (`/api/v1/playbook/...`), or anyone (`public`).
   */
  access?: 'public' | 'signed-in' | 'playbook';
  params: P;
  /**
   * Every route of an account (a path with `{accountId}`, or a playbook's) answers only while the
   * account's Integrations are switched on (shared/tenants/account-guard.ts); `'not-required'`
   * exempts the few that must work before (the account itself, which the operator switches on).
   */
  integrations?: 'not-required';
  /** The account quota this route draws from, and how much a request costs (default 1). */
  quota?: { kind: QuotaKind; cost?(body: B extends z.core.$ZodType ? z.infer<B> : undefined): number };
  /** Query string parameters: validated after the caller is known (400 problem), published as `in: query`. */
  query?: Q;
  body?: B;
  /** What the OpenAPI document shows for the body when `body` is looser than the real forms. */
  documentedBody?: z.core.$ZodType;
  response: { status: number; description: string; schema?: R };
  /** Other successful answers the handler gives as HttpResponses (documented only). */
  otherResponses?: ReadonlyArray<{ status: number; description: string; schema?: z.core.$ZodType }>;
  handle(
    context: RouteContext<z.infer<P>, B extends z.core.$ZodType ? z.infer<B> : undefined, Q extends z.core.$ZodType ? z.infer<Q> : undefined>,
  ): Promise<(R extends z.core.$ZodType ? z.infer<R> : undefined) | HttpResponse>;
}

/** Keeps each route's types precise while collecting routes of different shapes in one list. */
export function route<
  P extends z.core.$ZodType,
  B extends z.core.$ZodType | undefined,
  R extends z.core.$ZodType | undefined,
  Q extends z.core.$ZodType | undefined = undefined,
>(definition: Route<P, B, R, Q>): Route {
  return definition as unknown as Route;
}
