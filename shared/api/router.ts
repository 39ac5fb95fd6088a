import * as z from 'zod/mini';
import { gateway as defaultGateway, type Gateway } from '../gateway';
import { addToLogContext } from '../log/log-context';
import { log as rootLogger } from '../log/logger';
import { playbookCaller } from '../api-keys/playbook-caller';
import { callerOf, type Caller } from './caller';
import { json, parseJsonBody, type HttpRequest, type HttpResponse } from './http';
import { fieldErrors, problems } from './problem';
import type { Route } from './route';
import type { RouteArea } from './route-area';
import { guardAccount, takeAccountQuota } from '../tenants/account-guard';

interface PathPattern {
  pattern: RegExp;
  names: string[];
}

interface CompiledRoute extends PathPattern {
  route: Route;
}

function compilePath(path: string): PathPattern {
  const names: string[] = [];
  const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}|\{(\w+)\}/g, (_m, a: string, b: string) => {
    names.push(a ?? b);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${source}/?$`), names };
}

/**
 * Matches a request to a route, validates it, runs it, and turns every failure into problem+json.
 * An area's routes are loaded by the first request to one of its paths (shared/api/route-area.ts).
 */
export function createRouter(areas: readonly RouteArea[], options: { gateway?: () => Gateway } = {}) {
  const areaPaths = areas.flatMap((area, index) => area.paths.map((path) => ({ index, ...compilePath(path) })));
  const loaded = new Map<number, Promise<CompiledRoute[]>>();
  const routesOf = (index: number) => {
    let routes = loaded.get(index);
    if (!routes) {
      routes = areas[index]!.load().then((list) => list.map((route) => ({ route, ...compilePath(route.path) })));
      loaded.set(index, routes);
      routes.catch(() => loaded.delete(index));
    }
    return routes;
  };
  const gatewayOf = options.gateway ?? defaultGateway;

  /**
   * Matches, validates and runs the request. Every failure is thrown (a ProblemError, or anything
   * unexpected): the handler engine's problem middleware answers it as problem+json and logs it
   * with the invocation's context (shared/handler/problem-errors.ts).
   */
  return async function dispatch(request: HttpRequest): Promise<HttpResponse> {
    // The areas with this path, in their order, so the first route that matches is the table's first.
    const reached = [...new Set(areaPaths.filter((area) => area.pattern.test(request.path)).map((area) => area.index))];
    const compiled = (await Promise.all(reached.map(routesOf))).flat();
    const matches = compiled.filter((c) => c.pattern.test(request.path));
    if (matches.length === 0) throw problems.notFound(`No API operation at ${request.path}.`);
    const match = matches.find((c) => c.route.method === request.method);
    if (!match) throw problems.methodNotAllowed(request.method);
    // The route's template is logged, not the raw path: a path can carry an email address.
    addToLogContext({ method: request.method, route: match.route.path });

    let values: string[];
    try {
      values = match.pattern
        .exec(request.path)!
        .slice(1)
        .map((v) => decodeURIComponent(v));
    } catch {
      throw problems.invalidParameter([{ path: '(path)', message: 'The address has a malformed percent-encoding.' }]);
    }
    const rawParams = Object.fromEntries(match.names.map((name, i) => [name, values[i]]));
    const params = z.safeParse(match.route.params, rawParams);
    if (!params.success) throw problems.invalidParameter(fieldErrors(params.error));

    const gateway = gatewayOf();
    const access = match.route.access ?? 'signed-in';
    const caller: Caller =
      access === 'public' ? { subject: 'anonymous', operator: false } : access === 'playbook' ? await playbookCaller(request, gateway) : callerOf(request);
    const accountId = access === 'playbook' ? caller.accountId : ((params.data as { accountId?: string }).accountId ?? caller.accountId);
    addToLogContext({ subject: caller.subject, ...(accountId ? { accountId } : {}) });
    const account = await guardAccount(gateway, match.route, caller, accountId);
    const query = match.route.query ? parseQuery(request, match.route.query) : undefined;
    const body = match.route.body ? parseJsonBody(request, match.route.body) : undefined;
    await takeAccountQuota(gateway, match.route, account, body);
    const result = await match.route.handle({
      request,
      params: params.data,
      query,
      body,
      caller,
      gateway,
      log: rootLogger.with({ requestId: request.requestId }),
    });
    if (isHttpResponse(result)) return result;
    return json(match.route.response.status, result);
  };
}

/** Validates the query string; failures name the parameter (never the value sent). */
function parseQuery(request: HttpRequest, schema: z.core.$ZodType): unknown {
  const parsed = z.safeParse(schema, request.query);
  if (parsed.success) return parsed.data;
  throw problems.invalidParameter(fieldErrors(parsed.error).map((error) => (error.path === '(body)' ? { ...error, path: '(query)' } : error)));
}

function isHttpResponse(value: unknown): value is HttpResponse {
  return typeof value === 'object' && value !== null && 'status' in value && 'headers' in value && 'body' in value;
}

/** A GET/DELETE has no body; anything sent is refused rather than silently ignored. */
export const NoParams = z.object({});
