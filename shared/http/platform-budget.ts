import type { HttpMethod } from './platform-request';
import type { BudgetPace, RateBudget } from './rate-budget';

/**
 * The platform client's budgets: the connection's rate budget, shared by every caller of the
 * connection, and, for a platform that limits each endpoint too, the endpoint's. A request takes its
 * turn in both; an answer reports back (a success lets the rate climb, a 429 slows both); and the
 * client's pace says how fast it may go and how long the platform takes to answer.
 */

export interface ClientPace {
  ratePerSecond: number | undefined;
  waitMs: number;
  latencyMs: number | undefined;
}

/** One request's budgets: it waits for its turn in the endpoint's first, then in the connection's when it can go. */
export interface RequestBudget {
  endpoint: RateBudget | undefined;
  connection: RateBudget;
  /** An answered attempt that took `tookMs`. */
  succeeded(tookMs: number): void;
  /** A 429 (with the platform's Retry-After, if it gave one): slows both, since it does not say which limit it broke. */
  throttled(retryAfterMs: number | undefined): void;
}

export interface ClientBudgets {
  forRequest(method: HttpMethod, path: string): RequestBudget;
  /** The tightest of the connection's budget and the endpoints' this client called (a sync job lists one). */
  pace(endpoint?: { method: HttpMethod; path: string }): ClientPace;
}

export function clientBudgets(rateBudget: RateBudget, endpointBudget?: (method: HttpMethod, path: string) => RateBudget | undefined): ClientBudgets {
  /** Moving average of answered attempts' durations (ms): how long the platform takes. */
  let latencyMs: number | undefined;
  /** The endpoint budgets this client has drawn from: its pace is the tightest of them and the connection's. */
  const endpointBudgets = new Set<RateBudget>();

  function forRequest(method: HttpMethod, path: string): RequestBudget {
    const endpoint = endpointBudget?.(method, path);
    if (endpoint) endpointBudgets.add(endpoint);
    return {
      endpoint,
      connection: rateBudget,
      succeeded(tookMs) {
        latencyMs = latencyMs === undefined ? tookMs : latencyMs * 0.8 + tookMs * 0.2;
        rateBudget.recordSuccess?.();
        endpoint?.recordSuccess?.();
      },
      throttled(retryAfterMs) {
        rateBudget.penalize(retryAfterMs);
        endpoint?.penalize(retryAfterMs);
      },
    };
  }

  function pace(endpoint?: { method: HttpMethod; path: string }): ClientPace {
    const named = endpoint && endpointBudget?.(endpoint.method, endpoint.path);
    const paces = [rateBudget, ...endpointBudgets, ...(named ? [named] : [])].map((budget) => budget.pace?.()).filter((one): one is BudgetPace => one !== undefined);
    if (paces.length === 0) return { ratePerSecond: undefined, waitMs: 0, latencyMs };
    return { ratePerSecond: Math.min(...paces.map((one) => one.ratePerSecond)), waitMs: Math.max(...paces.map((one) => one.waitMs)), latencyMs };
  }

  return { forRequest, pace };
}
