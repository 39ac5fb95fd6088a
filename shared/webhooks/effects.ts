import type { EventCustomer, EventDispute, EventPayment, PlaybookEventType } from '../events/playbook-events';
import type { SyncedRecord } from '../store/items';
import type { NormalisedRecord } from '../sync/sync-source';

/**
 * What a platform event means for the gateway, worked out by the connector from the event alone
 * (shared/payment/webhook.ts, shared/billing/webhook.ts), then carried out by the event worker
 * (shared/webhooks/apply.ts). Pure data, so every platform event type can be tested without I/O.
 */

/** A record the event carries (or at least names, when its copy cannot be read). */
export interface RecordChange {
  /** The data object, in the connector's words (`customers`, `subscriptions`, `payments`...). */
  object: string;
  id: string;
  /** The record as the event carries it, normalised; absent when the copy could not be read: fetch it. */
  record?: NormalisedRecord;
  /** This change's place in the record's history (billing `resource_version`, payment event time). */
  version: number;
  /** The platform deleted the record. */
  deleted?: boolean;
}

/** A record the event refers to without carrying it (a subscription's customer): fetched if not stored. */
export interface RecordReference {
  object: string;
  id: string;
}

/** The event to publish for playbooks, with what the event itself says; the worker adds the customer. */
export interface PublishPlan {
  type: PlaybookEventType;
  /** Whose event: the customer id, or a stored record (a dispute's charge) whose `customerId` says. */
  customerId?: string;
  customerOf?: RecordReference;
  /** What the event says about the customer, used where no customer record is stored. */
  customerHint?: Partial<EventCustomer>;
  subscription?: NormalisedRecord['fields'];
  invoice?: NormalisedRecord['fields'];
  payment?: EventPayment;
  dispute?: EventDispute;
}

/** The body of a record the worker knows after applying the event (written, stored or fetched). */
export type KnownBody = (reference: RecordReference) => NormalisedRecord['fields'] | undefined;

/**
 * What to publish. The type follows from the event alone; the data comes from the event's own
 * copies, or, where the event's copy could not be read (cut to fit the queue, an unknown shape),
 * from the record the worker fetched instead. Undefined when neither has it.
 */
export interface Publication {
  type: PlaybookEventType;
  plan(known: KnownBody): PublishPlan | undefined;
}

export type WebhookEffects =
  | { kind: 'ignored'; reason: string }
  | {
      kind: 'apply';
      /** When the platform says it happened (epoch seconds). */
      occurredAt: number;
      changes: RecordChange[];
      references: RecordReference[];
      publish?: Publication;
    };

/**
 * What to do with a record copy of `version` given the stored one:
 * - `write`: new, or newer than what is stored;
 * - `stale`: what is stored is newer (an older event never overwrites newer data), or the same;
 * - `fetch`: cannot tell (the same version with other content: two changes within one second on
 *   the payment platform, or a sync's copy read in the same second), so ask the platform.
 *
 * A record a sync wrote without a version counts as of the time the sync wrote it (`syncedAt`,
 * converted by `versionAt` into the connector's version unit).
 */
export function writeDecision(
  stored: Pick<SyncedRecord, 'hash' | 'sourceVersion' | 'syncedAt' | 'deletedAt'> | undefined,
  incoming: { version: number; hash: string },
  versionAt: (epochMs: number) => number,
): 'write' | 'stale' | 'fetch' {
  if (!stored) return 'write';
  const storedVersion = stored.sourceVersion ?? (stored.syncedAt ? versionAt(Date.parse(stored.syncedAt)) : undefined);
  if (storedVersion === undefined || Number.isNaN(storedVersion)) return 'write';
  if (incoming.version > storedVersion) return 'write';
  if (incoming.version < storedVersion) return 'stale';
  return stored.hash === incoming.hash || stored.deletedAt !== undefined ? 'stale' : 'fetch';
}
