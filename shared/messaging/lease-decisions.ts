import { createHash } from 'node:crypto';
import { CLAIMED_ONE_BY_ONE, type LiveConversation, type PollerRun as PollerRunItem } from '../store/items';
import { plannedPerPoller } from './fleet';

/** Pure decisions of the poller fleet: which slot prefers a conversation, who may take a lease, what a run adopts, when it asks for more. */

/** An account fills at most this share of a planned poller before its conversations spread over more slots. */
const ACCOUNT_SHARE_OF_POLLER = 0.25;

function hash32(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

/** Pure: over how many slots an account with `live` conversations spreads them. */
export function accountSpread(live: number, perPoller: number, shards: number): number {
  return Math.max(1, Math.min(Math.max(1, shards), Math.ceil(live / Math.max(1, perPoller * ACCOUNT_SHARE_OF_POLLER))));
}

/**
 * Pure: which poller slot prefers a conversation. An account's conversations share its home slot,
 * so a run taking them over unwraps the account's shared session-token key once rather than once
 * per conversation; an account with many spreads them by conversation over `spread` slots from its
 * home. Stable: a conversation's slot moves only when its account's spread does, so runs listing
 * at slightly different moments agree. A preference only: the leases decide who polls.
 */
export function preferredShard(accountId: string, conversationId: string, shards: number, spread: number): number {
  const slots = Math.max(1, shards);
  return (hash32(accountId) + (spread > 1 ? hash32(conversationId) % spread : 0)) % slots;
}

/** Pure: full-jitter backoff for the n-th consecutive failure. */
export function reconnectDelayMs(failures: number, random: () => number, baseMs = 500, capMs = 30_000): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** Math.min(failures - 1, 16)));
}

/**
 * Pure: whether a run may take over a conversation another run's lease names, from the heartbeat
 * item of the run holding it (`holder`: the lease's owner, or whoever adopted it: `leaseHolder`).
 * An ended run's conversations wait for one run to adopt them all (`adoptionPlan`); once they are
 * to be claimed one by one, each is free (`releasedAt` its end, for the handover grace). A live
 * holder's are free once its heartbeat lapsed; undefined while someone holds it.
 */
export function takeover(live: LiveConversation, holder: PollerRunItem | undefined, now: number, skewMs: number): { lapsedOwner?: string; releasedAt?: number } | undefined {
  if (!live.leaseOwner) return {};
  if (holder?.endedAt !== undefined) return holder.adoptedBy === CLAIMED_ONE_BY_ONE ? { lapsedOwner: live.leaseOwner, releasedAt: holder.endedAt } : undefined;
  return leaseLapsed(live, holder?.until, now, skewMs) ? { lapsedOwner: live.leaseOwner } : undefined;
}

/** Pure: the run that adopted an ended run's conversations whole, if one did: the next link of a lease's chain. */
export function adopterOf(run: PollerRunItem | undefined): string | undefined {
  return run?.endedAt !== undefined && run.adoptedBy !== undefined && run.adoptedBy !== CLAIMED_ONE_BY_ONE ? run.adoptedBy : undefined;
}

/** Longest chain of adoptions followed from a lease's owner (a conversation idle over that many rounds is renamed long before). */
export const MAX_ADOPTION_CHAIN = 16;

/**
 * Pure: which ended runs a run with `room` free places takes whole, and which it marks to be
 * claimed one by one. A run adopts only while it keeps `keepFree` places (the room the plan leaves
 * a poller for conversations started during its round), so no run adopts more than
 * `capacity - keepFree`: a run that ended fuller than that is spread over the slots again, lease by
 * lease, at once (nobody will adopt it). Otherwise its own slot's predecessor at once (the biggest
 * of the slot first: a surge run shares slot 0), one whose slot this round does not have at once,
 * another slot's only once that slot had `waitMs` to adopt it; one it may take but has no room for
 * goes lease by lease, its own slot's at once and others' after the wait. An ended item without a
 * count (written before adoption existed) goes lease by lease.
 */
export function adoptionPlan(input: { runs: readonly PollerRunItem[]; shard: number; shards: number; room: number; capacity: number; keepFree: number; now: number; waitMs: number }): {
  adopt: string[];
  oneByOne: string[];
  /** Of `oneByOne`, those small enough to adopt that this run has no room for: no other run can tell they will not be adopted. */
  noRoom: string[];
} {
  const waiting = input.runs
    .filter((run) => run.endedAt !== undefined && run.adoptedBy === undefined)
    .sort((a, b) => Number(b.shard === input.shard) - Number(a.shard === input.shard) || (b.held ?? 0) - (a.held ?? 0) || a.endedAt! - b.endedAt!);
  let room = input.room - input.keepFree;
  const adopt: string[] = [];
  const oneByOne: string[] = [];
  const noRoom: string[] = [];
  for (const run of waiting) {
    const held = run.held ?? Number.POSITIVE_INFINITY;
    if (held > input.capacity - input.keepFree) {
      oneByOne.push(run.runId);
      continue;
    }
    const due = run.shard === input.shard || run.shard === undefined || run.shard >= input.shards || input.now - run.endedAt! > input.waitMs;
    if (!due) continue;
    if (held <= room) {
      adopt.push(run.runId);
      room -= held;
    } else {
      oneByOne.push(run.runId);
      noRoom.push(run.runId);
    }
  }
  return { adopt, oneByOne, noRoom };
}

/** Pure: whether another run's lease on a conversation has lapsed, from its heartbeat. */
export function leaseLapsed(live: LiveConversation, ownerUntil: number | undefined, now: number, skewMs: number): boolean {
  if (!live.leaseOwner) return true;
  if (live.leaseExpiresAt !== undefined && live.leaseExpiresAt < now) return true;
  return ownerUntil === undefined || ownerUntil + skewMs < now;
}

/**
 * Pure: how long to wait before the first poll on a conversation another run released at
 * `releasedAt`. That run aborted its poll before releasing, but the platform may see the
 * connection close after a quick new poll arrives and answer it 409 (a second poll).
 */
export function handoverWaitMs(releasedAt: number | undefined, now: number, graceMs: number): number {
  return releasedAt === undefined ? 0 : Math.max(0, Math.min(graceMs, releasedAt + graceMs - now));
}

/**
 * Pure: of a batch of received notices, how many a run with `room` free places claims (side by
 * side); it gives the rest back at once so another poller takes them.
 */
export function noticesToClaim(received: number, room: number): number {
  return Math.max(0, Math.min(received, room));
}

/**
 * Pure: the room under which a run asks for a surge poller before it is full: half of what the plan
 * leaves free in a poller (12 at the default 230). A surge poller takes a second or more to start
 * and list, so one asked for only once a run is full comes after the burst's next conversations.
 */
export function surgeHeadroom(capacity: number): number {
  return Math.max(1, Math.ceil((capacity - plannedPerPoller(capacity)) / 2));
}

/**
 * Pure: whether a run that just took a batch of notices asks the fleet for a surge poller: when it
 * had to give some back (full), or when taking them brought its room under the headroom (once, as it
 * crosses it: a run hovering there asks again only when full).
 */
export function surgeWanted(notice: { roomBefore: number; roomAfter: number; gaveBack: number; capacity: number }): boolean {
  if (notice.gaveBack > 0) return true;
  const headroom = surgeHeadroom(notice.capacity);
  return notice.roomBefore >= headroom && notice.roomAfter < headroom;
}
