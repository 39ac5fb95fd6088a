/**
 * The store: typed access to the one table, one module per concern, each function taking the table
 * first (`store.getAccount(gateway.table, accountId)`, with `import * as store from '../store/store'`).
 * Every function touches only the account's keys it is given (ids are checked so none can reach
 * outside them); the exceptions are named: pending OAuth authorizations (found by state alone), a
 * poller shard's live conversations, the dispatcher's scheduled connections, the retry schedule's
 * due retries and the operator's list of accounts.
 *
 * Conditional-write failures become answers (false, 'unchanged', undefined, VersionConflictError,
 * SyncRunLostError); every other DynamoDB error propagates.
 *
 * Functions, not one class's methods: esbuild drops the functions a Lambda's code never calls, where a
 * class keeps every method, so a webhook receiver carries accounts and connections, not the poller
 * fleet's leases or the synced records (docs/cold-starts.md).
 */
export * from './accounts';
export * from './api-keys';
export * from './connections';
export * from './conversation-leases';
export * from './conversations';
export * from './held-events';
export * from './pending-authorizations';
export * from './rate-buckets';
export * from './sync-checkpoints';
export * from './synced-records';
export * from './webhook-events';
export type { Table } from './table-access';
