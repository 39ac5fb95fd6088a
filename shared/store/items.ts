import * as z from 'zod/mini';
import { AccountId, ConnectorName } from '../connectors';
import { SealedCredentials } from '../vault/sealed-credentials';
import { AccountQuotas } from '../tenants/quotas';

/**
 * The shapes of the items in the one table, without their keys (pk, sk, gsi1pk, gsi1sk): the
 * store adds the keys on write and strips them on read, so callers only ever see these.
 */

const Timestamp = z.iso.datetime({ offset: true });
/** Epoch seconds, the unit of the table's TTL attribute `expiresAt`. */
const EpochSeconds = z.number().check(z.int(), z.nonnegative());
/** Connector-defined JSON (a sync cursor, a record body...): the store does not look inside. */
const JsonObject = z.record(z.string(), z.unknown());

/** Names of synced data objects (`customers`, `payment_intents`...): safe inside keys. */
export const DataObjectName = z.string().check(z.regex(/^[a-z][a-z0-9_]{0,62}$/, 'a data object name is lower-case letters, digits or underscores'));

// Built on first use (z.lazy): every function that touches the table loads this module and parses only a few kinds of item.
export const Account = z.lazy(() =>
  z.object({
    accountId: AccountId,
    name: z.string(),
    /** Switched on by the operator; until then the dashboard has no Integrations section. */
    integrationsEnabled: z.boolean(),
    /** The operator's per-account quotas; left out, the defaults (shared/tenants/quotas.ts). */
    quotas: z.optional(AccountQuotas),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);
export type Account = z.infer<typeof Account>;

export const ConnectionHealth = z.lazy(() =>
  z.object({
    state: z.enum(['unknown', 'healthy', 'degraded', 'needs_reconnect']),
    checkedAt: z.optional(Timestamp),
    /** What went wrong, with the platform's own message; never a secret. */
    reason: z.optional(z.string()),
    /** What the user can do about it (the spec's Errors table). */
    remedy: z.optional(z.string()),
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
    webhookSecret: z.optional(SealedCredentials),
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
    recordShards: z.optional(z.number().check(z.int(), z.positive(), z.maximum(64))),
    /** Optimistic concurrency: 0 for a connection not stored yet, then 1, 2, ... per write. */
    version: z.number().check(z.int(), z.nonnegative()),
  }),
);
export type Connection = z.infer<typeof Connection>;

export const SyncCounts = z.lazy(() =>
  z.object({
    created: z.number().check(z.int(), z.nonnegative()),
    updated: z.number().check(z.int(), z.nonnegative()),
    unchanged: z.number().check(z.int(), z.nonnegative()),
    deleted: z.number().check(z.int(), z.nonnegative()),
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
    failures: z.number().check(z.int(), z.positive()),
    firstFailedAt: Timestamp,
    nextAttemptAt: z.optional(Timestamp),
    deadLetteredAt: z.optional(Timestamp),
    /** The queue message that was dead-lettered: its redeliveries fail at once, so it reaches the dead-letter queue without calling the platform. */
    deadLetterMessageId: z.optional(z.string()),
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
    runId: z.optional(z.string().check(z.minLength(1))),
    /** Until when the owning run's claim holds without a checkpoint write (epoch seconds). */
    leaseExpiresAt: z.optional(EpochSeconds),
    mode: z.enum(['full', 'incremental']),
    /** Where the current run resumes after a crash (connector-defined); absent between runs. */
    cursor: z.optional(JsonObject),
    /** Where the next incremental run starts from (connector-defined); absent until a full sync finished. */
    watermark: z.optional(JsonObject),
    /** Counts of the current run, or of the last one between runs. */
    counts: SyncCounts,
    lastRunStartedAt: z.optional(Timestamp),
    lastRunFinishedAt: z.optional(Timestamp),
    lastSucceededAt: z.optional(Timestamp),
    lastError: z.optional(z.object({ message: z.string(), at: Timestamp })),
    /** Set while transient failures are being retried; cleared by a run that finishes. */
    retry: z.optional(SyncRetryState),
    version: z.number().check(z.int(), z.nonnegative()),
  }),
);
export type SyncCheckpoint = z.infer<typeof SyncCheckpoint>;

/** A record read from a platform, normalised; `hash` covers the fields the gateway keeps. */
export const SyncedRecord = z.object({
  accountId: AccountId,
  connector: ConnectorName,
  object: DataObjectName,
  id: z.string().check(z.minLength(1)),
  hash: z.string().check(z.minLength(1)),
  /** The platform's own ordering of versions (e.g. a resource version or event time), if it has one. */
  sourceVersion: z.optional(z.number()),
  updatedAt: z.optional(Timestamp),
  body: JsonObject,
  email: z.optional(z.string()),
  /** For records that belong to a customer (subscriptions, invoices, payments): found through gsi1. */
  customerId: z.optional(z.string()),
  /** When the gateway last wrote this record (sync or webhook): how fresh a read is. */
  syncedAt: z.optional(Timestamp),
  /** Set when the platform deleted the record; the item stays so an older event cannot revive it. */
  deletedAt: z.optional(Timestamp),
});
export type SyncedRecord = z.infer<typeof SyncedRecord>;

/** What a caller hands the store to write; account, connector and object are given separately. */
export const RecordWrite = z.omit(SyncedRecord, { accountId: true, connector: true, object: true, deletedAt: true });
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
    eventId: z.string().check(z.minLength(1)),
    /** TTL: kept past the platform's retry horizon (3 days), then DynamoDB deletes it. */
    expiresAt: EpochSeconds,
    /** pending while a worker applies it; applied or ignored once done. */
    state: z.optional(WebhookEventState),
    eventType: z.optional(z.string()),
    /** While `pending`: until when (epoch seconds) the worker that claimed it may still be applying it; 0 once released. */
    claimedUntil: z.optional(EpochSeconds),
    /** How many times a worker claimed it. */
    attempts: z.optional(z.number().check(z.int(), z.nonnegative())),
    /** Why it was ignored, or what the last failed attempt said (no secrets: redacted). */
    note: z.optional(z.string()),
    finishedAt: z.optional(Timestamp),
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
    field: z.optional(z.string()),
    reason: z.optional(z.string()),
    remedy: z.optional(z.string()),
  }),
);
export type TranscriptOutcome = z.infer<typeof TranscriptOutcome>;

export const Conversation = z.lazy(() =>
  z.object({
    accountId: AccountId,
    /** The gateway's id (time-ordered, so an account's conversations list newest first). */
    conversationId: z.string().check(z.minLength(1)),
    /** The platform's conversationId from the start response. */
    platformConversationId: z.optional(z.string().check(z.minLength(1))),
    state: ConversationState,
    /** inbound: the end user started it; outbound: a proactive invitation (Activation). */
    direction: z.optional(z.enum(['inbound', 'outbound'])),
    /**
     * The platform instance's origin the conversation lives on (from the identity response at its
     * start; not a secret): pollers and sends reach it without opening the connection's credentials.
     */
    instanceUrl: z.optional(z.url()),
    /** The platform's session token (Messaging API: the end user's access token), sealed by the vault for this conversation only. */
    sessionToken: z.optional(SealedCredentials),
    /** Which conversation transport it was started on (absent: the spec's long-poll); kept for its life whatever the settings say later. */
    transport: z.optional(z.enum(['long_poll', 'messaging_api'])),
    /** Legacy: poller shards are leases on live items now (shared/store/conversation-leases.ts). */
    pollerShard: z.optional(z.number().check(z.int(), z.nonnegative())),
    /** The last message sequence delivered, passed back as `ack` so nothing is delivered twice. */
    ack: z.optional(z.number().check(z.int())),
    contactId: z.optional(z.string()),
    /** The end user's email when the playbook gave it (the data connector's engagement events need it). */
    endUserEmail: z.optional(z.string()),
    /** The lifecycle execution's task token, returned when the conversation ends. */
    taskToken: z.optional(z.string()),
    /** Set once the playbook handed the conversation to a human agent: automated replies are refused from then on. */
    handedOff: z.optional(z.object({ at: Timestamp, queue: z.string() })),
    agentName: z.optional(z.string()),
    startedAt: Timestamp,
    updatedAt: Timestamp,
    endedAt: z.optional(Timestamp),
    endReason: z.optional(z.string()),
    transcript: z.optional(TranscriptOutcome),
    /** Optimistic concurrency, as for connections. */
    version: z.number().check(z.int(), z.nonnegative()),
  }),
);
export type Conversation = z.infer<typeof Conversation>;

export const MessageType = z.enum(['text', 'media', 'system']);
export type MessageType = z.infer<typeof MessageType>;

export const Message = z.object({
  accountId: AccountId,
  conversationId: z.string().check(z.minLength(1)),
  /** Position in the conversation, written once: the platform's sequence for received events. */
  sequence: z.number().check(z.int(), z.nonnegative()),
  direction: z.enum(['inbound', 'outbound']),
  type: MessageType,
  text: z.optional(z.string()),
  /** Who wrote it: customer, agent, bot or system, as the platform says. */
  sender: z.optional(z.string()),
  platformMessageId: z.optional(z.string()),
  /** Type-specific details (media address, system event name...). */
  details: z.optional(JsonObject),
  sentAt: Timestamp,
});
export type Message = z.infer<typeof Message>;

/** What a caller hands `appendMessage`; account, conversation and sequence are given separately. */
export const MessageWrite = z.omit(Message, { accountId: true, conversationId: true, sequence: true });
export type MessageWrite = z.infer<typeof MessageWrite>;

/**
 * A message the gateway sent into a conversation (a playbook's reply, or the end user's words it
 * relays). Keyed by the gateway's own time-ordered id; a playbook's `clientMessageId` makes a
 * retried send a no-op.
 */
export const SentMessage = z.lazy(() =>
  z.object({
    accountId: AccountId,
    conversationId: z.string().check(z.minLength(1)),
    messageId: z.string().check(z.minLength(1)),
    /** Claimed before the platform call, `sent` after it; a send that failed is removed. */
    status: z.enum(['sending', 'sent']),
    author: z.enum(['automated', 'end_user']),
    type: z.enum(['text', 'media']),
    text: z.optional(z.string()),
    details: z.optional(JsonObject),
    platformMessageId: z.optional(z.string()),
    sentAt: Timestamp,
  }),
);
export type SentMessage = z.infer<typeof SentMessage>;

/** The assembled transcript, kept by the gateway whether or not the session field took it. */
export const StoredTranscript = z.lazy(() =>
  z.object({
    accountId: AccountId,
    conversationId: z.string().check(z.minLength(1)),
    text: z.string(),
    entries: z.number().check(z.int(), z.nonnegative()),
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
    conversationId: z.string().check(z.minLength(1)),
    /** The last sequence persisted and published; -1 before the first. */
    ack: z.number().check(z.int(), z.minimum(-1)),
    /** Messaging API conversations: the id of the event at `ack`, sent as `Last-Event-Id` when the stream reopens. */
    lastEventId: z.optional(z.string().check(z.minLength(1))),
    /** The poller run holding the conversation's one long-poll. */
    leaseOwner: z.optional(z.string()),
    /** Hard bound of the lease (epoch ms): past it, anyone may claim, whatever the owner's heartbeat says. */
    leaseExpiresAt: z.optional(z.number().check(z.int())),
    /** When the lease was last released (epoch ms): the next claim measures the handover gap from it. */
    releasedAt: z.optional(z.number().check(z.int())),
    startedAt: z.number().check(z.int()),
  }),
);
export type LiveConversation = z.infer<typeof LiveConversation>;

/** A poller run's heartbeat: its leases hold while `until` is ahead. */
export const PollerRun = z.lazy(() =>
  z.object({
    runId: z.string().check(z.minLength(1)),
    renewedAt: z.number().check(z.int()),
    until: z.number().check(z.int()),
    /**
     * The run ended at its round's end with every poll closed, and left its leases naming it (one
     * write for the run, not one per conversation): they are free to claim from then, after the
     * handover grace (epoch ms).
     */
    endedAt: z.optional(z.number().check(z.int())),
    /** The poller slot the run polled for (the next round's run of that slot adopts it first). */
    shard: z.optional(z.number().check(z.int(), z.minimum(0))),
    /** Conversations whose leases it left naming it as it ended: the room an adopter needs. */
    held: z.optional(z.number().check(z.int(), z.minimum(0))),
    /**
     * Who took the ended run's conversations (one conditional write, so only one ever does): a run
     * that adopted them all at once (its heartbeat now holds them), or `CLAIMED_ONE_BY_ONE` when no
     * run had room for them all and they are claimed lease by lease.
     */
    adoptedBy: z.optional(z.string().check(z.minLength(1))),
  }),
);
export type PollerRun = z.infer<typeof PollerRun>;

/** `PollerRun.adoptedBy` of an ended run no run adopted whole: its leases are claimed one by one. */
export const CLAIMED_ONE_BY_ONE = '*';

/** The poller fleet's own lease: one fleet execution at a time. */
export const FleetLease = z.lazy(() =>
  z.object({
    executionId: z._default(z.string(), ''),
    until: z._default(z.number().check(z.int()), 0),
    shards: z._default(z.number().check(z.int(), z.nonnegative()), 0),
    /** Debounce fleet starts and surge requests (epoch ms). */
    startUntil: z.optional(z.number().check(z.int())),
    surgeUntil: z.optional(z.number().check(z.int())),
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
    state: z.string().check(z.minLength(16)),
    accountId: AccountId,
    connector: ConnectorName,
    /** The connection form's non-secret fields, stored with the connection once the browser returns. */
    config: JsonObject,
    /** Sealed for `{account, connector}`: the form's secrets and the PKCE `codeVerifier`. */
    credentials: SealedCredentials,
    /** The exact callback address sent to the platform; the code exchange must repeat it. */
    redirectUri: z.string().check(z.minLength(1)),
    /** The hash of the cookie set in the browser that started the sign-in; the callback must bring it. */
    browserBinding: z.string().check(z.minLength(16)),
    /** Epoch seconds; also the TTL attribute. */
    expiresAt: EpochSeconds,
    /** Where to send the browser back to in the dashboard afterwards. */
    returnTo: z.optional(z.string()),
  }),
);
export type PendingAuthorization = z.infer<typeof PendingAuthorization>;
