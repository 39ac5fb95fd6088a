import * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import * as store from '../store/store';

/**
 * The poller fleet (lib/conversations.ts, the fleet state machine): each round, Plan sizes the
 * fleet to the live conversations and a Map runs one poller per shard for ~14 minutes; with none
 * live the fleet stops (idle cost: the restart schedule only). One fleet execution runs at a time
 * (a lease in the table), and a surge execution adds one poller mid-round when new conversations
 * find every poller full.
 */

/** Pollers running at once at most (the fleet state machine's Map concurrency, lib/conversations.ts). */
export const MAX_POLLER_SHARDS = 50;

/**
 * Live conversations per poller the plan aims for: 90% of capacity, so each poller has room for 10%
 * more started during its round (23 at the default 230) before a surge poller is asked for. Memory is
 * not the reason: capacity (POLLER_CAPACITY) is already what a 128 MB poller holds safely, and no path
 * (plan, notices, sweeps, surge) ever makes a run hold more than it.
 */
export const PLAN_FILL = 0.9;

/**
 * The share of a poller's memory its floor and held conversations may fill. The fifth left free
 * (25.6 MB of 128) is headroom for what is not resident at rest: the old generation growing between
 * major GCs (the young one is capped at 1 MB a semi-space: lib/bundling.ts leanRuntime) and a burst
 * of answers arriving together.
 */
export const POLLER_MEMORY_BUDGET = 0.8;

/**
 * Pure: how many conversations a poller of `memoryMb` holds within `budget` of its memory, given its
 * floor (the bundle's RSS once loaded, fetch included) and what each held conversation adds (RSS, KB).
 * `npm run bench -- conversations` measures both (poller_floor_rss_mb, memory_rss_kb_per_conversation).
 */
export function pollerCapacity(memory: { memoryMb: number; floorMb: number; perConversationKb: number; budget?: number }): number {
  const room = memory.memoryMb * (memory.budget ?? POLLER_MEMORY_BUDGET) - memory.floorMb;
  if (room <= 0 || memory.perConversationKb <= 0) return 0;
  return Math.floor((room * 1024) / memory.perConversationKb);
}

export const FleetPlanInput = z.object({
  executionId: z.string().check(z.minLength(1)),
  round: z.number().check(z.int(), z.minimum(1)),
  startedWith: z._default(z.looseObject({ handOverFrom: z.optional(z.string()) }), {}),
});

export const PollerInput = z.object({
  shard: z.number().check(z.int(), z.minimum(0)),
  shards: z.number().check(z.int(), z.minimum(1)),
  /** Epoch ms at which the run hands over. */
  endsAt: z.number().check(z.int()),
});
export type PollerInput = z.infer<typeof PollerInput>;

export interface FleetPlan {
  /** false: stop (nothing live, or another fleet execution holds the lease). */
  run: boolean;
  active: number;
  shards: PollerInput[];
}

/** Pure: how many conversations the plan gives each poller (whole conversations, at least one). */
export function plannedPerPoller(capacity: number): number {
  return Math.max(1, Math.floor(capacity * PLAN_FILL));
}

/** Pure: how many pollers for this many live conversations. */
export function shardCount(live: number, capacity: number, maxShards: number): number {
  if (live <= 0) return 0;
  return Math.min(maxShards, Math.max(1, Math.ceil(live / plannedPerPoller(capacity))));
}

/** How long the fleet's lease outlasts its round: a plan that lags still holds it. */
export const FLEET_LEASE_MARGIN_MS = 60_000;

/** A surge poller shorter than this is not worth starting: the next round takes its conversations. */
export const MIN_SURGE_MS = 5_000;

/**
 * Pure: when a surge poller asked for at `now` ends: with the running round (from the fleet's lease),
 * so the next plan counts and takes its conversations with the rest. Undefined when the round ends
 * within MIN_SURGE_MS: the next round is about to take them, and a surge outlasting the round would
 * hand them over only after the next round's runs had looked. With no round running, a whole run.
 */
export function surgeEndsAt(now: number, fleetUntil: number | undefined, runMs: number): number | undefined {
  if (fleetUntil === undefined || fleetUntil <= now) return now + runMs;
  const roundEnd = fleetUntil - FLEET_LEASE_MARGIN_MS;
  return roundEnd - now >= MIN_SURGE_MS ? roundEnd : undefined;
}

export async function planFleet(gateway: Gateway, input: z.infer<typeof FleetPlanInput>, options: { maxShards: number; log: Logger }): Promise<FleetPlan> {
  const env = gateway.env;
  const runMs = env.POLLER_RUN_SECONDS * 1000;
  let live = await store.countLiveConversations(gateway.table);
  // Only while something is live: an idle stack pays for no metric series.
  if (live > 0) recordMetric.liveConversations(live);
  if (live === 0) {
    // Stop, then look once more: a conversation started while the lease was still held finds the
    // fleet stopped and starts a new one, or is counted here.
    await store.releaseFleetLease(gateway.table, input.executionId);
    live = await store.countLiveConversations(gateway.table);
    if (live === 0) {
      options.log.info('poller fleet idle', { executionId: input.executionId });
      return { run: false, active: 0, shards: [] };
    }
  }
  const now = gateway.now();
  const shards = shardCount(live, env.POLLER_CAPACITY, options.maxShards);
  const lease = await store.claimFleetLease(gateway.table, {
    executionId: input.executionId,
    now,
    until: now + runMs + FLEET_LEASE_MARGIN_MS,
    shards,
    ...(input.startedWith.handOverFrom ? { handOverFrom: input.startedWith.handOverFrom } : {}),
  });
  if (!lease) {
    options.log.info('another poller fleet is running', { executionId: input.executionId });
    return { run: false, active: live, shards: [] };
  }
  const endsAt = now + runMs;
  options.log.info('poller fleet planned', { live, shards, round: input.round });
  return { run: true, active: live, shards: Array.from({ length: shards }, (_, shard) => ({ shard, shards, endsAt })) };
}
