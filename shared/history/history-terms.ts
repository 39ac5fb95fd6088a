/**
 * The words of history that its writers need, without its schemas: every function records history
 * (a receiver counts its deliveries, a sync job its runs), but only the API reads it back, so the
 * zod schemas of history-schemas.ts are built where history is read (docs/cold-starts.md).
 */

/** How long history is kept (the items' TTL): sync runs and conversation days 30 days, delivery hours 7. */
export const HISTORY_DAYS = { syncRuns: 30, deliveries: 7, conversations: 30 } as const;

/** Why a webhook delivery was refused, in the words the dashboard shows (the schema: history-schemas.ts RefusalReason). */
export const REFUSAL_REASONS = ['signature', 'timestamp', 'unknown_account', 'credentials', 'other'] as const;
