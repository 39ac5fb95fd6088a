import { MAXIMUM_RETRY_DELAY, Retry, isThrottlingError, isTransientError } from '@smithy/core/retry';
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { awsCallSegment, type AwsCallOutcome } from '../tracing/segments';

/**
 * One AWS call over HTTPS, signed with the SDK's own Signature V4 signer, without an SDK client.
 *
 * Why: every Lambda function makes its AWS calls this way, with no SDK client. An SDK client was
 * 170-270 KB of a bundle and most of its import time (docs/cold-starts.md), and the calls the gateway
 * makes (DynamoDB, KMS, SQS, Secrets Manager, EventBridge, Step Functions) are simple JSON requests.
 * The local runtime keeps the SDK's DynamoDB client, where the local IAM check sits.
 *
 * It does what the SDK's client would for these calls, checked against the SDK itself
 * (test/aws/signed-call.test.ts and signed-services.test.ts: the same request's target, headers and
 * body; the same answer read; test/aws/traced-calls.test.ts: the same X-Ray subsegment):
 * - the JSON protocols (awsJson 1.0 and 1.1): POST `/`, `X-Amz-Target: <service>.<Operation>`, blobs
 *   as base64;
 * - credentials, region and endpoints from the environment as Lambda sets them
 *   (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, `AWS_REGION`), and the SDK's
 *   endpoint overrides (`AWS_ENDPOINT_URL_<SERVICE>`, `AWS_ENDPOINT_URL`) and `AWS_MAX_ATTEMPTS`;
 * - the SDK's standard retry mode, decided by the SDK's own classification (`@smithy/core/retry`):
 *   up to 3 attempts, full-jitter exponential backoff from its bases (50 ms, 1 s after a throttling
 *   error), at most 20 s, for its throttling and transient errors (500, 502, 503, 504, 429, dropped
 *   connections and DNS failures). Not its retry quota (a token bucket that stops retrying when most
 *   calls fail), its Retry-After hints nor its clock-skew correction: Lambda's clock is kept in sync;
 * - each attempt has a deadline (3 s by default, 10 s for what is not safe to repeat; the SDK sets
 *   none), so a stalled connection is abandoned and tried again rather than holding the invocation
 *   until Lambda's timeout;
 * - a refusal throws an Error named with the service's error code, with `$metadata` and `$fault`;
 * - the invocation's trace header on every call, as the SDK's recursion-detection middleware sends
 *   it, and where the function traces, an X-Ray subsegment per call (shared/tracing/segments.ts).
 */

/** A service spoken to in one of AWS's JSON protocols. */
export interface AwsJsonService {
  /** The endpoint's first label and the signing name: `https://<endpointPrefix>.<region>.amazonaws.com`. */
  endpointPrefix: string;
  /** `X-Amz-Target`'s prefix (the service's Smithy shape name). */
  targetPrefix: string;
  jsonVersion: '1.0' | '1.1';
  /** The `AWS_ENDPOINT_URL_<name>` variable that points it elsewhere (as for the SDK). */
  endpointVariable: string;
  /** Its SDK client's name less `Client`: how X-Ray names its subsegments. */
  clientName: string;
  /**
   * How long one attempt may take before it is abandoned and tried again (default 3 s). An attempt
   * that succeeded but answered later is repeated: safe for the table's conditional writes (a repeat
   * answers as a refused condition, as after the SDK's own retry of a 500 that had succeeded), KMS,
   * SQS sends (at least once anyway) and reads; not for a published event or an answered task
   * token, so EventBridge and Step Functions wait 10 s, well past any answer of a live service.
   */
  attemptTimeoutMs?: number;
}

export const DYNAMODB: AwsJsonService = { endpointPrefix: 'dynamodb', targetPrefix: 'DynamoDB_20120810', jsonVersion: '1.0', endpointVariable: 'AWS_ENDPOINT_URL_DYNAMODB', clientName: 'DynamoDB' };
export const KMS: AwsJsonService = { endpointPrefix: 'kms', targetPrefix: 'TrentService', jsonVersion: '1.1', endpointVariable: 'AWS_ENDPOINT_URL_KMS', clientName: 'KMS' };
/**
 * Without the `x-amzn-query-mode` header the SDK adds for SQS: errors then come with their JSON codes
 * (`QueueDoesNotExist`) rather than the older query API's; nothing in the gateway branches on an SQS error code.
 */
export const SQS: AwsJsonService = { endpointPrefix: 'sqs', targetPrefix: 'AmazonSQS', jsonVersion: '1.0', endpointVariable: 'AWS_ENDPOINT_URL_SQS', clientName: 'SQS' };
export const SECRETS_MANAGER: AwsJsonService = { endpointPrefix: 'secretsmanager', targetPrefix: 'secretsmanager', jsonVersion: '1.1', endpointVariable: 'AWS_ENDPOINT_URL_SECRETS_MANAGER', clientName: 'SecretsManager' };
const NOT_SAFE_TO_REPEAT_TIMEOUT_MS = 10_000;
export const EVENTBRIDGE: AwsJsonService = { endpointPrefix: 'events', targetPrefix: 'AWSEvents', jsonVersion: '1.1', endpointVariable: 'AWS_ENDPOINT_URL_EVENTBRIDGE', clientName: 'EventBridge', attemptTimeoutMs: NOT_SAFE_TO_REPEAT_TIMEOUT_MS };
export const STEP_FUNCTIONS: AwsJsonService = { endpointPrefix: 'states', targetPrefix: 'AWSStepFunctions', jsonVersion: '1.0', endpointVariable: 'AWS_ENDPOINT_URL_SFN', clientName: 'SFN', attemptTimeoutMs: NOT_SAFE_TO_REPEAT_TIMEOUT_MS };

/** What the SDK puts on every answer, the same here. */
export interface CallMetadata {
  httpStatusCode?: number;
  requestId?: string;
  attempts: number;
  totalRetryDelay: number;
  /** Not in the SDK's: the answer's `Content-Length`, which X-Ray records of a call. */
  contentLength?: number;
}

/**
 * A refusal or failure of a signed call: `name` is the service's error code (or, for an attempt with
 * no answer, the socket's, also in `code`, as Node and the SDK give it).
 */
export class AwsCallError extends Error {
  readonly $metadata: CallMetadata;
  readonly $fault: 'client' | 'server';
  readonly code: string | undefined;
  declare readonly cause?: Error;

  constructor(code: string, message: string, details: { metadata: CallMetadata; fault: 'client' | 'server'; socketCode?: string }) {
    super(message);
    this.name = code;
    this.$metadata = details.metadata;
    this.$fault = details.fault;
    this.code = details.socketCode;
  }

  /** Whether the SDK's standard mode would try this again. */
  get retryable(): boolean {
    return retryBaseMs(this) !== undefined;
  }
}

export interface CallOptions {
  /** Attempts in all (the SDK's `maxAttempts`); default `AWS_MAX_ATTEMPTS`, else 3. */
  maxAttempts?: number;
  /** How long one attempt may take before it is abandoned and counted as a transient failure; default the service's. */
  attemptTimeoutMs?: number;
  /** The environment to read (tests); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Abandons the call (a long poll a poller stops waiting for): the attempt is cut and not retried. */
  signal?: AbortSignal;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_ATTEMPT_TIMEOUT_MS = 3_000;

/** Is a failure tried again, and from what base delay? The SDK's own decision; undefined: not retried. */
export function retryBaseMs(error: AwsCallError): number | undefined {
  if (isThrottlingError(error)) return Retry.throttlingDelay();
  if (isTransientError(error)) return Retry.delay();
  return undefined;
}

/** Full jitter, as the SDK: a random delay up to base × 2^(retry − 1), at most 20 s. */
export function retryDelayMs(base: number, retry: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(MAXIMUM_RETRY_DELAY, base * 2 ** (retry - 1)));
}

/**
 * Calls `operation` of `service` with `input` (the shapes of the service's API reference; the SDK's
 * types fit) and answers its output with `$metadata`. Uint8Array values are sent as base64; blobs in
 * the answer come back as base64 text for the caller to decode (it knows which fields are blobs).
 */
export async function signedCall<Output>(service: AwsJsonService, operation: string, input: object, options: CallOptions = {}): Promise<Output & { $metadata: CallMetadata }> {
  const env = options.env ?? process.env;
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (!region) throw new Error('AWS_REGION is not set: the region to call AWS in');
  return awsCallSegment(
    { service: service.clientName, operation, region, input },
    (traceHeader) => attempts<Output>(service, operation, input, { ...options, env, region, traceHeader: traceHeader ?? invocationTraceHeader(env), traceContext: env.AWS_LAMBDA_FUNCTION_NAME ? invocationTraceContext() : {} }),
    outcomeOf,
  );
}

/** A call's attempts, retried as the SDK's standard mode decides. */
async function attempts<Output>(
  service: AwsJsonService,
  operation: string,
  input: object,
  options: CallOptions & { env: NodeJS.ProcessEnv; region: string; traceHeader: string | undefined; traceContext: Record<string, string> },
): Promise<Output & { $metadata: CallMetadata }> {
  const { env, region } = options;
  const endpoint = new URL(env[service.endpointVariable] ?? env.AWS_ENDPOINT_URL ?? `https://${service.endpointPrefix}.${region}.amazonaws.com`);
  const maxAttempts = options.maxAttempts ?? (Number(env.AWS_MAX_ATTEMPTS) || DEFAULT_ATTEMPTS);
  const body = JSON.stringify(input, blobsAsBase64);
  const signer = signerFor(service.endpointPrefix, region, env);

  let totalRetryDelay = 0;
  for (let attempt = 1; ; attempt += 1) {
    const signed = await signer.sign({
      method: 'POST',
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      port: endpoint.port ? Number(endpoint.port) : undefined,
      path: endpoint.pathname,
      query: {},
      headers: {
        host: endpoint.host,
        'content-type': `application/x-amz-json-${service.jsonVersion}`,
        'x-amz-target': `${service.targetPrefix}.${operation}`,
        'content-length': String(Buffer.byteLength(body)),
        // Not signed (the signer leaves it out, as AWS expects): a trace header may be added on the way.
        ...(options.traceHeader ? { 'x-amzn-trace-id': options.traceHeader } : {}),
        // Signed, as the SDK's middleware adds them before its signer runs.
        ...options.traceContext,
      },
      body,
    });
    const deadline = options.attemptTimeoutMs ?? service.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    const answer = await post(endpoint, signed.headers, body, deadline, options.signal).catch((failure: NodeJS.ErrnoException) => failure);
    const metadata: CallMetadata =
      answer instanceof Error
        ? { attempts: attempt, totalRetryDelay }
        : { httpStatusCode: answer.status, requestId: header(answer, 'x-amzn-requestid'), attempts: attempt, totalRetryDelay, contentLength: Number(header(answer, 'content-length')) || undefined };
    if (!(answer instanceof Error) && answer.status < 300) {
      return Object.assign(answer.text ? (JSON.parse(answer.text) as object) : {}, { $metadata: metadata }) as Output & { $metadata: CallMetadata };
    }
    const error = answer instanceof Error ? unanswered(operation, answer, metadata) : refusal(answer, metadata);
    const base = retryBaseMs(error);
    if (base === undefined || attempt >= maxAttempts || options.signal?.aborted) throw error;
    const delay = retryDelayMs(base, attempt);
    totalRetryDelay += delay;
    await pause(delay, options.signal);
    if (options.signal?.aborted) throw error;
  }
}

/**
 * The invocation's trace header, sent on every call as the SDK's recursion-detection middleware
 * sends it: in Lambda (`AWS_LAMBDA_FUNCTION_NAME`), the runtime's invoke store's trace id, else its
 * `_X_AMZN_TRACE_ID`. Lambda's recursive loop detection (a function → queue → the same function,
 * over and over) and the link from an SQS message to its consumer's trace both read it.
 */
export function invocationTraceHeader(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!env.AWS_LAMBDA_FUNCTION_NAME) return undefined;
  const traceId = invokeStore()?.getXRayTraceId?.() ?? env._X_AMZN_TRACE_ID;
  return traceId ? traceId : undefined;
}

/** The W3C trace context the runtime's invoke store holds, forwarded as the same middleware forwards it. */
function invocationTraceContext(): Record<string, string> {
  const store = invokeStore();
  const traceparent = store?.getTraceparent?.();
  if (!traceparent) return {};
  const tracestate = store?.getTracestate?.();
  const baggage = store?.getBaggage?.();
  return { traceparent, ...(tracestate ? { tracestate } : {}), ...(baggage ? { baggage } : {}) };
}

interface InvokeStore {
  getXRayTraceId?(): string | undefined;
  getTraceparent?(): string | undefined;
  getTracestate?(): string | undefined;
  getBaggage?(): string | undefined;
}
/** The Lambda runtime's per-invocation store (`@aws/lambda-invoke-store`), where the runtime installs one. */
const invokeStore = () => (globalThis as { awslambda?: { InvokeStore?: InvokeStore } }).awslambda?.InvokeStore;

/** Waits out a retry's backoff, or less if the caller abandons the call. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** What a call's subsegment records of how it ended: its answer's or error's `$metadata`. */
function outcomeOf(ended: unknown): AwsCallOutcome | undefined {
  const metadata = (ended as { $metadata?: CallMetadata } | undefined)?.$metadata;
  if (!metadata) return undefined;
  const failed = ended instanceof AwsCallError;
  return {
    httpStatusCode: metadata.httpStatusCode,
    requestId: metadata.requestId,
    // X-Ray reads it from a response's headers, which the SDK's errors do not carry.
    contentLength: failed ? undefined : metadata.contentLength,
    attempts: metadata.attempts,
    throttled: failed && isThrottlingError(ended),
    output: failed ? undefined : (ended as object),
  };
}

/** JSON.stringify's replacer: a Uint8Array (a Buffer too, before its toJSON) as base64, the JSON protocols' blob. */
function blobsAsBase64(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  return original instanceof Uint8Array ? Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') : value;
}

/**
 * An attempt that got no answer: the connection failed (named by the socket's code, `ECONNRESET`) or
 * no answer came in time (`TimeoutError`). The SDK's classification reads both as transient.
 */
function unanswered(operation: string, failure: NodeJS.ErrnoException, metadata: CallMetadata): AwsCallError {
  const code = failure.code ?? 'NetworkingError';
  return new AwsCallError(code, `${operation}: ${failure.message}`, { metadata, fault: 'client', socketCode: failure.code });
}

function header(answer: Answer, name: string): string | undefined {
  const value = answer.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The error an answer of 300 or more stands for: its code from `X-Amzn-ErrorType` or `__type`, as the SDK reads it. */
function refusal(answer: Answer, metadata: CallMetadata): AwsCallError {
  let parsed: { __type?: string; message?: string; Message?: string } = {};
  try {
    parsed = answer.text ? JSON.parse(answer.text) : {};
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const raw = header(answer, 'x-amzn-errortype') ?? parsed.__type ?? `Http${answer.status}`;
  // `aws.protocoltests#Code:http://...` or `com.amazonaws.dynamodb.v20120810#Code`: the code alone.
  const code = raw.split(':')[0]!.split('#').pop()!;
  return new AwsCallError(code, parsed.message ?? parsed.Message ?? code, { metadata, fault: answer.status >= 500 ? 'server' : 'client' });
}

/** SHA-256 as the signer wants it (its `Checksum`), from node:crypto; the tests' stand-in checks signatures with it too. */
export class Sha256 {
  #hash: Hash | Hmac;
  readonly #secret: string | Uint8Array | undefined;
  constructor(secret?: SourceData) {
    this.#secret = secret === undefined ? undefined : bytes(secret);
    this.#hash = this.#fresh();
  }
  update(data: SourceData): void {
    this.#hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
  reset(): void {
    this.#hash = this.#fresh();
  }
  #fresh(): Hash | Hmac {
    return this.#secret === undefined ? createHash('sha256') : createHmac('sha256', this.#secret);
  }
}

type SourceData = string | ArrayBuffer | ArrayBufferView;
function bytes(data: SourceData): string | Uint8Array {
  if (typeof data === 'string') return data;
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
}

const signers = new Map<string, SignatureV4>();
/** One signer per service and region (it caches its signing keys by day); credentials read at each call from the environment. */
function signerFor(service: string, region: string, env: NodeJS.ProcessEnv): SignatureV4 {
  const credentials = async () => {
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) throw new Error('AWS credentials are not in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)');
    return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
  };
  const make = () => new SignatureV4({ service, region, credentials, sha256: Sha256, applyChecksum: false });
  if (env !== process.env) return make();
  const key = `${service} ${region}`;
  let signer = signers.get(key);
  if (!signer) signers.set(key, (signer = make()));
  return signer;
}

/** Connections kept open between calls, as the SDK's handler keeps them: a warm function skips TLS. */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function post(endpoint: URL, headers: Record<string, string>, body: string, timeoutMs: number, signal?: AbortSignal): Promise<Answer> {
  const secure = endpoint.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const call = (secure ? httpsRequest : httpRequest)(
      { method: 'POST', hostname: endpoint.hostname, port: endpoint.port || undefined, path: endpoint.pathname, headers, agent: secure ? agents.https : agents.http },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    // A deadline for the whole attempt (connecting, sending, the answer to its last byte), not only
    // for an idle socket: a half-open kept-alive connection after a freeze fails in time to be retried.
    const deadline = setTimeout(() => call.destroy(Object.assign(new Error(`no answer in ${timeoutMs} ms`), { code: 'TimeoutError' })), timeoutMs);
    const abandon = () => call.destroy(Object.assign(new Error('abandoned by its caller'), { code: 'AbortError' }));
    if (signal?.aborted) abandon();
    signal?.addEventListener('abort', abandon, { once: true });
    call.on('close', () => {
      clearTimeout(deadline);
      signal?.removeEventListener('abort', abandon);
    });
    call.on('error', reject);
    call.end(body);
  });
}
