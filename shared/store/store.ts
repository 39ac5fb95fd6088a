import type { ConnectorName } from '../connectors';
import type { ApiKeyRecord } from '../api-keys/api-key';
import * as accounts from './accounts';
import * as apiKeys from './api-keys';
import * as connections from './connections';
import * as conversationLeases from './conversation-leases';
import * as conversations from './conversations';
import type {
  Account,
  Connection,
  ConnectionHealth,
  Conversation,
  FleetLease,
  LiveConversation,
  Message,
  MessageWrite,
  PollerRun,
  SentMessage,
  StoredTranscript,
  PendingAuthorization,
  RecordWrite,
  SyncCheckpoint,
  SyncedRecord,
  WebhookEventMark,
} from './items';
import * as heldEvents from './held-events';
import { History } from '../history/history-store';
import * as pendingAuthorizations from './pending-authorizations';
import * as rateBuckets from './rate-buckets';
import type { RateBucketState, RateBuckets } from '../http/rate-budget';
import type { QuotaDecision, QuotaKind, QuotaRate } from '../tenants/quotas';
import * as syncCheckpoints from './sync-checkpoints';
import * as syncedRecords from './synced-records';
import type { Table } from './table-access';
import type { TableClient } from './table-client';
import * as webhookEvents from './webhook-events';

export { VersionConflictError } from './connections';
export { SyncRunLostError, type SyncClaim } from './sync-checkpoints';
export type { PacedWrites, RecordPace, RecordPage, RecordPlace, RecordWriteOutcome, StoredVersion } from './synced-records';
export type { ClaimRequest, WebhookEventClaim } from './webhook-events';
export type { DeliveryCounts, DeliveryHour, HeldEvent } from './held-events';
import type { RecordPlace, StoredVersion } from './synced-records';

/**
 * Typed access to the one table. Every method takes the account first and touches only that
 * account's keys (ids are checked so none can reach outside them); the exceptions are named:
 * pending OAuth authorizations (found by state alone), a poller shard's live conversations, the
 * dispatcher's scheduled connections, the retry schedule's due retries and the operator's list of accounts.
 *
 * Conditional-write failures become answers (false, 'unchanged', undefined, VersionConflictError,
 * SyncRunLostError); every other DynamoDB error propagates. The work is in one file per concern;
 * this class only binds them to the table.
 */
export class Store implements RateBuckets {
  readonly #table: Table;

  constructor(options: { client: TableClient; tableName: string }) {
    this.#table = { client: options.client, tableName: options.tableName };
  }

  /** Sync runs, webhook deliveries and conversations over time, for the dashboard (shared/history). */
  get history(): History {
    return (this.#history ??= new History(this.#table));
  }
  #history: History | undefined;

  // Accounts
  getAccount(accountId: string): Promise<Account | undefined> {
    return accounts.getAccount(this.#table, accountId);
  }
  putAccount(account: Account): Promise<void> {
    return accounts.putAccount(this.#table, account);
  }
  /** Across accounts, for operators only. */
  listAccounts(options: { limit: number; startAfter?: string }): Promise<{ accounts: Account[]; lastAccountId?: string }> {
    return accounts.listAccounts(this.#table, options);
  }
  setIntegrationsEnabled(accountId: string, enabled: boolean, at?: Date): Promise<Account | undefined> {
    return accounts.setIntegrationsEnabled(this.#table, accountId, enabled, at);
  }

  // Playbook API keys (hashes only)
  putApiKey(record: ApiKeyRecord): Promise<void> {
    return apiKeys.putApiKey(this.#table, record);
  }
  getApiKey(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    return apiKeys.getApiKey(this.#table, accountId, keyId);
  }
  listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return apiKeys.listApiKeys(this.#table, accountId);
  }
  deleteApiKey(accountId: string, keyId: string): Promise<boolean> {
    return apiKeys.deleteApiKey(this.#table, accountId, keyId);
  }

  // Connections
  /** Across accounts, for the sync dispatcher only. */
  listScheduledConnections(frequency: string): Promise<Connection[]> {
    return connections.listScheduledConnections(this.#table, frequency);
  }
  getConnection(accountId: string, connector: ConnectorName): Promise<Connection | undefined> {
    return connections.getConnection(this.#table, accountId, connector);
  }
  putConnection(connection: Connection): Promise<number> {
    return connections.putConnection(this.#table, connection);
  }
  deleteConnection(accountId: string, connector: ConnectorName): Promise<boolean> {
    return connections.deleteConnection(this.#table, accountId, connector);
  }
  listConnections(accountId: string): Promise<Connection[]> {
    return connections.listConnections(this.#table, accountId);
  }
  updateConnectionHealth(accountId: string, connector: ConnectorName, health: ConnectionHealth): Promise<boolean> {
    return connections.updateConnectionHealth(this.#table, accountId, connector, health);
  }

  // Connections' shared rate budgets (one bucket per connection, for every Lambda that calls its platform)
  reserveRate(key: string, spanMs: number, now: number): Promise<{ start: number; state: RateBucketState }> {
    return rateBuckets.reserveRate(this.#table, key, spanMs, now);
  }
  slowRate(key: string, change: { rate: number; now: number; unlessSlowedSince: number; pausedUntil?: number }): Promise<RateBucketState> {
    return rateBuckets.slowRate(this.#table, key, change);
  }
  getRateBucket(key: string): Promise<RateBucketState | undefined> {
    return rateBuckets.getRateBucket(this.#table, key);
  }
  /** An account's quota (shared/tenants/quotas.ts): takes `cost`, or refuses with how long to wait. */
  takeQuota(accountId: string, kind: QuotaKind, cost: number, rate: QuotaRate, now: number): Promise<QuotaDecision> {
    return rateBuckets.takeQuota(this.#table, accountId, kind, cost, rate, now);
  }

  // Sync checkpoints
  getSyncCheckpoint(accountId: string, connector: ConnectorName, object: string): Promise<SyncCheckpoint | undefined> {
    return syncCheckpoints.getSyncCheckpoint(this.#table, accountId, connector, object);
  }
  startSyncRun(
    accountId: string,
    connector: ConnectorName,
    object: string,
    claim: syncCheckpoints.SyncClaim,
    read?: { current: SyncCheckpoint | undefined },
  ): Promise<SyncCheckpoint | undefined> {
    return syncCheckpoints.startSyncRun(this.#table, accountId, connector, object, claim, read);
  }
  /** Across accounts, for the retry schedule only. */
  listDueSyncRetries(now: Date): Promise<SyncCheckpoint[]> {
    return syncCheckpoints.listDueSyncRetries(this.#table, now);
  }
  putSyncCheckpoint(checkpoint: SyncCheckpoint, lease: { now: Date; leaseSeconds: number }): Promise<SyncCheckpoint> {
    return syncCheckpoints.putSyncCheckpoint(this.#table, checkpoint, lease);
  }
  finishSyncRun(checkpoint: SyncCheckpoint): Promise<SyncCheckpoint> {
    return syncCheckpoints.finishSyncRun(this.#table, checkpoint);
  }
  pauseSyncRun(checkpoint: SyncCheckpoint): Promise<SyncCheckpoint> {
    return syncCheckpoints.pauseSyncRun(this.#table, checkpoint);
  }
  putSeenPages(scope: { accountId: string; connector: ConnectorName; object: string; run: string }, pages: ReadonlyArray<{ page: number; ids: readonly string[] }>, expiresAt: number): Promise<void> {
    return syncCheckpoints.putSeenPages(this.#table, scope, pages, expiresAt);
  }
  seenAmong(scope: { accountId: string; connector: ConnectorName; object: string; run: string }, candidates: ReadonlySet<string>): Promise<Set<string>> {
    return syncCheckpoints.seenAmong(this.#table, scope, candidates);
  }
  deleteSyncCheckpoints(accountId: string, connector: ConnectorName): Promise<number> {
    return syncCheckpoints.deleteSyncCheckpoints(this.#table, accountId, connector);
  }
  deleteRecords(accountId: string, connector: ConnectorName, object: string, limit?: number): Promise<number> {
    return syncedRecords.deleteRecords(this.#table, accountId, connector, object, limit);
  }
  listSyncCheckpoints(accountId: string): Promise<SyncCheckpoint[]> {
    return syncCheckpoints.listSyncCheckpoints(this.#table, accountId);
  }

  // Synced records: each method takes the record's place, the connection's layout included (shared/store/record-layout.ts).
  putRecordIfChanged(place: RecordPlace, record: RecordWrite): Promise<syncedRecords.RecordWriteOutcome> {
    return syncedRecords.putRecordIfChanged(this.#table, place, record);
  }
  putRecordsBatch(place: RecordPlace, records: readonly RecordWrite[], options?: { concurrency?: number } & syncedRecords.PacedWrites): Promise<void> {
    return syncedRecords.putRecordsBatch(this.#table, place, records, options);
  }
  putRecordsIfChanged(
    place: RecordPlace,
    records: readonly RecordWrite[],
    options?: { concurrency?: number; knownNew?: ReadonlySet<string> } & syncedRecords.PacedWrites,
  ): Promise<syncedRecords.RecordWriteOutcome[]> {
    return syncedRecords.putRecordsIfChanged(this.#table, place, records, options);
  }
  putRecordIfNewer(place: RecordPlace, record: RecordWrite & { sourceVersion: number }): Promise<'created' | 'updated' | 'stale'> {
    return syncedRecords.putRecordIfNewer(this.#table, place, record);
  }
  getRecord(place: RecordPlace, id: string): Promise<SyncedRecord | undefined> {
    return syncedRecords.getRecord(this.#table, place, id);
  }
  listRecords(place: RecordPlace, options?: { limit?: number; startKey?: string; includeDeleted?: boolean }): Promise<syncedRecords.RecordPage> {
    return syncedRecords.listRecords(this.#table, place, options);
  }
  listRecordIds(place: RecordPlace, options?: { limit?: number; startKey?: string }): Promise<{ ids: string[]; nextStartKey?: string }> {
    return syncedRecords.listRecordIds(this.#table, place, options);
  }
  listStoredVersions(place: RecordPlace, options?: { limit?: number; startKey?: string; shard?: number }): Promise<{ versions: Array<[string, StoredVersion]>; nextStartKey?: string }> {
    return syncedRecords.listStoredVersions(this.#table, place, options);
  }
  /** Whether records of an earlier connection remain under the single key of connections stored before sharding. */
  hasLegacyRecords(accountId: string, connector: ConnectorName, objects: readonly string[]): Promise<boolean> {
    return syncedRecords.hasLegacyRecords(this.#table, accountId, connector, objects);
  }
  findRecordsByEmail(accountId: string, email: string, options?: { includeDeleted?: boolean }): Promise<SyncedRecord[]> {
    return syncedRecords.findRecordsByEmail(this.#table, accountId, email, options);
  }
  findRecordsByCustomer(
    accountId: string,
    connector: ConnectorName,
    customerId: string,
    options?: { object?: string; includeDeleted?: boolean },
  ): Promise<SyncedRecord[]> {
    return syncedRecords.findRecordsByCustomer(this.#table, accountId, connector, customerId, options);
  }
  getStoredVersions(place: RecordPlace, ids: readonly string[]): Promise<Map<string, StoredVersion>> {
    return syncedRecords.getStoredVersions(this.#table, place, ids);
  }
  markRecordDeleted(place: RecordPlace, id: string, deletion: { deletedAt: Date; sourceVersion?: number; syncedBefore?: Date }): Promise<boolean> {
    return syncedRecords.markRecordDeleted(this.#table, place, id, deletion);
  }

  // Webhook dedupe
  /** The event worker's exactly-once claim: see shared/store/webhook-events.ts. */
  claimWebhookEvent(claim: webhookEvents.ClaimRequest): Promise<webhookEvents.WebhookEventClaim> {
    return webhookEvents.claimWebhookEvent(this.#table, claim);
  }
  finishWebhookEvent(
    event: { accountId: string; connector: ConnectorName; eventId: string },
    outcome: { state: 'applied' | 'ignored'; note?: string; at: Date },
  ): Promise<void> {
    return webhookEvents.finishWebhookEvent(this.#table, event, outcome);
  }
  releaseWebhookEvent(event: { accountId: string; connector: ConnectorName; eventId: string }, note: string): Promise<void> {
    return webhookEvents.releaseWebhookEvent(this.#table, event, note);
  }
  getWebhookEventMark(accountId: string, connector: ConnectorName, eventId: string): Promise<WebhookEventMark | undefined> {
    return webhookEvents.getWebhookEventMark(this.#table, accountId, connector, eventId);
  }

  // Conversations and messages
  putConversation(conversation: Conversation): Promise<number> {
    return conversations.putConversation(this.#table, conversation);
  }
  getConversation(accountId: string, conversationId: string): Promise<Conversation | undefined> {
    return conversations.getConversation(this.#table, accountId, conversationId);
  }
  getConversations(keys: ReadonlyArray<{ accountId: string; conversationId: string }>): Promise<Map<string, Conversation>> {
    return conversations.getConversations(this.#table, keys);
  }
  updateConversation(accountId: string, conversationId: string, change: conversations.ConversationChange): Promise<Conversation | undefined> {
    return conversations.updateConversation(this.#table, accountId, conversationId, change);
  }
  listConversations(accountId: string, options?: { limit?: number; startKey?: string }): Promise<conversations.ConversationPage> {
    return conversations.listConversations(this.#table, accountId, options);
  }
  appendMessage(accountId: string, conversationId: string, sequence: number, message: MessageWrite): Promise<boolean> {
    return conversations.appendMessage(this.#table, accountId, conversationId, sequence, message);
  }
  listMessages(accountId: string, conversationId: string): Promise<Message[]> {
    return conversations.listMessages(this.#table, accountId, conversationId);
  }
  claimSentMessage(message: SentMessage): Promise<boolean> {
    return conversations.claimSentMessage(this.#table, message);
  }
  putSentMessage(message: SentMessage): Promise<void> {
    return conversations.putSentMessage(this.#table, message);
  }
  getSentMessage(accountId: string, conversationId: string, messageId: string): Promise<SentMessage | undefined> {
    return conversations.getSentMessage(this.#table, accountId, conversationId, messageId);
  }
  deleteSentMessage(accountId: string, conversationId: string, messageId: string): Promise<void> {
    return conversations.deleteSentMessage(this.#table, accountId, conversationId, messageId);
  }
  listSentMessages(accountId: string, conversationId: string): Promise<SentMessage[]> {
    return conversations.listSentMessages(this.#table, accountId, conversationId);
  }
  putTranscript(transcript: StoredTranscript): Promise<void> {
    return conversations.putTranscript(this.#table, transcript);
  }
  getTranscript(accountId: string, conversationId: string): Promise<StoredTranscript | undefined> {
    return conversations.getTranscript(this.#table, accountId, conversationId);
  }
  reserveLiveSlot(accountId: string, cap: number): Promise<boolean> {
    return conversations.reserveLiveSlot(this.#table, accountId, cap);
  }
  releaseLiveSlot(accountId: string): Promise<void> {
    return conversations.releaseLiveSlot(this.#table, accountId);
  }
  recountLiveSlots(accountId: string): Promise<number> {
    return conversations.recountLiveSlots(this.#table, accountId);
  }

  // The poller fleet: live conversations' leases (across accounts), poller heartbeats, the fleet's lease
  putLiveConversation(live: LiveConversation): Promise<boolean> {
    return conversationLeases.putLiveConversation(this.#table, live);
  }
  getLiveConversation(accountId: string, conversationId: string): Promise<LiveConversation | undefined> {
    return conversationLeases.getLiveConversation(this.#table, accountId, conversationId);
  }
  deleteLiveConversation(accountId: string, conversationId: string): Promise<void> {
    return conversationLeases.deleteLiveConversation(this.#table, accountId, conversationId);
  }
  listLiveConversations(): Promise<LiveConversation[]> {
    return conversationLeases.listLiveConversations(this.#table);
  }
  countLiveConversations(): Promise<number> {
    return conversationLeases.countLiveConversations(this.#table);
  }
  claimConversationLease(accountId: string, conversationId: string, claim: conversationLeases.LeaseClaim): Promise<LiveConversation | undefined> {
    return conversationLeases.claimConversationLease(this.#table, accountId, conversationId, claim);
  }
  releaseConversationLease(accountId: string, conversationId: string, owner: string, at: number): Promise<boolean> {
    return conversationLeases.releaseConversationLease(this.#table, accountId, conversationId, owner, at);
  }
  advanceAck(accountId: string, conversationId: string, owner: string, ack: number, eventId?: string): Promise<boolean> {
    return conversationLeases.advanceAck(this.#table, accountId, conversationId, owner, ack, eventId);
  }
  beatPollerRun(run: PollerRun): Promise<void> {
    return conversationLeases.beatPollerRun(this.#table, run);
  }
  listPollerRuns(): Promise<PollerRun[]> {
    return conversationLeases.listPollerRuns(this.#table);
  }
  getPollerRun(runId: string): Promise<PollerRun | undefined> {
    return conversationLeases.getPollerRun(this.#table, runId);
  }
  markPollerRunEnded(runId: string, endedAt: number, handedOver?: { shard?: number; held?: number }): Promise<void> {
    return conversationLeases.markPollerRunEnded(this.#table, runId, endedAt, handedOver);
  }
  adoptPollerRun(runId: string, by: string): Promise<boolean> {
    return conversationLeases.adoptPollerRun(this.#table, runId, by);
  }
  endPollerRun(runId: string): Promise<void> {
    return conversationLeases.endPollerRun(this.#table, runId);
  }
  getFleetLease(): Promise<FleetLease | undefined> {
    return conversationLeases.getFleetLease(this.#table);
  }
  claimFleetLease(claim: { executionId: string; now: number; until: number; shards: number; handOverFrom?: string }): Promise<FleetLease | undefined> {
    return conversationLeases.claimFleetLease(this.#table, claim);
  }
  releaseFleetLease(executionId: string): Promise<boolean> {
    return conversationLeases.releaseFleetLease(this.#table, executionId);
  }
  takeFleetTurn(kind: 'start' | 'surge', now: number, windowMs: number): Promise<boolean> {
    return conversationLeases.takeFleetTurn(this.#table, kind, now, windowMs);
  }

  // Events held for a schedule, and delivery counters
  holdEvents(accountId: string, connector: ConnectorName, events: readonly Record<string, unknown>[], acceptedAtMs: number, batch: string): Promise<void> {
    return heldEvents.holdEvents(this.#table, accountId, connector, events, acceptedAtMs, batch);
  }
  listHeldEvents(accountId: string, connector: ConnectorName, limit: number): Promise<heldEvents.HeldEvent[]> {
    return heldEvents.listHeldEvents(this.#table, accountId, connector, limit);
  }
  releaseHeldEvents(accountId: string, connector: ConnectorName, positions: readonly string[]): Promise<void> {
    return heldEvents.releaseHeldEvents(this.#table, accountId, connector, positions);
  }
  countHeldEvents(accountId: string, connector: ConnectorName): Promise<number> {
    return heldEvents.countHeldEvents(this.#table, accountId, connector);
  }
  addDeliveryCounts(accountId: string, connector: ConnectorName, atMs: number, counts: heldEvents.DeliveryCounts): Promise<void> {
    return heldEvents.addDeliveryCounts(this.#table, accountId, connector, atMs, counts);
  }
  listDeliveryCounts(accountId: string, connector: ConnectorName, sinceMs: number): Promise<heldEvents.DeliveryHour[]> {
    return heldEvents.listDeliveryCounts(this.#table, accountId, connector, sinceMs);
  }

  // Pending OAuth authorizations
  putPendingAuthorization(pending: PendingAuthorization): Promise<void> {
    return pendingAuthorizations.putPendingAuthorization(this.#table, pending);
  }
  takePendingAuthorization(state: string, now: Date, options?: { connector?: string }): Promise<PendingAuthorization | undefined> {
    return pendingAuthorizations.takePendingAuthorization(this.#table, state, now, options);
  }
}
