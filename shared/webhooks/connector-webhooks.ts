import type { HttpRequest } from '../api/http';
import type { ProblemError } from '../api/problem';
import type { PlatformClient } from '../http/platform-client';
import type { Connection } from '../store/items';
import type { SyncMethod } from '../sync/sync-settings';
import type { JsonObject } from '../sync/sync-source';
import type { Credentials } from '../vault/sealed-credentials';
import type { WebhookEffects } from './effects';
import type { EnvelopeReading } from './event-envelope';
import type { RecordFetcher } from './platform-records';

export interface VerifyContext {
  nowSeconds: number;
  toleranceSeconds: number;
}

/**
 * The receive side of a connector's webhooks: all a webhook receiver runs (check, verify, read the
 * envelope, fit for the queue), in a module of its own in the connector's folder
 * (`webhook-receiver.ts`), so a receiver's bundle holds nothing of the apply side.
 */
export interface WebhookReceiver {
  /** The spec's receiver address: `/webhooks/payments`. The account is a query parameter. */
  path: string;
  /**
   * How a delivery proves it comes from the platform, in the words the stack gives for the route's
   * having no API Gateway authorizer (a platform cannot present a JWT): "the HMAC-SHA256 signature...".
   */
  proof: string;

  // The receiver.
  /** The credential fields `verify` reads: sealed apart as the connection's webhook secret, all a receiver may open. */
  secretFields: readonly string[];
  /** Checks on the request alone, before any I/O: a missing signature header or Basic credentials. */
  precheck(request: HttpRequest): ProblemError | undefined;
  /** Whether the delivery comes from the platform, judged with THIS account's credentials only. */
  verify(request: HttpRequest, credentials: Credentials, context: VerifyContext): ProblemError | undefined;
  readEnvelope(body: unknown): EnvelopeReading;
  /**
   * The event as it may sit in a queue: without what must never wait there (a payment intent's
   * client secret), and, when `idsOnly`, with each record body cut to its id (too big for SQS).
   */
  forQueue(payload: Record<string, unknown>, idsOnly: boolean): Record<string, unknown>;
  /** The refusal's remedy when the receiver has no way to verify (what to set up on the connection). */
  unauthorizedRemedy?: string;
}

/**
 * A connector's webhooks, as the receiver (verify, enqueue), the event worker (apply) and the
 * dashboard's endpoint list use them. Each side is the connector's own logic; the shared flow
 * around it (shared/webhooks/receiver.ts and apply.ts) is the same for every platform.
 */
export interface ConnectorWebhooks extends WebhookReceiver {
  // The event worker.
  effects(payload: Record<string, unknown>): WebhookEffects;
  settings(syncSettings: unknown): {
    method: SyncMethod;
    dataObjects: readonly string[];
    /** Whether a record belongs in the store under the settings' filters, as the sync decides. */
    keeps(object: string, fields: JsonObject): boolean;
  };
  /** A time (epoch ms) in the unit of this platform's record versions. */
  versionAt(epochMs: number): number;
  /** Reads one record now, for events that name a record without carrying it. */
  fetcher(client: PlatformClient, nowMs: () => number): RecordFetcher;
  /**
   * For platforms whose deliveries are not signed (Basic credentials only): the platform's own copy
   * of the event, fetched by its id, or undefined when the platform does not know it. The worker
   * applies that copy, never the delivered body, so holding the credentials is not enough to
   * inject an event.
   */
  confirm?(client: PlatformClient, eventId: string): Promise<Record<string, unknown> | undefined>;

  // The dashboard's endpoint list.
  /** The platform events to select when creating the endpoint (the spec's Events table). */
  subscribeTo: readonly string[];
  /** Whether deliveries can be verified now, and what is missing; never a secret. */
  readiness(connection: Connection): { ready: boolean; notes: string[]; username?: string };
}
