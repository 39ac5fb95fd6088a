import type { ConversationDay, DeliveryHour, RecentRefusal, RefusalReason } from './history-schemas';
import { REFUSAL_REASONS } from './history-terms';

/**
 * The history's decisions, without I/O: which bucket a moment falls in, what a refusal was, how a
 * claim counts, the median of a histogram, and the series the dashboard draws (zeros included).
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The hour a moment falls in (its start, UTC, ISO). */
export function hourOf(ms: number): string {
  return new Date(Math.floor(ms / HOUR_MS) * HOUR_MS).toISOString();
}

/** The day a moment falls in (UTC, YYYY-MM-DD). */
export function dayOf(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

const PROBLEM = 'urn:integration-gateway:problem:';

/**
 * The reason a receiver's refusal is counted under, or undefined for an answer that refused
 * nothing the platform sent (503: the gateway could not queue it, and the platform retries).
 */
export function refusalReasonOf(problem: { type?: string; status?: number } | undefined): RefusalReason | undefined {
  if (!problem || (problem.status ?? 500) >= 500) return undefined;
  switch (problem.type) {
    case `${PROBLEM}webhook-signature`:
      return 'signature';
    case `${PROBLEM}webhook-signature-expired`:
      return 'timestamp';
    case `${PROBLEM}webhook-address`:
    case `${PROBLEM}webhook-unknown-account`:
      return 'unknown_account';
    case `${PROBLEM}webhook-unauthorized`:
      return 'credentials';
    default:
      return 'other';
  }
}

/**
 * How the event worker's claim of a verified delivery counts: a first claim is a new delivery; an
 * event already finished is a duplicate (verified all the same); a retry of a failed attempt or a
 * claim held by another worker is not a delivery (the platform sent nothing new).
 */
export function deliveryOfClaim(claim: { outcome: string; attempts?: number }): { verified: number; duplicates: number } | undefined {
  if (claim.outcome === 'finished') return { verified: 1, duplicates: 1 };
  if (claim.outcome === 'claimed' && claim.attempts === 1) return { verified: 1, duplicates: 0 };
  return undefined;
}

/**
 * The upper bounds (seconds) of the time-to-first-agent-message histogram: one counter each per
 * day, so a day's item stays small however many conversations it has; the last bucket is open.
 */
export const FIRST_AGENT_BUCKETS = [5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 450, 600, 900, 1200, 1800, 2700, 3600, 7200, 14_400, 28_800, 86_400] as const;

export function bucketOf(seconds: number): number {
  const index = FIRST_AGENT_BUCKETS.findIndex((bound) => seconds < bound);
  return index === -1 ? FIRST_AGENT_BUCKETS.length : index;
}

/** The median of a histogram (counts per bucket), interpolated inside its bucket; undefined when empty. */
export function medianOfHistogram(counts: readonly number[]): number | undefined {
  const total = counts.reduce((sum, n) => sum + n, 0);
  if (total === 0) return undefined;
  const half = total / 2;
  let below = 0;
  for (const [index, count] of counts.entries()) {
    if (count > 0 && below + count >= half) {
      const low = index === 0 ? 0 : FIRST_AGENT_BUCKETS[index - 1]!;
      const high = FIRST_AGENT_BUCKETS[index] ?? low;
      return Math.round(low + ((half - below) / count) * (high - low));
    }
    below += count;
  }
  return undefined;
}

/** Adds histograms bucket by bucket. */
export function addHistograms(histograms: ReadonlyArray<readonly number[]>): number[] {
  const sum = new Array<number>(FIRST_AGENT_BUCKETS.length + 1).fill(0);
  for (const histogram of histograms) histogram.forEach((n, i) => (sum[i] = (sum[i] ?? 0) + n));
  return sum;
}

const noRefusals = (): Record<RefusalReason, number> => Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, 0])) as Record<RefusalReason, number>;

/** Every hour from `sinceMs` to `nowMs`, oldest first: the stored hours, zeros for the rest. */
export function hourSeries(sinceMs: number, nowMs: number, stored: readonly DeliveryHour[]): DeliveryHour[] {
  const byHour = new Map(stored.map((hour) => [Date.parse(hour.hour), hour]));
  const series: DeliveryHour[] = [];
  for (let at = Date.parse(hourOf(sinceMs)); at <= nowMs; at += HOUR_MS) {
    series.push(byHour.get(at) ?? { hour: new Date(at).toISOString(), verified: 0, duplicates: 0, refused: noRefusals() });
  }
  return series;
}

/** Every day from `firstDay` to `lastDay`, oldest first: the stored days, zeros for the rest. */
export function daySeries(firstDay: string, lastDay: string, stored: readonly ConversationDay[]): ConversationDay[] {
  const byDay = new Map(stored.map((day) => [day.day, day]));
  const series: ConversationDay[] = [];
  for (let at = Date.parse(firstDay); at <= Date.parse(lastDay); at += DAY_MS) {
    const day = dayOf(at);
    series.push(byDay.get(day) ?? { day, started: 0, handedOff: 0, ended: 0, expired: 0, firstAgentMessages: 0 });
  }
  return series;
}

/** The latest refusals, newest first: per hour and reason, its latest time and how many there were. */
export function lastRefusals(hours: ReadonlyArray<DeliveryHour & { lastRefusedAt?: Partial<Record<RefusalReason, string>> }>, limit = 20): RecentRefusal[] {
  const refusals: RecentRefusal[] = [];
  for (const hour of hours) {
    for (const reason of REFUSAL_REASONS) {
      const at = hour.lastRefusedAt?.[reason];
      if (at && hour.refused[reason] > 0) refusals.push({ at, reason, count: hour.refused[reason] });
    }
  }
  return refusals.sort((a, b) => b.at.localeCompare(a.at)).slice(0, limit);
}

/** What one batch of conversation events adds to the day counters. */
export interface ConversationTally {
  accountId: string;
  day: string;
  started: number;
  handedOff: number;
  ended: number;
  expired: number;
}

/** Counts a batch of published conversation events per account and day (other event types count nothing). */
export function tallyConversationEvents(events: ReadonlyArray<{ type: string; accountId: string; occurredAt: string; data: Record<string, unknown> }>): ConversationTally[] {
  const tallies = new Map<string, ConversationTally>();
  for (const event of events) {
    const field =
      event.type === 'conversation.started' ? 'started'
      : event.type === 'conversation.handed_off' ? 'handedOff'
      : event.type === 'conversation.ended' ? (event.data.reason === 'session_expired' ? 'expired' : 'ended')
      : undefined;
    if (!field) continue;
    const day = dayOf(Date.parse(event.occurredAt));
    const key = `${event.accountId}\n${day}`;
    const tally = tallies.get(key) ?? { accountId: event.accountId, day, started: 0, handedOff: 0, ended: 0, expired: 0 };
    tally[field] += 1;
    tallies.set(key, tally);
  }
  return [...tallies.values()];
}

/** Seconds from the start to the first message an agent wrote (system events are not messages), or undefined. */
export function firstAgentMessageSeconds(startedAt: string, messages: ReadonlyArray<{ sender?: string; type: string; sentAt: string }>): number | undefined {
  const first = messages.find((message) => message.sender === 'agent' && message.type !== 'system');
  if (!first) return undefined;
  return Math.max(0, (Date.parse(first.sentAt) - Date.parse(startedAt)) / 1000);
}
