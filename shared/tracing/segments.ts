/**
 * X-Ray segments for the gateway's own work, without importing the X-Ray SDK here: the functions
 * that trace (shared/handler/traces.ts) activate Powertools Tracer in this module; in the others,
 * and outside Lambda, these calls cost a property read.
 */

/** The part of a Powertools Tracer this module uses. */
export interface ActiveTracer {
  /**
   * X-Ray's own `aws` attribute for a call (aws-xray-sdk-core's Aws, with its whitelist of what to
   * record per operation), for the calls made without an SDK client: shared/handler/traces.ts hands it
   * over where X-Ray is loaded anyway.
   */
  awsAttribute(call: AwsCallRecord, service: string): object;
  provider: {
    captureAsyncFunc(name: string, work: (subsegment?: SubsegmentLike) => unknown): unknown;
  };
}
export interface SubsegmentLike {
  addAnnotation(key: string, value: string | number | boolean): void;
  addError(error: Error | string, remote?: boolean): void;
  close(error?: Error | string | null | { message: string; name: string; stack?: string }, remote?: boolean): void;
  /** X-Ray's own fields and flags, which an AWS call's subsegment sets (`awsCallSegment`). */
  id: string;
  notTraced?: boolean;
  /** A segment X-Ray does not record (Lambda's PassThrough tracing): no trace header of its own. */
  noOp?: boolean;
  segment?: { trace_id?: string; additionalTraceData?: object };
  addAttribute(name: string, value: unknown): void;
  addThrottleFlag(): void;
  addErrorFlag(): void;
  addFaultFlag(): void;
}

let active: ActiveTracer | undefined;

/** Called by shared/handler/traces.ts when tracing is on (in Lambda, with active tracing). */
export function activateTracer(tracer: ActiveTracer | undefined): void {
  active = tracer;
}

export function tracingActive(): boolean {
  return active !== undefined;
}

/** An AWS call made without an SDK client (shared/aws/signed-call.ts), as its subsegment names it. */
export interface AwsCall {
  /** The SDK client's name less `Client`, as X-Ray names the service: `DynamoDB`, `SQS`, `SFN`. */
  service: string;
  operation: string;
  region: string;
  input: object;
}

/** How an AWS call ended, read from its answer's or its error's `$metadata`. */
export interface AwsCallOutcome {
  httpStatusCode?: number;
  requestId?: string;
  contentLength?: number;
  attempts: number;
  throttled: boolean;
  /** The answer, for what X-Ray records of it (a received message count). */
  output?: object;
}

/** A call as aws-xray-sdk-core's Aws attribute reads an SDK response (its aws3 patcher builds the same). */
export interface AwsCallRecord {
  requestId?: string;
  retryCount: number;
  data?: object;
  request: { operation: string; params: object; httpRequest: { region: string; statusCode?: number } };
}

/**
 * One subsegment per AWS call made without an SDK client, recorded as X-Ray's capture of an SDK
 * client records one (aws-xray-sdk-core, patchers/aws3_p.js), so traces and the service map read the
 * same (test/aws/traced-calls.test.ts compares them): named by the service, in the `aws` namespace,
 * X-Ray's `aws` attribute (operation, region, request id, retries, the table or queue), the response
 * status, and a throttle, error (4xx) or fault (5xx) flag. `work` gets the trace header to send
 * (`Root`, this subsegment as `Parent`, `Sampled`): it links what the call causes (an SQS
 * message's consumer) into this trace. Without an active tracer, `work` gets undefined and nothing
 * is recorded.
 */
export async function awsCallSegment<T>(call: AwsCall, work: (traceHeader: string | undefined) => Promise<T>, outcomeOf: (ended: unknown) => AwsCallOutcome | undefined): Promise<T> {
  const tracer = active;
  if (!tracer) return work(undefined);
  return (await tracer.provider.captureAsyncFunc(call.service, async (subsegment) => {
    if (!subsegment) return work(undefined);
    subsegment.addAttribute('namespace', 'aws');
    const root = subsegment.segment;
    const traceHeader = [`Root=${root?.trace_id ?? ''}`, `Parent=${subsegment.id}`, `Sampled=${subsegment.notTraced ? '0' : '1'}`, ...Object.entries(root?.additionalTraceData ?? {}).map(([key, value]) => `${key}=${String(value)}`)].join(';');
    const record = (ended: unknown) => {
      const outcome = outcomeOf(ended);
      if (!outcome) return;
      // X-Ray's patcher names the operation as the SDK's command does, less `Command`, first letter lowered.
      const operation = call.operation.charAt(0).toLowerCase() + call.operation.slice(1);
      const status = outcome.httpStatusCode;
      subsegment.addAttribute('aws', tracer.awsAttribute({ requestId: outcome.requestId, retryCount: outcome.attempts, data: outcome.output, request: { operation, params: call.input, httpRequest: { region: call.region, statusCode: status } } }, call.service));
      const response = { ...(status ? { status } : {}), ...(outcome.contentLength !== undefined ? { content_length: outcome.contentLength } : {}) };
      subsegment.addAttribute('http', Object.keys(response).length > 0 ? { response } : {});
      if (outcome.throttled || status === 429) subsegment.addThrottleFlag();
      if ((status ?? 0) >= 500) subsegment.addFaultFlag();
      else if ((status ?? 0) >= 400) subsegment.addErrorFlag();
    };
    // A trace that cannot be written never changes what the call answered.
    const recordSafely = (ended: unknown) => {
      try {
        record(ended);
      } catch {
        // The subsegment lacks its record; the call's outcome stands.
      }
    };
    let result: T;
    try {
      // A segment X-Ray does not record sends no header of its own: the invocation's goes instead.
      result = await work(root?.trace_id && !subsegment.noOp ? traceHeader : undefined);
    } catch (error) {
      recordSafely(error);
      // As X-Ray's patcher closes it: a copy of the error, marked remote (the service refused).
      const failure = error instanceof Error ? error : new Error(String(error));
      subsegment.close({ message: failure.message, name: failure.name, stack: failure.stack }, true);
      throw error;
    }
    recordSafely(result);
    subsegment.close();
    return result;
  })) as T;
}

/** An API's own words: `customers`, `payment_intents`, `v1`, `v61.0`, `queryv2`. Anything else may be data. */
const API_WORD = /^(?:[a-z][a-z_]{0,23}|v\d+(?:\.\d+)*|[a-z]{1,16}v\d+)$/;

/**
 * Path segments that may carry data (ids, emails, names) become `{id}`: a segment records the
 * shape of a call, never what it was about. `/v1/customers/cus_123` → `/v1/customers/{id}`.
 * Kept: lower-case words (with underscores) and version tokens; the query string is dropped.
 */
export function pathShape(path: string): string {
  const bare = path.split('?')[0] ?? '';
  return bare
    .split('/')
    .map((part) => (part === '' || API_WORD.test(part) ? part : '{id}'))
    .join('/');
}

/**
 * One subsegment per platform call (per attempt), named after the platform, annotated with the
 * method, the path's shape (no ids, no query), the status and the attempt. No URL, header or body.
 */
export async function platformCallSegment<T>(
  platform: string,
  call: { method: string; path: string; attempt: number },
  work: (annotate: (key: string, value: string | number | boolean) => void) => Promise<T>,
): Promise<T> {
  if (!active) return work(() => {});
  return (await active.provider.captureAsyncFunc(`platform ${platform}`, async (subsegment) => {
    subsegment?.addAnnotation('platform', platform);
    subsegment?.addAnnotation('method', call.method);
    subsegment?.addAnnotation('operation', `${call.method} ${pathShape(call.path)}`);
    subsegment?.addAnnotation('attempt', call.attempt);
    try {
      return await work((key, value) => subsegment?.addAnnotation(key, value));
    } catch (error) {
      subsegment?.addError(error instanceof Error ? error : String(error), true);
      throw error;
    } finally {
      subsegment?.close();
    }
  })) as T;
}
