/**
 * X-Ray segments for the gateway's own work, without importing the X-Ray SDK here: the functions
 * that trace (shared/handler/traces.ts) activate Powertools Tracer in this module; in the others,
 * and outside Lambda, these calls cost a property read.
 */

/** The part of a Powertools Tracer this module uses. */
export interface ActiveTracer {
  captureAWSv3Client<T>(client: T): T;
  provider: {
    captureAsyncFunc(name: string, work: (subsegment?: SubsegmentLike) => unknown): unknown;
  };
}
export interface SubsegmentLike {
  addAnnotation(key: string, value: string | number | boolean): void;
  addError(error: Error | string, remote?: boolean): void;
  close(error?: Error | string | null): void;
}

let active: ActiveTracer | undefined;
/** Any AWS SDK v3 client (what X-Ray's capture needs: its middleware stack). */
interface AwsClient {
  middlewareStack: object;
  send(...args: never[]): unknown;
}
const awsClients = new Set<AwsClient>();
const captured = new WeakSet<AwsClient>();

function capture(client: AwsClient): void {
  if (!active || captured.has(client)) return;
  active.captureAWSv3Client(client);
  captured.add(client);
}

/** Marks an AWS SDK client for tracing: each of its calls becomes a subsegment once tracing is active. */
export function tracedAwsClient<T extends AwsClient>(client: T): T {
  awsClients.add(client);
  capture(client);
  return client;
}

/** Called by shared/handler/traces.ts when tracing is on (in Lambda, with active tracing). */
export function activateTracer(tracer: ActiveTracer | undefined): void {
  active = tracer;
  for (const client of awsClients) capture(client);
}

export function tracingActive(): boolean {
  return active !== undefined;
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
