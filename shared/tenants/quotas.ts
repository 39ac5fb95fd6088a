import * as z from 'zod/mini';

/**
 * Per-account quotas: how much of the shared deployment one account may use, so that no tenant can
 * starve the others or run up the bill. Each rate is a token bucket kept in the table (one item per
 * account and kind, shared/store/rate-buckets.ts), in the same GCRA form as the connections' rate
 * budgets; a request over it is refused at once with 429 and `Retry-After`, never queued.
 *
 * The defaults are far above what a normal account does (a playbook answering a few hundred
 * customers a minute uses a few reads a second); an operator raises or lowers them per account
 * (PUT /api/v1/accounts/{accountId}, `quotas`).
 */

/** What each bucket counts: playbook reads, playbook sends, engagement events (one per event), manual sync starts. */
export const QuotaKind = z.enum(['reads', 'sends', 'events', 'syncs']);
export type QuotaKind = z.infer<typeof QuotaKind>;

// Named with `.register`, not a `z.meta` check: a check stays on the schemas derived from it (the refined `events`
// rate below, `z.required(AccountQuotas)`), which would then claim the same id.
export const QuotaRate = z
  .strictObject({
    ratePerSecond: z.number().check(z.positive(), z.maximum(10_000), z.describe('Sustained rate, per second (fractions allowed: 0.1 is one every 10 s)')),
    burst: z.number().check(z.int(), z.minimum(1), z.maximum(100_000), z.describe('How many may come back to back after a quiet spell')),
  })
  .register(z.globalRegistry, { id: 'QuotaRate' });
export type QuotaRate = z.infer<typeof QuotaRate>;

/** The largest engagement-event request (shared/data/routes.ts): an events burst below it would refuse every full request. */
const LARGEST_EVENT_REQUEST = 500;

/** The operator's settings for one account; anything left out is the default. */
export const AccountQuotas = z
  .strictObject({
    reads: z.optional(QuotaRate).check(z.describe('Playbook reads (every GET under /api/v1/playbook, and the data reads sent as POST)')),
    sends: z.optional(QuotaRate).check(z.describe('Playbook sends: conversations started, messages, hand-offs, ends')),
    events: z
      .optional(
        QuotaRate.check(
          z.refine((rate) => rate.burst >= LARGEST_EVENT_REQUEST, { message: `the events burst must hold one full request (${LARGEST_EVENT_REQUEST} events)` }),
        ),
      )
      .check(z.describe('Engagement events and playbook writes, counted one per event')),
    syncs: z.optional(QuotaRate).check(z.describe('Sync Now requests, and the first syncs Connect Account starts (manual syncs started)')),
    liveConversations: z
      .optional(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)))
      .check(z.describe("Live conversations at once (the poller fleet's share); never more than half the fleet holds, whatever is set")),
  })
  .register(z.globalRegistry, { id: 'AccountQuotas' });
export type AccountQuotas = z.infer<typeof AccountQuotas>;

export const DEFAULT_QUOTAS = {
  reads: { ratePerSecond: 50, burst: 200 },
  sends: { ratePerSecond: 20, burst: 100 },
  events: { ratePerSecond: 100, burst: 2_000 },
  syncs: { ratePerSecond: 0.2, burst: 10 },
  liveConversations: 1_000,
} as const satisfies Required<AccountQuotas>;

export type EffectiveQuotas = { [K in QuotaKind]: QuotaRate } & { liveConversations: number };

/** Pure: the account's settings over the defaults. */
export function effectiveQuotas(quotas: AccountQuotas | undefined): EffectiveQuotas {
  return { ...DEFAULT_QUOTAS, ...Object.fromEntries(Object.entries(quotas ?? {}).filter(([, value]) => value !== undefined)) } as EffectiveQuotas;
}

/** `tat`: where the bucket would stand after an allowed take (the pure decision says; the store need not). */
export type QuotaDecision = { allowed: true; tat?: number } | { allowed: false; retryAfterMs: number };

/**
 * Pure GCRA: with the bucket's rate spoken for up to `tat` (epoch ms), may `cost` more go at `now`?
 * Allowed when the new `tat` lies at most `burst` intervals ahead of now; otherwise refused, with
 * how long until it would be allowed. A cost above the burst is never allowed (the schema keeps
 * the events burst above the largest request).
 */
export function quotaDecision(tat: number, now: number, cost: number, rate: QuotaRate): QuotaDecision {
  const intervalMs = 1000 / rate.ratePerSecond;
  const next = Math.max(tat, now) + cost * intervalMs;
  const latest = now + rate.burst * intervalMs;
  if (next <= latest) return { allowed: true, tat: next };
  return { allowed: false, retryAfterMs: cost > rate.burst ? Number.POSITIVE_INFINITY : next - latest };
}

/** Pure: whole seconds for a `Retry-After` header (at least 1: a 0 invites an immediate retry storm). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Number.isFinite(retryAfterMs) ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 3600;
}

/** No account holds more than this share of what the poller fleet can hold, whatever is set. */
export const MAX_FLEET_SHARE = 0.5;

/**
 * Pure: the most live conversations an account may hold: its license cap (the connection's
 * setting), its quota, and its share of the fleet (`fleetCapacity`: what every poller together
 * holds), whichever is least. With two accounts at the ceiling the fleet is full and neither holds
 * more than half, so a quiet account always finds room beside a noisy one.
 */
export function liveConversationCeiling(licenseCap: number, quotas: AccountQuotas | undefined, fleetCapacity: number): number {
  return Math.max(1, Math.min(licenseCap, effectiveQuotas(quotas).liveConversations, Math.floor(fleetCapacity * MAX_FLEET_SHARE)));
}
