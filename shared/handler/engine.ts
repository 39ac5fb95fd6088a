import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { config as zodConfig } from 'zod/mini';
import { en } from 'zod/locales';
import { withNewLogContext } from '../log/log-context';
import { metrics } from '../metrics/gateway-metrics';
import { addLambdaToLogs, invocationLogFields, type InvocationIds } from './log-context';

/**
 * The handler engine: every function in functions/ is a few lines of its own work wrapped in
 * middy, with one middleware per cross-cutting concern:
 *
 * | concern | middleware | functions |
 * |---|---|---|
 * | request and account ids in every log line | none: the invocation's log context starts with them (log-context.ts) | all |
 * | metrics flushed after each invocation (CloudWatch EMF) | Powertools `logMetrics` | all |
 * | X-Ray traces | `traces` (traces.ts, passed in by the function) | those that pass it |
 * | security headers | `securityHeaders` (middy's http-security-headers) | HTTP (http-function.ts) |
 * | errors → application/problem+json | `problemErrors` | HTTP (http-function.ts) |
 * | SQS partial batch responses | Powertools `BatchProcessor` | SQS consumers (queue-function.ts) |
 *
 * Settings are checked when the function loads: each function that reads any calls
 * `checkSettingsAtLoad(<its name>)` at the top of its file (settings-check.ts; a test loads every
 * function with its settings missing and expects it to stop). The kinds live in separate files, and
 * the check in its own, so a function bundles only what it uses. There is no JSON body parser: the
 * webhook receivers verify signatures over the raw body exactly as sent, and the API parses with
 * each route's zod schema.
 */

// The schemas are zod/mini (a twelfth of classic zod's size and import time), which leaves messages to a
// locale: without English, a refused body would say only "Invalid input" where it names what was expected.
zodConfig(en());

export interface FunctionOptions<E> {
  /** Extra middlewares (`traces()`'s), outermost first; they run inside the log context and the metrics flush. */
  use?: MiddlewareObj<E>[];
}

/** Lambda's context, or undefined where none was given (middy hands `{}` then: the local runtime and tests). */
export const lambdaContext = (context: Context | undefined): Context | undefined =>
  typeof context?.getRemainingTimeInMillis === 'function' ? context : undefined;

/** Any handler: runs in its own log context, with the ids `idsOf` finds, and flushes its metrics. */
export function gatewayFunction<E, R>(
  work: (event: E, context: Context) => Promise<R>,
  idsOf: (event: E) => InvocationIds,
  middlewares: MiddlewareObj<E, R>[],
): (event: E, context?: Context) => Promise<R> {
  const engine = middy<E, R>(work as never)
    .use(logMetrics(metrics) as unknown as MiddlewareObj<E, R>)
    .use(middlewares);
  // A fresh context per invocation, whatever context the caller runs in (the local queues call
  // consumers from inside another request's context), made once with the invocation's ids: the
  // ids are known before middy starts, so no middleware copies them in afterwards.
  return (event, context) =>
    withNewLogContext(
      () => {
        addLambdaToLogs(context);
        return engine(event, context as Context);
      },
      invocationLogFields(idsOf(event)),
    );
}

/**
 * Any other function (a schedule's target, a state machine's task, a hand-written batch): log
 * context and metrics, with errors left to the caller (Step Functions retries and catches them).
 */
export function taskFunction<E, R>(
  work: (event: E, context: Context | undefined) => Promise<R>,
  options: FunctionOptions<E> & { idsOf?: (event: E) => InvocationIds } = {},
): (event: E, context?: Context) => Promise<R> {
  return gatewayFunction<E, R>(
    (event, context) => work(event, lambdaContext(context)),
    options.idsOf ?? (() => ({})),
    (options.use ?? []) as MiddlewareObj<E, R>[],
  );
}
