import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type * as z from 'zod';
import { requestFromApiGateway, responseToApiGateway, type HttpRequest, type HttpResponse } from '../api/http';
import { addToLogContext, withLogContext, withNewLogContext } from '../log/log-context';
import { log, type Logger } from '../log/logger';
import { metrics } from '../metrics/gateway-metrics';
import { checkSettingsAtLoad, type HandlerName } from './function-settings';
import { logContext, type InvocationIds } from './log-context';
import { problemErrors } from './problem-errors';
import { securityHeaders } from './security-headers';

/**
 * The handler engine: every function in functions/ is a few lines of its own work wrapped here in
 * middy, with one middleware per cross-cutting concern:
 *
 * | concern | middleware | functions |
 * |---|---|---|
 * | request and account ids in every log line | `logContext` | all |
 * | metrics flushed after each invocation (CloudWatch EMF) | Powertools `logMetrics` | all |
 * | X-Ray traces | `traces` (shared/handler/traces.ts, passed in by the function) | those that pass it |
 * | security headers | `securityHeaders` (middy's http-security-headers) | HTTP |
 * | errors → application/problem+json | `problemErrors` | HTTP |
 * | SQS partial batch responses | Powertools `BatchProcessor` | SQS consumers |
 *
 * Settings are checked when the function loads (function-settings.ts). There is no JSON body
 * parser: the webhook receivers verify signatures over the raw body exactly as sent, and the API
 * parses with each route's zod schema.
 */

export interface FunctionOptions<E> {
  /** Extra middlewares (`traces()`), outermost first; they run inside the log context and the metrics flush. */
  use?: MiddlewareObj<E>[];
}

/** Any handler: runs in its own log context, with the ids `idsOf` finds, and flushes its metrics. */
function gatewayFunction<E, R>(
  name: HandlerName,
  work: (event: E, context: Context) => Promise<R>,
  idsOf: (event: E) => InvocationIds,
  middlewares: MiddlewareObj<E, R>[],
): (event: E, context?: Context) => Promise<R> {
  checkSettingsAtLoad(name);
  const engine = middy<E, R>(work as never)
    .use(logContext(idsOf) as MiddlewareObj<E, R>)
    .use(logMetrics(metrics) as unknown as MiddlewareObj<E, R>)
    .use(middlewares);
  // A fresh context per invocation, whatever context the caller runs in (the local queues call
  // consumers from inside another request's context).
  return (event, context) => withNewLogContext(() => engine(event, context as Context));
}

/** Lambda's context, or undefined where none was given (middy hands `{}` then: the local runtime and tests). */
const lambdaContext = (context: Context | undefined): Context | undefined =>
  typeof context?.getRemainingTimeInMillis === 'function' ? context : undefined;

const accountInPath = /\/accounts\/([^/]+)/;

/** The account an HTTP request is about: `?account=` (webhooks), `/accounts/{id}`, or the signed-in user's. */
function httpIds(event: APIGatewayProxyEventV2): InvocationIds {
  const claims = (event.requestContext as { authorizer?: { jwt?: { claims?: Record<string, unknown> } } }).authorizer?.jwt?.claims;
  const claimed = claims?.['custom:account_id'];
  return {
    requestId: event.requestContext?.requestId,
    accountId: event.queryStringParameters?.account ?? accountInPath.exec(event.rawPath ?? '')?.[1] ?? (typeof claimed === 'string' ? claimed : undefined),
  };
}

/** An HTTP API route's function: the request as the gateway sees it (raw body kept) in, an HttpResponse out. */
export function httpFunction(
  name: HandlerName,
  respond: (request: HttpRequest) => Promise<HttpResponse>,
  options: FunctionOptions<APIGatewayProxyEventV2> = {},
): (event: APIGatewayProxyEventV2, context?: Context) => Promise<APIGatewayProxyResultV2> {
  return gatewayFunction<APIGatewayProxyEventV2, APIGatewayProxyResultV2>(
    name,
    async (event) => responseToApiGateway(await respond(requestFromApiGateway(event))),
    httpIds,
    // Order matters for onError, which runs innermost first: the problem is made, then headered.
    [...((options.use ?? []) as MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>[]), securityHeaders() as MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>, problemErrors() as MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>],
  );
}

export interface QueueFunctionOptions<M, B> extends FunctionOptions<SQSEvent> {
  /** The account a message is for, into its log context. */
  accountOf?: (message: M) => string | undefined;
  /** Records one at a time (default: side by side, as SQS batches are unordered anyway). */
  sequential?: boolean;
  /** State shared by the records of one batch (a cache), made afresh for each batch. */
  perBatch?: () => B;
}

/** What a record's work gets besides its message. */
export interface BatchInvocation<B> {
  context: Context | undefined;
  batch: B;
}

/**
 * An SQS consumer: each record parsed with `schema` and handed to `work` in its own log context
 * (message id, receive count, account). Powertools' batch processor reports the records that threw
 * as a partial batch response, so SQS retries only those; a record that does not parse fails too,
 * and after the queue's maxReceiveCount lands in the dead-letter queue, where the alarm fires.
 */
export function queueFunction<S extends z.ZodType, B = undefined>(
  name: HandlerName,
  schema: S,
  work: (message: z.infer<S>, log: Logger, invocation: BatchInvocation<B>) => Promise<void>,
  options: QueueFunctionOptions<z.infer<S>, B> = {},
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const onRecord = (invocation: BatchInvocation<B>) => (record: SQSRecord) =>
    withLogContext({ messageId: record.messageId, receiveCount: record.attributes?.ApproximateReceiveCount }, async () => {
      try {
        const parsed = schema.safeParse(JSON.parse(record.body));
        if (!parsed.success) throw new Error(`message does not match ${schema.description ?? 'its schema'}: ${parsed.error.issues.length} issue(s)`);
        const accountId = options.accountOf?.(parsed.data);
        if (accountId) addToLogContext({ accountId });
        await work(parsed.data, log, invocation);
      } catch (error) {
        log.warn('message failed; it will be retried', { error });
        throw error;
      }
    });
  return gatewayFunction<SQSEvent, SQSBatchResponse>(
    name,
    // A processor per invocation: its state is the batch's, and local runs may overlap.
    (event, context) =>
      processPartialResponse(event, onRecord({ context: lambdaContext(context), batch: options.perBatch?.() as B }), new BatchProcessor(EventType.SQS), {
        context,
        // All failed is reported like some failed (each retried, then dead-lettered), not thrown.
        throwOnFullBatchFailure: false,
        processInParallel: !options.sequential,
      }),
    () => ({}),
    (options.use ?? []) as MiddlewareObj<SQSEvent, SQSBatchResponse>[],
  );
}

/**
 * Any other function (a schedule's target, a state machine's task, a hand-written batch): log
 * context and metrics, with errors left to the caller (Step Functions retries and catches them).
 */
export function taskFunction<E, R>(
  name: HandlerName,
  work: (event: E, context: Context | undefined) => Promise<R>,
  options: FunctionOptions<E> & { idsOf?: (event: E) => InvocationIds } = {},
): (event: E, context?: Context) => Promise<R> {
  return gatewayFunction<E, R>(name, (event, context) => work(event, lambdaContext(context)), options.idsOf ?? (() => ({})), (options.use ?? []) as MiddlewareObj<E, R>[]);
}
