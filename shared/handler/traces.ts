import type { MiddlewareObj } from '@middy/core';
import { METRICS_SERVICE } from '../metrics/catalogue';
import { activateTracer, type AwsCallRecord } from '../tracing/segments';

/**
 * X-Ray traces (Powertools Tracer): a handler subsegment with the cold start and service
 * annotations, a subsegment per AWS call (recorded as X-Ray records an SDK client's: the functions
 * make their AWS calls without one, shared/aws/signed-call.ts) and one per platform call
 * (shared/tracing/segments.ts, named by platform and the path's shape, never a URL). Lambda's active tracing records every function's invocation
 * anyway; this adds what happens inside.
 *
 * It costs: the X-Ray SDK is ~120 KB and ~35 ms of every cold start (measured: bundling it behind
 * a dynamic import saves nothing, esbuild evaluates it either way). So only the queue workers use it
 * (sync-job, webhook-event, ingest): they make the platform calls worth tracing, and nobody waits
 * on their cold start. The API, the webhook receivers and the schedule and state-machine tasks
 * leave it out (docs/monitoring.md, "Traces").
 *
 * Loaded only inside Lambda (`AWS_EXECUTION_ENV`, as Powertools itself decides): the X-Ray SDK
 * installs an async hook that tracks every promise (cls-hooked), and in `npm start`, the tests
 * and the benchmarks, where nothing is traced, that hook alone took a tenth of the CPU of the
 * conversations benchmark's gateway process, which runs these workers beside the pollers.
 */
const tracing = process.env.AWS_EXECUTION_ENV ? await loadTracing() : undefined;

async function loadTracing() {
  const [{ Tracer }, { captureLambdaHandler }, { default: Aws }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('@aws-lambda-powertools/tracer/middleware'),
    // X-Ray's record of an AWS call, for the calls made without an SDK client (Tracer loads it anyway).
    import('aws-xray-sdk-core/dist/lib/segments/attributes/aws.js'),
  ]);
  const tracer = new Tracer({
    serviceName: METRICS_SERVICE,
    // No automatic HTTP subsegments: they are named by URL, and URLs can carry ids and emails.
    captureHTTPsRequests: false,
  });
  if (tracer.isTracingEnabled()) activateTracer(Object.assign(tracer, { awsAttribute: (call: AwsCallRecord, service: string) => new Aws(call, service) }));
  return { tracer, captureLambdaHandler };
}

/** The middlewares a traced function uses: the handler's subsegment in Lambda, none elsewhere. */
export function traces(): MiddlewareObj[] {
  // Answers carry account data: never copied into a trace.
  return tracing ? [tracing.captureLambdaHandler(tracing.tracer, { captureResponse: false })] : [];
}
