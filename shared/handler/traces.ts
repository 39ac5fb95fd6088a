import { isRequestXRaySampled } from '@aws-lambda-powertools/commons/utils/env';
import type { MiddlewareObj } from '@middy/core';
import { METRICS_SERVICE } from '../metrics/catalogue';
import { activateTracer } from '../tracing/segments';

type TracerMiddleware = MiddlewareObj;
let loading: Promise<TracerMiddleware> | undefined;

/** Powertools Tracer and its middy middleware, loaded on the first sampled invocation only. */
async function loadTracer(): Promise<TracerMiddleware> {
  const [{ Tracer }, { captureLambdaHandler }] = await Promise.all([import('@aws-lambda-powertools/tracer'), import('@aws-lambda-powertools/tracer/middleware')]);
  // No automatic HTTP subsegments: their names are URLs, which can carry ids and emails.
  // Platform calls get their own subsegments (shared/tracing/segments.ts).
  const tracer = new Tracer({ serviceName: METRICS_SERVICE, captureHTTPsRequests: false });
  activateTracer(tracer);
  // Responses carry account data: never copied into a trace.
  return captureLambdaHandler(tracer, { captureResponse: false });
}

/**
 * X-Ray traces: a handler subsegment with the cold start and service annotations, a subsegment
 * per AWS SDK call (the gateway's clients are registered with `tracedAwsClient`) and per platform
 * call. Lambda's active tracing records every function's invocation anyway; this adds what
 * happens inside. Powertools Tracer (the X-Ray SDK, ~120 KB, ~40 ms to load) is imported only when
 * Lambda samples an invocation, so an unsampled cold start does not pay for it; functions where
 * the inside holds little (the webhook receivers: one SQS call) leave this middleware out.
 */
export function traces(): MiddlewareObj {
  const KEY = 'gatewayTracer';
  const tracerOf = (request: { internal: Record<string, unknown> }) => request.internal[KEY] as TracerMiddleware | undefined;
  return {
    async before(request) {
      if (!process.env.AWS_LAMBDA_FUNCTION_NAME || !isRequestXRaySampled()) return;
      const tracer = await (loading ??= loadTracer());
      (request.internal as Record<string, unknown>)[KEY] = tracer;
      await tracer.before?.(request);
    },
    async after(request) {
      await tracerOf(request)?.after?.(request);
    },
    async onError(request) {
      await tracerOf(request)?.onError?.(request);
    },
  };
}
