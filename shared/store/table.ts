import { createHash } from 'node:crypto';

/**
 * Attempts the SDK makes for one DynamoDB request. Its default, 3 (about a second and a half for a
 * throttled request), suits a table that never refuses; a new on-demand table does under a first sync
 * (docs/first-sync.md, "The table's own pace"), and a checkpoint or rate-budget write refused three
 * times would fail the run. 8 ride out some tens of seconds of refusals (the SDK v2 retried DynamoDB
 * 10 times by default, for the same reason).
 */
export const STORE_MAX_ATTEMPTS = 8;

/**
 * The one table's shape, shared by the CDK stack (lib/storage.ts), the local runtime and the
 * tests, so every copy of the table has the same keys and index.
 *
 * Keys follow DESIGN.md: every partition key starts with the account (`ACCOUNT#<id>`), except
 * pending OAuth authorizations (`OAUTH#<hash of state>`), which are looked up by state alone, and
 * the poller fleet's items (`LIVE#<bucket>` lease items of live conversations, `FLEET`), which
 * serve every account; each of those names its account in the sort key.
 */
export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds; DynamoDB deletes the item some time after it passes. */
  timeToLiveAttribute: 'expiresAt',
  /**
   * One overloaded secondary index, used only where a read needs it:
   * customer by email (`ACCOUNT#a#EMAIL#<email>` → `<connector>#<object>#<id>`) and
   * active conversations by poller shard (`SHARD#<n>` → `ACCOUNT#a#CONVERSATION#<id>`), and
   * the operator's list of accounts (`ACCOUNTS` → `<account id>`), and sync retries by when
   * they are due (`SYNC_RETRY` → `<next try>#...`).
   */
  indexes: [{ name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' }],
} as const;

export const key = {
  account: (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT' }),
  connection: (accountId: string, connector: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `CONNECTION#${connector}` }),
  syncCheckpoint: (accountId: string, connector: string, object: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `SYNC#${connector}#${object}`,
  }),
  /**
   * A synced record: one data object's records under one key (connections stored before sharding,
   * `shard` absent), or spread over a few by a hash of the id (`#<shard>`, shared/store/record-layout.ts).
   */
  record: (accountId: string, connector: string, object: string, platformId: string, shard?: number) => ({
    pk: shard === undefined ? `ACCOUNT#${accountId}#${connector}#${object}` : `ACCOUNT#${accountId}#${connector}#${object}#${shard}`,
    sk: platformId,
  }),
  webhookEvent: (accountId: string, connector: string, eventId: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `EVENT#${connector}#${eventId}`,
  }),
  conversation: (accountId: string, conversationId: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `CONVERSATION#${conversationId}`,
  }),
  message: (accountId: string, conversationId: string, sequence: number) => ({
    pk: `ACCOUNT#${accountId}#CONVERSATION#${conversationId}`,
    // Zero-padded so the sort key orders messages numerically.
    sk: `MESSAGE#${String(sequence).padStart(12, '0')}`,
  }),
  /** By the state's hash: the state itself, a bearer of the sign-in in flight, is never stored. */
  oauthState: (state: string) => ({ pk: `OAUTH#${createHash('sha256').update(state).digest('base64url')}`, sk: 'OAUTH' }),
  /** The ids one page of a full sync saw (run = when the run started), for its deletion sweep. */
  seenPage: (accountId: string, connector: string, object: string, run: string, page: number) => ({
    pk: `ACCOUNT#${accountId}#SEEN#${connector}#${object}#${run}`,
    sk: `PAGE#${String(page).padStart(6, '0')}`,
  }),
  /** A connection's shared rate budget (shared/http/rate-budget.ts): every Lambda calling its platform draws from it. */
  rateBucket: (accountId: string, connector: string, endpoint?: string) => ({ pk: `ACCOUNT#${accountId}`, sk: endpoint === undefined ? `RATE#${connector}` : `RATE#${connector}#${endpoint}` }),
  /** An account's quota bucket (shared/tenants/quotas.ts): reads, sends, events or syncs. */
  quotaBucket: (accountId: string, kind: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `QUOTA#${kind}` }),
  /** A message the gateway sent, by its time-ordered id. */
  sentMessage: (accountId: string, conversationId: string, messageId: string) => ({
    pk: `ACCOUNT#${accountId}#CONVERSATION#${conversationId}`,
    sk: `SENT#${messageId}`,
  }),
  transcript: (accountId: string, conversationId: string) => ({ pk: `ACCOUNT#${accountId}#CONVERSATION#${conversationId}`, sk: 'TRANSCRIPT' }),
  /** How many of the account's conversations are live: the concurrent-conversation cap counts here. */
  liveCount: (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'CONVERSATIONS' }),
  /**
   * A live conversation's lease item, across accounts (the poller fleet serves them all), spread
   * over a few partitions by a hash of the id so that acks and claims do not crowd one key.
   */
  liveConversation: (accountId: string, conversationId: string) => ({
    pk: `LIVE#${liveBucketOf(conversationId)}`,
    sk: `ACCOUNT#${accountId}#CONVERSATION#${conversationId}`,
  }),
  liveBucket: (bucket: number) => ({ pk: `LIVE#${bucket}` }),
  /** A poller run's heartbeat. */
  pollerRun: (runId: string) => ({ pk: 'FLEET', sk: `POLLER#${runId}` }),
  fleet: () => ({ pk: 'FLEET', sk: 'FLEET' }),
  /** An event a connection holds until its schedule sends it (see shared/store/held-events.ts). */
  heldEvent: (accountId: string, connector: string, position: string) => ({ pk: `ACCOUNT#${accountId}#HELD#${connector}`, sk: position }),
  /** One hour's delivery counters of a connection's events. */
  deliveryHour: (accountId: string, connector: string, hour: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `DELIVERY#${connector}#${hour}` }),
  /** A playbook API key's hash (never the key). */
  apiKey: (accountId: string, keyId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `APIKEY#${keyId}` }),
} as const;

/** Keys of the secondary index `gsi1`, for the items that are found through it. */
export const indexKey = {
  /** A synced record found by its email address, across connectors, within one account. */
  recordByEmail: (accountId: string, email: string, connector: string, object: string, platformId: string) => ({
    gsi1pk: `ACCOUNT#${accountId}#EMAIL#${normaliseEmail(email)}`,
    gsi1sk: `${connector}#${object}#${platformId}`,
  }),
  emailLookup: (accountId: string, email: string) => ({ gsi1pk: `ACCOUNT#${accountId}#EMAIL#${normaliseEmail(email)}` }),
  /** A customer's subscriptions, invoices and payments on one connector. */
  recordByCustomer: (accountId: string, connector: string, customerId: string, object: string, platformId: string) => ({
    gsi1pk: `ACCOUNT#${accountId}#CUSTOMER#${connector}#${customerId}`,
    gsi1sk: `${object}#${platformId}`,
  }),
  customerLookup: (accountId: string, connector: string, customerId: string) => ({
    gsi1pk: `ACCOUNT#${accountId}#CUSTOMER#${connector}#${customerId}`,
  }),
  /** A live conversation, found by the poller shard that holds its long-poll. */
  conversationByShard: (shard: number, accountId: string, conversationId: string) => ({
    gsi1pk: `SHARD#${shard}`,
    gsi1sk: `ACCOUNT#${accountId}#CONVERSATION#${conversationId}`,
  }),
  shardLookup: (shard: number) => ({ gsi1pk: `SHARD#${shard}` }),
  /** A connection with scheduled API syncs, found by its frequency (hourly, daily, weekly). */
  connectionBySchedule: (frequency: string, accountId: string, connector: string) => ({
    gsi1pk: `SCHEDULE#${frequency}`,
    gsi1sk: `ACCOUNT#${accountId}#CONNECTION#${connector}`,
  }),
  scheduleLookup: (frequency: string) => ({ gsi1pk: `SCHEDULE#${frequency}` }),
  /** A sync checkpoint whose next retry is due at `nextAttemptAt` (ISO, so the sort key orders by time). */
  syncRetry: (nextAttemptAt: string, accountId: string, connector: string, object: string) => ({
    gsi1pk: 'SYNC_RETRY',
    gsi1sk: `${nextAttemptAt}#ACCOUNT#${accountId}#SYNC#${connector}#${object}`,
  }),
  syncRetryLookup: () => ({ gsi1pk: 'SYNC_RETRY' }),
  /** Every account, for the operator's list (one small partition: accounts are few and rarely written). */
  account: (accountId: string) => ({ gsi1pk: 'ACCOUNTS', gsi1sk: accountId }),
  accountsLookup: () => ({ gsi1pk: 'ACCOUNTS' }),
} as const;

/** Partitions of the live-conversation items. */
export const LIVE_BUCKETS = 16;

export function liveBucketOf(conversationId: string): number {
  return createHash('sha256').update(conversationId).digest().readUInt16BE(0) % LIVE_BUCKETS;
}

function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}
