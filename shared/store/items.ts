import * as z from 'zod';
import { AccountId, ConnectorName } from '../connectors';
import { SealedCredentials } from '../vault/sealed-credentials';
import { AccountQuotas } from '../tenants/quotas';

/**
 * The shapes of the items in the one table, without their keys (pk, sk, gsi1pk, gsi1sk): the
 * store adds the keys on write and strips them on read, so callers only ever see these.
 */

const Timestamp = z.iso.datetime({ offset: true });
/** Epoch seconds, the unit of the table's TTL attribute `expiresAt`. */
const EpochSeconds = z.number().int().nonnegative();
/** Connector-defined JSON (a sync cursor, a record body...): the store does not look inside. */
const JsonObject = z.record(z.string(), z.unknown());

/** Names of synced data objects (`customers`, `payment_intents`...): safe inside keys. */
export const DataObjectName = z.string().regex(/^[a-z][a-z0-9_]{0,62}$/, 'a data object name is lower-case letters, digits or underscores');

// Built on first use (z.lazy): every function that touches the table loads this module and parses only a few kinds of item.
export const Account = z.lazy(() =>
  z.object({
    accountId: AccountId,
    name: z.string(),
    /** Switched on by the operator; until then the dashboard has no Integrations section. */
    integrationsEnabled: z.boolean(),
    /** The operator's per-account quotas; left out, the defaults (shared/tenants/quotas.ts). */
    quotas: AccountQuotas.optional(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);
export type Account = z.infer<typeof Account>;

export const ConnectionHealth = z.lazy(() =>
  z.object({
    state: z.enum(['unknown', 'healthy', 'degraded', 'needs_reconnect']),
    checkedAt: Timestamp.optional(),
    /** What went wrong, with the platform's own message; never a secret. */
    reason: z.string().optional(),
    /** What the user can do about it (the spec's Errors table). */
    remedy: z.string().optional(),
  }),
);
export type ConnectionHealth = z.infer<typeof ConnectionHealth>;

export const Connection = z.lazy(() =>
  z.object({
    accountId: AccountId,
    connector: ConnectorName,
    /** Non-secret fields of the connection form (site name, login URL, username...). */
    config: JsonObject,
    credentials: SealedCredentials,
    /**
     * The webhook secret alone (the fields the connector's receiver verifies with), sealed apart under
     * {account, connector, purpose: webhook}: the receivers open this and nothing else.
     */
    webhookSecret: SealedCredentials.optional(),
    /** Each secret's masked form for display, e.g. `{ apiKey: '••••abcd' }`. */
    maskedSecrets: z.record(z.string(), z.string()),
    syncSettings: JsonObject,
    health: ConnectionHealth,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    /**
     * How many partition keys each data object's records are spread over, chosen when the
     * connection is created (shared/store/record-layout.ts). Absent on connections stored before
     * sharding: their records stay under the one key they were written under.
     */
    recordShards: z.number().int().positive().max(64).optional(),
    /** Optimistic concurrency: 0 for a connection not stored yet, then 1, 2, ... per write. */
    version: z.number().int().nonnegative(),
  }),
);
export type Connection = z.infer<typeof Connection>;

export const SyncCounts = z.lazy(() =>
  z.object({
    created: z.number().int().nonnegative(),
    updated: z.number().int().nonnegative(),
    unchanged: z.number().int().nonnegative(),
    deleted: z.number().int().nonnegative(),
  }),
);
export type SyncCounts = z.infer<typeof SyncCounts>;

/**
 * A sync failing on something time fixes (5xx, 429, timeouts): how many runs failed in a row since
 * when, and when the next try is (the retry schedule finds it through gsi1). Once the retry horizon
 * has passed, `deadLetteredAt` is set instead of a next try and the job goes to the dead-letter queue.
 */
export const SyncRetryState = z.lazy(() =>
  z.object({
    failures: z.number().int().positive(),
    firstFailedAt: Timestamp,
    nextAttemptAt: Timestamp.optional(),
    deadLetteredAt: Timestamp.optional(),
    /** The queue message that was dead-lettered: its redeliveries fail at once, so it reaches the dead-letter queue without calling the platform. */
    deadLetterMessageId: z.string().optional(),
  }),
);
export type SyncRetryState = z.infer<typeof SyncRetryState>;

/**
 * Where the sync of one data object of one connection stands. A run claims the checkpoint
 * (`runId` plus a lease) before paging; only the claiming run can write it until it finishes or
 * its lease lapses (a crashed run), so two runs never interleave their cursors.
 */
export const SyncCheckpoint = z.lazy(() =>
  z.object({
    accountId: AccountId,
    connector: ConnectorName,
    object: DataObjectName,
    /** The run that owns the checkpoint now; absent when no run is in progress. */
    runId: z.string().min(1).optional(),
    /** Until when the owning run's claim holds without a checkpoint write (epoch seconds). */
    leaseExpiresAt: EpochSeconds.optional(),
    mode: z.enum(['full', 'incremental']),
    /** Where the current run resumes after a crash (connector-defined); absent between runs. */
    cursor: JsonObject.optional(),
    /** Where the next incremental run starts from (connector-defined); absent until a full sync finished. */
    watermark: JsonObject.optional(),
    /** Counts of the current run, or of the last one between runs. */
    counts: SyncCounts,
    lastRunStartedAt: Timestamp.optional(),
    lastRunFinishedAt: Timestamp.optional(),
    lastSucceededAt: Timestamp.optional(),
    lastError: z.object({ message: z.string(), at: Timestamp }).optional(),
    /** Set while transient failures are being retried; cleared by a run that finishes. */
    retry: SyncRetryState.optional(),
    version: z.number().int().nonnegative(),
  }),
);
export type SyncCheckpoint = z.infer<typeof SyncCheckpoint>;

/** A record read from a platform, normalised; `hash` covers the fields the gateway keeps. */
export const SyncedRecord = z.object({
  accountId: AccountId,
  connector: ConnectorName,
  object: DataObjectName,
  id: z.string().min(1),
  hash: z.string().min(1),
  /** The platform's own ordering of versions (e.g. a resource version or event time), if it has one. */
  sourceVersion: z.number().optional(),
  updatedAt: Timestamp.optional(),
  body: JsonObject,
  email: z.string().optional(),
  /** For records that belong to a customer (subscriptions, invoices, payments): found through gsi1. */
  customerId: z.string().optional(),
  /** When the gateway last wrote this record (sync or webhook): how fresh a read is. */
  syncedAt: Timestamp.optional(),
  /** Set when the platform deleted the record; the item stays so an older event cannot revive it. */
  deletedAt: Timestamp.optional(),
});
export type SyncedRecord = z.infer<typeof SyncedRecord>;

/** What a caller hands the store to write; account, connector and object are given separately. */
export const RecordWrite = SyncedRecord.omit({ accountId: true, connector: true, object: true, deletedAt: true });
export type RecordWrite = z.infer<typeof RecordWrite>;

/**
 * Where the event worker stands with one platform event: `pending` while it is being applied (or
 * after an attempt failed), then `applied`, or `ignored` (an unknown event type, the sync method is
 * API Direct, the connection is gone). A redelivered event finding `applied` or `ignored` is skipped.
 */
export const WebhookEventState = z.enum(['pending', 'applied', 'ignored']);
export type WebhookEventState = z.infer<typeof WebhookEventState>;

export const WebhookEventMark = z.lazy(() =>
  z.object({
    accountId: AccountId,
    connector: ConnectorName,
    eventId: z.string().min(1),
    /** TTL: kept past the platform's retry horizon (3 days), then DynamoDB deletes it. */
    expiresAt: EpochSeconds,
    /** pending while a worker applies it; applied or ignored once done. */
    state: WebhookEventState.optional(),
    eventType: z.string().optional(),
    /** While `pending`: until when (epoch seconds) the worker that claimed it may still be applying it; 0 once released. */
    claimedUntil: EpochSeconds.optional(),
    /** How many times a worker claimed it. */
    attempts: z.number().int().nonnegative().optional(),
    /** Why it was ignored, or what the last failed attempt said (no secrets: redacted). */
    note: z.string().optional(),
    finishedAt: Timestamp.optional(),
  }),
);
export type WebhookEventMark = z.infer<typeof WebhookEventMark>;

export const ConversationState = z.enum(['starting', 'queued', 'active', 'ended', 'transcribed', 'failed']);
export type ConversationState = z.infer<typeof ConversationState>;

/** Why a conversation ended. `session_expired`: the platform answered 401 (spec: restart the conversation). */
export const ConversationEndReason = z.enum(['agent', 'end_user', 'system', 'playbook', 'session_expired', 'silent', 'failed']);
export type ConversationEndReason = z.infer<typeof ConversationEndReason>;

/** What became of the transcript once the conversation ended. */
export const TranscriptOutcome = z.lazy(() =>
  z.object({
    /** stored: kept by the gateway and written to the session field; field_missing / not_written: kept by the gateway only. */
    state: z.enum(['stored', 'field_missing', 'not_written', 'disabled']),
    at: Timestamp,
    /** The MessagingSession field it was (or should have been) written to. */
    field: z.string().optional(),
    reason: z.string().optional(),
    remedy: z.string().optional(),
  }),
);
export type TranscriptOutcome = z.infer<typeof TranscriptOutcome>;

export const Conversation = z.lazy(() =>
  z.object({
    accountId: AccountId,
    /** The gateway's id (time-ordered, so an account's conversations list newest first). */
    conversationId: z.string().min(1),
    /** The platform's conversationId from the start response. */
    platformConversationId: z.string().min(1).optional(),
    state: ConversationState,
    /** inbound: the end user started it; outbound: a proactive invitation (Activation). */
    direction: z.enum(['inbound', 'outbound']).optional(),
    /**
     * The platform instance's origin the conversation lives on (from the identity response at its
     * start; not a secret): pollers and sends reach it without opening the connection's credentials.
     */
    instanceUrl: z.url().optional(),
    /** The platform's session token (Messaging API: the end user's access token), sealed by the vault for this conversation only. */
    sessionToken: SealedCredentials.optional(),
    /** Which conversation transport it was started on (absent: the spec's long-poll); kept for its life whatever the settings say later. */
    transport: z.enum(['long_poll', 'messaging_api']).optional(),
    /** Legacy: poller shards are leases on live items now (shared/store/conversation-leases.ts). */
    pollerShard: z.number().int().nonnegative().optional(),
    /** The last message sequence delivered, passed back as `ack` so nothing is delivered twice. */
    ack: z.number().int().optional(),
    contactId: z.string().optional(),
    /** The end user's email when the playbook gave it (the data connector's engagement events need it). */
    endUserEmail: z.string().optional(),
    /** The lifecycle execution's task token, returned when the conversation ends. */
    taskToken: z.string().optional(),
    /** Set once the playbook handed the conversation to a human agent: automated replies are refused from then on. */
    handedOff: z.object({ at: Timestamp, queue: z.string() }).optional(),
    agentName: z.string().optional(),
    startedAt: Timestamp,
    updatedAt: Timestamp,
    endedAt: Timestamp.optional(),
    endReason: z.string().optional(),
    transcript: TranscriptOutcome.optional(),
    /** Optimistic concurrency, as for connections. */
    version: z.number().int().nonnegative(),
  }),
);
export type Conversation = z.infer<typeof Conversation>;

export const MessageType = z.enum(['text', 'media', 'system']);
export type MessageType = z.infer<typeof MessageType>;

export const Message = z.object({
  accountId: AccountId,
  conversationId: z.string().min(1),
  /** Position in the conversation, written once: the platform's sequence for received events. */
  sequence: z.number().int().nonnegative(),
  direction: z.enum(['inbound', 'outbound']),
  type: MessageType,
  text: z.string().optional(),
  /** Who wrote it: customer, agent, bot or system, as the platform says. */
  sender: z.string().optional(),
  platformMessageId: z.string().optional(),
  /** Type-specific details (media address, system event name...). */
  details: JsonObject.optional(),
  sentAt: Timestamp,
});
export type Message = z.infer<typeof Message>;

/** What a caller hands `appendMessage`; account, conversation and sequence are given separately. */
export const MessageWrite = Message.omit({ accountId: true, conversationId: true, sequence: true });
export type MessageWrite = z.infer<typeof MessageWrite>;

/**
 * A message the gateway sent into a conversation (a playbook's reply, or the end user's words it
 * relays). Keyed by the gateway's own time-ordered id; a playbook's `clientMessageId` makes a
 * retried send a no-op.
 */
export const SentMessage = z.lazy(() =>
  z.object({
    accountId: AccountId,
    conversationId: z.string().min(1),
    messageId: z.string().min(1),
    /** Claimed before the platform call, `sent` after it; a send that failed is removed. */
    status: z.enum(['sending', 'sent']),
    author: z.enum(['automated', 'end_user']),
    type: z.enum(['text', 'media']),
    text: z.string().optional(),
    details: JsonObject.optional(),
    platformMessageId: z.string().optional(),
    sentAt: Timestamp,
  }),
);
export type SentMessage = z.infer<typeof SentMessage>;

/** The assembled transcript, kept by the gateway whether or not the session field took it. */
export const StoredTranscript = z.lazy(() =>
  z.object({
    accountId: AccountId,
    conversationId: z.string().min(1),
    text: z.string(),
    entries: z.number().int().nonnegative(),
    assembledAt: Timestamp,
  }),
);
export type StoredTranscript = z.infer<typeof StoredTranscript>;

/**
 * A live conversation as the poller fleet sees it (a small item, across accounts): whose
 * long-poll lease it is, until when, and the last sequence delivered (`ack`).
 */
export const LiveConversation = z.lazy(() =>
  z.object({
    accountId: AccountId,
    conversationId: z.string().min(1),
    /** The last sequence persisted and published; -1 before the first. */
    ack: z.number().int().min(-1),
    /** Messaging API conversations: the id of the event at `ack`, sent as `Last-Event-Id` when the stream reopens. */
    lastEventId: z.string().min(1).optional(),
    /** The poller run holding the conversation's one long-poll. */
    leaseOwner: z.string().optional(),
    /** Hard bound of the lease (epoch ms): past it, anyone may claim, whatever the owner's heartbeat says. */
    leaseExpiresAt: z.number().int().optional(),
    /** When the lease was last released (epoch ms): the next claim measures the handover gap from it. */
    releasedAt: z.number().int().optional(),
    startedAt: z.number().int(),
  }),
);
export type LiveConversation = z.infer<typeof LiveConversation>;

/** A poller run's heartbeat: its leases hold while `until` is ahead. */
export const PollerRun = z.lazy(() =>
  z.object({
    runId: z.string().min(1),
    renewedAt: z.number().int(),
    until: z.number().int(),
    /**
     * The run ended at its round's end with every poll closed, and left its leases naming it (one
     * write for the run, not one per conversation): they are free to claim from then, after the
     * handover grace (epoch ms).
     */
    endedAt: z.number().int().optional(),
    /** The poller slot the run polled for (the next round's run of that slot adopts it first). */
    shard: z.number().int().min(0).optional(),
    /** Conversations whose leases it left naming it as it ended: the room an adopter needs. */
    held: z.number().int().min(0).optional(),
    /**
     * Who took the ended run's conversations (one conditional write, so only one ever does): a run
     * that adopted them all at once (its heartbeat now holds them), or `CLAIMED_ONE_BY_ONE` when no
     * run had room for them all and they are claimed lease by lease.
     */
    adoptedBy: z.string().min(1).optional(),
  }),
);
export type PollerRun = z.infer<typeof PollerRun>;

/** `PollerRun.adoptedBy` of an ended run no run adopted whole: its leases are claimed one by one. */
export const CLAIMED_ONE_BY_ONE = '*';

/** The poller fleet's own lease: one fleet execution at a time. */
export const FleetLease = z.lazy(() =>
  z.object({
    executionId: z.string().default(''),
    until: z.number().int().default(0),
    shards: z.number().int().nonnegative().default(0),
    /** Debounce fleet starts and surge requests (epoch ms). */
    startUntil: z.number().int().optional(),
    surgeUntil: z.number().int().optional(),
  }),
);
export type FleetLease = z.infer<typeof FleetLease>;

/**
 * An OAuth authorization in flight: single use, about 10 minutes. The table keys it by a hash of
 * its `state` (a table reader cannot finish someone's sign-in), and the secrets Connect Account
 * was given (client secret, PKCE verifier) stay sealed until the callback opens them.
 */
export const PendingAuthorization = z.lazy(() =>
  z.object({
    state: z.string().min(16),
    accountId: AccountId,
    connector: ConnectorName,
    /** The connection form's non-secret fields, stored with the connection once the browser returns. */
    config: JsonObject,
    /** Sealed for `{account, connector}`: the form's secrets and the PKCE `codeVerifier`. */
    credentials: SealedCredentials,
    /** The exact callback address sent to the platform; the code exchange must repeat it. */
    redirectUri: z.string().min(1),
    /** The hash of the cookie set in the browser that started the sign-in; the callback must bring it. */
    browserBinding: z.string().min(16),
    /** Epoch seconds; also the TTL attribute. */
    expiresAt: EpochSeconds,
    /** Where to send the browser back to in the dashboard afterwards. */
    returnTo: z.string().optional(),
  }),
);
export type PendingAuthorization = z.infer<typeof PendingAuthorization>;
