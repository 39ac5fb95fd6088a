import { createHash, randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import type { Logger } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import { CLAIMED_ONE_BY_ONE, type Conversation, type LiveConversation, type MessageWrite, type PollerRun as PollerRunItem } from '../store/items';
import type { ConversationSession, PolledEvent, PollAnswer } from './conversation-api';
import { conversationEvent, publishConversationEvents } from './conversation-events';
import { conversationSession, finishConversation, isLive, messagingInstanceUrl, messagingSettings } from './conversations';
import { plannedPerPoller } from './fleet';
import { keepsMessageType, type MessagingSettings } from './settings';

/**
 * One poller run: holds the long-polls of up to `capacity` live conversations for up to ~14
 * minutes, then hands them over. The spec's long-poll rules, per conversation:
 * 1-3. `GET .../messages?ack=<last sequence>&timeout=30`, reopened at once after each answer;
 *   a 200's events are persisted (a conditional write per sequence), published, then acknowledged;
 *   a 204 reopens with the same ack;
 * 4. exactly one poll per conversation: the conversation's lease item names this run, and the run
 *   renews all its leases with one heartbeat; it stops polling (fences itself) before a lease it
 *   could not renew may be taken, and as it ends closes every poll and hands every lease over at
 *   once (its heartbeat item marked ended: one write, not a release each);
 * 5. network faults and 503 reconnect with jittered backoff; 401 ends the conversation as expired
 *   (restart it); 409 means a second poll was open, a bug, counted.
 */

export interface PollerRunOptions {
  gateway: Gateway;
  log: Logger;
  /** This poller slot, of `shards`: it claims conversations whose hash falls in its slot first. */
  shard: number;
  shards: number;
  /** Epoch ms: every lease is released by then. */
  endsAt: number;
  runId?: string;
  /** Asks the fleet for one more poller when a new conversation finds no room. */
  requestSurge?: () => Promise<void>;
  /** Transport hooks for tests and benchmarks. */
  fetch?: typeof fetch;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface PollerStats {
  runId: string;
  claimed: number;
  /** Of those, claimed because a notice told the running fleet of a new (or let-go) conversation. */
  claimedOnNotice: number;
  /** Leases given back one by one (mid-round: a conversation let go, or the run fenced itself). */
  released: number;
  /** Leases left naming the run as it ended at its round's end: handed over with one write for the run. */
  handedOver: number;
  /** Conversations taken by adopting ended runs whole (one write a run; their leases renamed after the first polls open). */
  adopted: number;
  /** Ended runs adopted. */
  adoptedRuns: number;
  /** Polls opened (200 and 204 answers count once each). */
  polls: number;
  delivered: number;
  conflicts: number;
  reconnects: number;
  expired: number;
  /** Milliseconds from a lease's release (by the run before) to this run's first poll on it. */
  handoverGapsMs: number[];
  /** Of those, the conversations taken by adopting their run whole. */
  adoptedHandoverGapsMs: number[];
  /** Milliseconds from a conversation's start to its first poll, for conversations this run took first, started while it ran. */
  firstPollMs: number[];
  /** The same for those started before this run began (between rounds, when no poller takes notices). */
  firstPollAcrossRoundsMs: number[];
  fenced: boolean;
}

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
const MAX_ADOPTION_CHAIN = 16;

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

/** Pure: the stored message for a polled event (undefined for shapes the gateway does not know). */
export function messageOf(event: PolledEvent, fallbackAt: string): MessageWrite & { lifecycle?: 'queued' | 'agent_joined' | 'ended' } {
  const m = event.message;
  const at = typeof m.timestamp === 'string' && !Number.isNaN(Date.parse(m.timestamp)) ? new Date(m.timestamp).toISOString() : fallbackAt;
  const sender = typeof m.sender === 'object' && m.sender !== null ? (m.sender as { role?: unknown; name?: unknown }) : {};
  const senderName = typeof sender.name === 'string' ? sender.name : undefined;
  const platformMessageId = typeof m.id === 'string' ? m.id : undefined;
  const common = { direction: 'inbound' as const, sentAt: at, ...(platformMessageId ? { platformMessageId } : {}) };
  switch (event.type) {
    case 'Text':
      return { ...common, type: 'text', text: typeof m.text === 'string' ? m.text : '', sender: 'agent', ...(senderName ? { details: { senderName } } : {}) };
    case 'Media':
      return { ...common, type: 'media', sender: 'agent', details: { media: m.media, ...(senderName ? { senderName } : {}) } };
    case 'QueueUpdate':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'queued', details: { systemEvent: 'queue_update', position: m.position, estimatedWaitSeconds: m.estimatedWaitSeconds, queue: m.queue } };
    case 'AgentJoined':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'agent_joined', text: typeof m.name === 'string' ? m.name : undefined, details: { systemEvent: 'agent_joined', senderName: m.name } };
    case 'Transfer':
      return { ...common, type: 'system', sender: 'system', text: `${String(m.from ?? '')} → ${String(m.to ?? '')}`, details: { systemEvent: 'transfer', from: m.from, to: m.to } };
    case 'ChatEnded':
      return { ...common, type: 'system', sender: 'system', lifecycle: 'ended', text: typeof m.reason === 'string' ? m.reason : undefined, details: { systemEvent: 'ended', reason: m.reason } };
    default:
      return { ...common, type: 'system', sender: 'system', details: { systemEvent: event.type.replace(/[A-Z]/g, (c, i: number) => `${i ? '_' : ''}${c.toLowerCase()}`) } };
  }
}

function endReasonOf(platformReason: unknown): 'agent' | 'end_user' | 'system' {
  return platformReason === 'EndUser' ? 'end_user' : platformReason === 'Agent' ? 'agent' : 'system';
}

class Killed extends Error {
  override readonly name = 'Killed';
}

interface Held {
  live: LiveConversation;
  /** The run its lease names in the table now: this run, or (adopted, until renamed) the run it adopted. */
  owner: string;
  /** An adopted lease's rename to this run, once started. */
  renaming?: Promise<boolean>;
  /** Taken by adopting the run that held it (no claim). */
  adopted?: true;
  /** An adopted lease not renamed by then stops being polled: past its hard expiry anyone may claim it. */
  renameDeadline?: ReturnType<typeof setTimeout>;
  controller: AbortController;
  done: Promise<void>;
  /** Read with the others a sweep takes over (one batched read); otherwise read as the hold starts. */
  conversation?: Conversation;
}

export class PollerRun {
  readonly stats: PollerStats;
  private readonly gateway: Gateway;
  private readonly log: Logger;
  private readonly options: PollerRunOptions;
  private readonly runId: string;
  private readonly capacity: number;
  private readonly leaseMs: number;
  private readonly heartbeatMs: number;
  private readonly pollTimeoutSeconds: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly held = new Map<string, Held>();
  private readonly stop = new AbortController();
  private killed = false;
  /** Set as the run ends at its round's end: the holds leave their leases for the one mark (handOver). */
  private handingOver = false;
  /** Ended runs this run has listed since they ended (each is a reason to list once). */
  private readonly listedAfterEnd = new Set<string>();
  /** Ended runs nobody adopted, listed once their wait had passed (a second reason to list). */
  private readonly listedAfterWait = new Set<string>();
  /** Ended runs listed since they were marked to be claimed one by one. */
  private readonly listedOneByOne = new Set<string>();
  /** The heartbeat write in flight, if any. */
  private beating: Promise<void> = Promise.resolve();
  private startedAt = 0;
  private lastBeatSentAt = 0;
  private readonly instanceUrls = new Map<string, Promise<string>>();
  private readonly settings = new Map<string, Promise<MessagingSettings>>();

  constructor(options: PollerRunOptions) {
    this.options = options;
    this.gateway = options.gateway;
    this.runId = options.runId ?? `run-${randomUUID()}`;
    this.log = options.log.with({ runId: this.runId, shard: options.shard });
    const env = options.gateway.env;
    this.capacity = env.POLLER_CAPACITY;
    this.leaseMs = env.POLLER_LEASE_SECONDS * 1000;
    this.heartbeatMs = env.POLLER_HEARTBEAT_SECONDS * 1000;
    this.pollTimeoutSeconds = env.LONG_POLL_TIMEOUT_SECONDS;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? abortableSleep;
    this.stats = { runId: this.runId, claimed: 0, claimedOnNotice: 0, released: 0, handedOver: 0, adopted: 0, adoptedRuns: 0, polls: 0, delivered: 0, conflicts: 0, reconnects: 0, expired: 0, handoverGapsMs: [], adoptedHandoverGapsMs: [], firstPollMs: [], firstPollAcrossRoundsMs: [], fenced: false };
  }

  get id(): string {
    return this.runId;
  }

  /** Whether the run took any conversation (claimed or adopted). */
  private get tookAny(): boolean {
    return this.stats.claimed + this.stats.adopted > 0;
  }

  /** How many conversations this run holds now. */
  get holding(): number {
    return this.held.size;
  }

  /** Stops the run as a crash would: no more I/O, no release; its leases lapse with its heartbeat. */
  kill(): void {
    this.killed = true;
    this.stop.abort(new Killed('killed'));
    for (const held of this.held.values()) held.controller.abort(new Killed('killed'));
  }

  async run(): Promise<PollerStats> {
    const now = this.gateway.now();
    this.startedAt = now;
    await this.beat(now);
    const heartbeat = setInterval(() => void this.heartbeat(), this.heartbeatMs);
    // PollsOpen once a minute while the run lasts, and 0 as it ends (the "live conversations, no poller" alarm).
    const pollsOpen = setInterval(() => this.tookAny && recordMetric.pollsOpen(this.held.size), 60_000);
    const deadline = setTimeout(() => this.stop.abort(), Math.max(0, this.options.endsAt - now));
    try {
      await Promise.all([this.noticeLoop(), this.sweepLoop()]);
    } catch (error) {
      if (!(error instanceof Killed)) throw error;
    } finally {
      clearInterval(heartbeat);
      clearInterval(pollsOpen);
      clearTimeout(deadline);
      await this.handOver();
      // A run that held nothing sends nothing: an idle stack pays for no metric series.
      if (this.tookAny) recordMetric.pollsOpen(0);
    }
    // A killed run fails like a crashed Lambda: the fleet's Retry starts another for the rest of the round.
    if (this.killed) throw new Killed('the poller run was killed');
    return this.stats;
  }

  // ---- leases ----

  private guard(): void {
    if (this.killed) throw new Killed('killed');
    // Past the point where a claimer may think our leases lapsed: stop before touching anything.
    if (this.lastBeatSentAt > 0 && this.gateway.now() > this.lastBeatSentAt + this.leaseMs - this.fenceMarginMs) this.fence();
    if (this.stats.fenced) throw new Killed('fenced');
  }

  /** How long before its leases could be taken a run stops polling: a heartbeat period or a quarter lease. */
  private get fenceMarginMs(): number {
    return Math.max(this.heartbeatMs, this.leaseMs / 4);
  }

  private fence(): void {
    if (this.stats.fenced) return;
    this.stats.fenced = true;
    this.log.error('poller could not renew its leases in time: it stops polling before they lapse', {});
    this.stop.abort();
    for (const held of this.held.values()) held.controller.abort();
  }

  /** Renews every lease; `lastBeatSentAt` moves only once the write succeeded (to when it was sent). */
  private async beat(now: number): Promise<void> {
    if (this.killed) throw new Killed('killed');
    await this.gateway.store.beatPollerRun({ runId: this.runId, renewedAt: now, until: now + this.leaseMs, shard: this.options.shard });
    this.lastBeatSentAt = Math.max(this.lastBeatSentAt, now);
  }

  /**
   * Renews every lease at once. A run that could not renew in time stops polling before anyone
   * may take its conversations (their claimers wait for the lease plus a clock-skew margin).
   */
  private async heartbeat(): Promise<void> {
    if (this.killed || this.stop.signal.aborted) return;
    try {
      const beat = this.beat(this.gateway.now());
      this.beating = beat.catch(() => undefined);
      await beat;
    } catch (error) {
      if (error instanceof Killed) return;
      this.log.warn('poller heartbeat failed', { error });
    }
    if (this.gateway.now() > this.lastBeatSentAt + this.leaseMs - this.fenceMarginMs) this.fence();
  }

  /** Claims whose write is in flight: counted as held, so side-by-side claims never pass the capacity. */
  private claiming = 0;

  /**
   * Tells the running fleet about a conversation this run could not keep. A notice only speeds up
   * the first poll (the next listing finds the conversation anyway), so a failed one does not stop
   * the run; it is logged, never silently dropped.
   */
  private async tellFleet(accountId: string, conversationId: string, at: number): Promise<void> {
    await this.gateway.pollerNotices.tell({ accountId, conversationId, at }).catch((error: unknown) => this.log.warn('poller notice not sent; the next listing finds the conversation', { conversationId, error }));
  }

  private hasRoom(): boolean {
    return this.held.size + this.claiming < this.capacity && !this.stop.signal.aborted;
  }

  /** Room for this many more conversations. */
  private get room(): number {
    return this.stop.signal.aborted ? 0 : Math.max(0, this.capacity - this.held.size - this.claiming);
  }

  private handoverWait(live: LiveConversation): number {
    return handoverWaitMs(live.releasedAt, this.gateway.now(), this.gateway.env.POLLER_HANDOVER_GRACE_SECONDS * 1000);
  }

  /** Claims a conversation and starts holding its poll; undefined if it is held, gone, or there is no room. */
  private async claim(accountId: string, conversationId: string, lapsedOwner?: string, conversation?: Conversation, handedOverAt?: number): Promise<Held | undefined> {
    const key = `${accountId}/${conversationId}`;
    if (this.held.has(key) || !this.hasRoom()) return undefined;
    this.guard();
    const now = this.gateway.now();
    this.claiming++;
    let live: LiveConversation | undefined;
    try {
      live = await this.gateway.store.claimConversationLease(accountId, conversationId, {
        owner: this.runId,
        now,
        // The hard bound: past the run's end (and the Lambda's own limit), whatever the heartbeat says.
        expiresAt: this.options.endsAt + this.leaseMs,
        ...(lapsedOwner ? { lapsedOwner } : {}),
      });
    } finally {
      this.claiming--;
    }
    if (!live) return undefined;
    // Taken over from a run that ended with its polls closed: the grace and the gap count from its end.
    if (handedOverAt !== undefined) live = { ...live, releasedAt: handedOverAt };
    if (this.held.has(key) || this.killed) return undefined;
    this.stats.claimed++;
    const controller = new AbortController();
    const held: Held = { live, owner: this.runId, controller, done: Promise.resolve(), ...(conversation ? { conversation } : {}) };
    this.held.set(key, held);
    held.done = this.hold(held).finally(() => this.held.delete(key));
    return held;
  }

  /**
   * Holds a conversation of a run this run adopted: no write before its first poll (the adoption
   * was the one write). Its lease still names the adopted run, which this run's heartbeat now
   * stands for; `rename` makes it name this run before its hard expiry and before its first ack.
   */
  private holdAdopted(live: LiveConversation, conversation: Conversation | undefined, endedAt: number | undefined): void {
    const key = `${live.accountId}/${live.conversationId}`;
    if (this.held.has(key) || !live.leaseOwner) return;
    this.stats.adopted++;
    const controller = new AbortController();
    const held: Held = { live: { ...live, ...(endedAt === undefined ? {} : { releasedAt: endedAt }) }, owner: live.leaseOwner, adopted: true, controller, done: Promise.resolve(), ...(conversation ? { conversation } : {}) };
    const untilDeadline = this.renameDeadline(held) - this.gateway.now();
    // Adopted late (the next round came long after the last): renamed before its first poll instead.
    if (untilDeadline > 0) held.renameDeadline = setTimeout(() => held.owner !== this.runId && controller.abort(), untilDeadline);
    this.held.set(key, held);
    held.done = this.hold(held).finally(() => {
      clearTimeout(held.renameDeadline);
      this.held.delete(key);
    });
  }

  /** When an adopted lease not renamed yet stops being polled: a fence margin before its hard expiry. */
  private renameDeadline(held: Held): number {
    return held.live.leaseExpiresAt === undefined ? Number.POSITIVE_INFINITY : held.live.leaseExpiresAt - this.fenceMarginMs;
  }

  /** An adopted lease renamed to this run (once; false: someone else holds it now, stop polling it). */
  private renamed(held: Held): Promise<boolean> {
    if (held.owner === this.runId) return Promise.resolve(true);
    held.renaming ??= (async () => {
      const { accountId, conversationId } = held.live;
      this.guard();
      const renamed = await this.gateway.store.claimConversationLease(accountId, conversationId, { owner: this.runId, now: this.gateway.now(), expiresAt: this.options.endsAt + this.leaseMs, lapsedOwner: held.owner });
      if (!renamed) return false;
      held.owner = this.runId;
      clearTimeout(held.renameDeadline);
      return true;
    })();
    return held.renaming;
  }

  /** Renames every adopted lease, a few side by side, while their first polls wait out the handover grace. */
  private async renameAdopted(): Promise<void> {
    const pending = [...this.held.values()].filter((held) => held.owner !== this.runId);
    let next = 0;
    const renamer = async (): Promise<void> => {
      while (next < pending.length && !this.stop.signal.aborted) {
        const held = pending[next++]!;
        if (!(await this.renamed(held).catch(() => false)) && held.owner !== this.runId) held.controller.abort();
      }
    };
    await Promise.all(Array.from({ length: 8 }, renamer));
  }

  /**
   * A conversation the fleet was told of: new or let go (no lease), or left over by a full run, whose
   * lease may still name a run that ended or lapsed (then taken over from it, as a listing would).
   */
  private async claimTold(accountId: string, conversationId: string): Promise<Held | undefined> {
    const held = await this.claim(accountId, conversationId);
    if (held || !this.hasRoom()) return held;
    const live = await this.gateway.store.getLiveConversation(accountId, conversationId);
    if (!live?.leaseOwner || live.leaseOwner === this.runId) return undefined;
    const holder = await this.leaseHolder(live.leaseOwner, (runId) => this.gateway.store.getPollerRun(runId));
    if (holder.runId === this.runId) return undefined;
    const free = takeover(live, holder.run, this.gateway.now(), this.skewMs);
    return free?.lapsedOwner ? this.claim(accountId, conversationId, free.lapsedOwner, undefined, free.releasedAt) : undefined;
  }

  /**
   * The run holding a lease: its owner, or the run at the end of the owner's chain of adoptions
   * (an ended run adopted whole, perhaps by a run that ended and was adopted in turn). `chain` is
   * every run on the way, each of whose heartbeat items must stay while the lease names its start.
   */
  private async leaseHolder(owner: string, runOf: (runId: string) => Promise<PollerRunItem | undefined>): Promise<{ runId: string; run?: PollerRunItem; chain: string[] }> {
    const chain = [owner];
    if (owner === this.runId) return { runId: owner, chain };
    let run = await runOf(owner);
    for (let next = adopterOf(run); next !== undefined && chain.length < MAX_ADOPTION_CHAIN && !chain.includes(next); next = adopterOf(run)) {
      chain.push(next);
      if (next === this.runId) return { runId: next, chain };
      run = await runOf(next);
    }
    return { runId: chain.at(-1)!, ...(run ? { run } : {}), chain };
  }

  /** New conversations, as the start route tells the fleet: the first poll opens within a second. */
  private async noticeLoop(): Promise<void> {
    while (!this.stop.signal.aborted) {
      const received = await this.gateway.pollerNotices.receive({ max: 10, waitMs: Math.min(20_000, Math.max(0, this.options.endsAt - this.gateway.now())), signal: this.stop.signal });
      if (this.killed) return;
      // Of conversations this run holds already (its listing took them first): spent, taking no room.
      const held = received.filter((item) => this.held.has(`${item.notice.accountId}/${item.notice.conversationId}`));
      const told = received.filter((item) => !held.includes(item));
      const roomBefore = this.room;
      const taken = noticesToClaim(told.length, roomBefore);
      const givenBack = told.slice(taken);
      // Side by side: a burst of starts waits one claim, not one claim per notice ahead of it.
      await Promise.all([
        ...held.map((item) => item.done()),
        ...givenBack.map((item) => item.giveBack()),
        ...told.slice(0, taken).map(async (item) => {
          if (await this.claimTold(item.notice.accountId, item.notice.conversationId)) this.stats.claimedOnNotice++;
          // Claimed here, or someone else holds it, or it ended: either way the notice is spent.
          await item.done();
        }),
      ]);
      if (this.stop.signal.aborted) continue;
      if (surgeWanted({ roomBefore, roomAfter: this.room, gaveBack: givenBack.length, capacity: this.capacity })) {
        // Every poller that sees it full (or nearly) asks; the fleet starts one extra poller a second at most.
        await this.options.requestSurge?.().catch((error: unknown) => this.log.warn('surge poller not started', { error }));
      }
      // Full: leave the queue to pollers with room for a moment.
      if (givenBack.length > 0) await this.sleep(1000, this.stop.signal);
    }
  }

  /**
   * Claims what nobody holds. Listing every live conversation reads every live item, so a run lists
   * them only when that is worth it: at its start (the conversations the previous round released),
   * when another run's heartbeat lapsed (a killed poller's conversations), and every
   * POLLER_SWEEP_SECONDS for what no notice brought. Between listings it reads only the runs'
   * heartbeats (one small partition) once a period. Conversations preferred by another slot are
   * left to it for a grace period.
   */
  private async sweepLoop(): Promise<void> {
    const every = period(this.heartbeatMs);
    const sweepEveryMs = this.gateway.env.POLLER_SWEEP_SECONDS * 1000;
    const idleMs = this.gateway.env.POLLER_IDLE_SECONDS * 1000;
    let sweptAt: number | undefined;
    let busyAt = this.gateway.now();
    while (!this.stop.signal.aborted) {
      if (this.hasRoom()) {
        const now = this.gateway.now();
        if (sweptAt === undefined || now - sweptAt >= sweepEveryMs || (await this.lapsedRuns(now)).length > 0) {
          await this.sweep(sweptAt === undefined);
          sweptAt = now;
        }
      }
      // Holding nothing for a while: end early, so an idle fleet stops (its next plan finds nothing live).
      if (this.held.size > 0) busyAt = this.gateway.now();
      else if (this.gateway.now() - busyAt >= idleMs) {
        this.stop.abort();
        return;
      }
      await this.sleep(Math.min(every, idleMs), this.stop.signal);
    }
  }

  /** The clock-skew margin a claimer adds to another run's heartbeat before calling it lapsed. */
  private get skewMs(): number {
    return Math.min(2000, this.leaseMs / 4);
  }

  /**
   * Other runs whose heartbeat lapsed (killed, or fenced), or that ended since this run last
   * listed: their conversations are free to take, or to adopt. An ended run is a reason to list
   * once as it ends (its own slot's next run adopts it), once more when nobody adopted it within
   * the wait (another run adopts it), and once when it is to be claimed one by one.
   */
  private async lapsedRuns(now: number): Promise<string[]> {
    this.guard();
    const runs = await this.gateway.store.listPollerRuns();
    const waitMs = period(this.heartbeatMs);
    return runs
      .filter((run) => {
        if (run.runId === this.runId) return false;
        if (run.endedAt === undefined) return run.until + this.skewMs < now;
        if (!this.listedAfterEnd.has(run.runId)) return true;
        if (run.adoptedBy === CLAIMED_ONE_BY_ONE) return !this.listedOneByOne.has(run.runId);
        return run.adoptedBy === undefined && now - run.endedAt > waitMs && !this.listedAfterWait.has(run.runId);
      })
      .map((run) => run.runId);
  }

  /**
   * Takes ended runs whole where it can (`adoptionPlan`: one conditional write a run) and marks
   * the rest waited for as claimed one by one. Updates `runOf` with what the writes decided, and
   * returns the runs it marked that other runs would have waited for (small enough to adopt).
   */
  private async adoptEndedRuns(runs: PollerRunItem[], runOf: Map<string, Promise<PollerRunItem | undefined>>, now: number): Promise<Set<string>> {
    const marked = new Set<string>();
    const { shard, shards } = this.options;
    const plan = adoptionPlan({ runs, shard, shards, room: this.room, capacity: this.capacity, keepFree: this.capacity - plannedPerPoller(this.capacity), now, waitMs: period(this.heartbeatMs) });
    const settle = async (runId: string, by: string) => {
      if (await this.gateway.store.adoptPollerRun(runId, by)) {
        const run = runs.find((candidate) => candidate.runId === runId)!;
        runOf.set(runId, Promise.resolve({ ...run, adoptedBy: by }));
        if (by === this.runId) this.stats.adoptedRuns++;
        // The others cannot tell it will not be adopted (a bigger one they mark themselves).
        else if (plan.noRoom.includes(runId)) marked.add(runId);
      } else {
        // Another run adopted it (or marked it) first: look again at what it decided.
        runOf.set(runId, this.gateway.store.getPollerRun(runId));
      }
    };
    await Promise.all([...plan.adopt.map((runId) => settle(runId, this.runId)), ...plan.oneByOne.map((runId) => settle(runId, CLAIMED_ONE_BY_ONE))]);
    return marked;
  }

  private async sweep(first: boolean): Promise<void> {
    this.guard();
    const now = this.gateway.now();
    const skewMs = this.skewMs;
    const waitMs = period(this.heartbeatMs);
    // The runs' heartbeats, read once before the listing: which ended runs this listing covers (an
    // ended run's leases all name it before its item says it ended), who holds what, and (after the
    // claims) which lapsed or ended runs' items can go. Neither comes back to life.
    const runs = (await this.gateway.store.listPollerRuns()).filter((run) => run.runId !== this.runId);
    const runOf = new Map<string, Promise<PollerRunItem | undefined>>(runs.map((run) => [run.runId, Promise.resolve(run)]));
    const ownerOf = (runId: string) => {
      if (!runOf.has(runId)) runOf.set(runId, this.gateway.store.getPollerRun(runId));
      return runOf.get(runId)!;
    };
    // Each lease owner's holder, resolved once a sweep (after the adoptions below, which it reads).
    const holders = new Map<string, ReturnType<PollerRun['leaseHolder']>>();
    const holderOf = (owner: string) => {
      if (!holders.has(owner)) holders.set(owner, this.leaseHolder(owner, ownerOf));
      return holders.get(owner)!;
    };
    const listed = await this.gateway.store.listLiveConversations();
    for (const run of runs) {
      if (run.endedAt === undefined) continue;
      this.listedAfterEnd.add(run.runId);
      if (now - run.endedAt > waitMs) this.listedAfterWait.add(run.runId);
    }
    const markedOneByOne = await this.adoptEndedRuns(runs, runOf, now);
    for (const run of runs) if ((await runOf.get(run.runId))?.adoptedBy === CLAIMED_ONE_BY_ONE) this.listedOneByOne.add(run.runId);
    const perAccount = new Map<string, number>();
    for (const live of listed) perAccount.set(live.accountId, (perAccount.get(live.accountId) ?? 0) + 1);
    const { shards, shard } = this.options;
    const perPoller = plannedPerPoller(this.capacity);
    const isMine = (live: LiveConversation) => preferredShard(live.accountId, live.conversationId, shards, accountSpread(perAccount.get(live.accountId) ?? 1, perPoller, shards)) === shard;
    const candidates = listed.filter((live) => !this.held.has(`${live.accountId}/${live.conversationId}`));
    const mine = candidates.filter(isMine);
    // Others' preferred conversations: only once their slot had its chance (a grace of one sweep).
    const others = first ? [] : candidates.filter((live) => !isMine(live));
    const adopted: Array<{ live: LiveConversation; endedAt?: number }> = [];
    const adoptedNow = new Set<LiveConversation>();
    const ready: Array<{ live: LiveConversation; lapsedOwner?: string; releasedAt?: number }> = [];
    for (const live of candidates) {
      if (!live.leaseOwner || live.leaseOwner === this.runId) continue;
      const holder = await holderOf(live.leaseOwner);
      // Held by this run through the runs it adopted: polled at once, renamed as it goes.
      if (holder.runId !== this.runId) continue;
      // The grace counts from when the last run polling it ended: the one this run adopted it from.
      const from = await ownerOf(holder.chain.at(-2)!);
      adopted.push({ live, ...(from?.endedAt === undefined ? {} : { endedAt: from.endedAt }) });
      adoptedNow.add(live);
    }
    for (const live of [...mine, ...others]) {
      if (live.leaseOwner === this.runId) {
        ready.push({ live });
        continue;
      }
      if (adoptedNow.has(live)) continue;
      const free = takeover(live, live.leaseOwner ? (await holderOf(live.leaseOwner)).run : undefined, now, skewMs);
      if (!free) continue;
      // A lapsed run's: at once. Released or handed over: another slot's only once its own slot had a heartbeat period.
      const freeSince = free.releasedAt ?? live.releasedAt ?? live.startedAt;
      const lapsed = free.lapsedOwner !== undefined && free.releasedAt === undefined;
      if (lapsed || mine.includes(live) || first || now - freeSince > waitMs) ready.push({ live, ...free });
    }
    // Their conversations read together first (a handover's hundreds in a few requests, not one each):
    // read after the listing, so after their last holder's release and its last write.
    const reading = [...adopted.map(({ live }) => live), ...ready.slice(0, Math.max(0, this.room - adopted.length)).map(({ live }) => live)];
    const conversations = reading.length > 0 ? await this.gateway.store.getConversations(reading) : new Map<string, Conversation>();
    const conversationOf = (live: LiveConversation) => conversations.get(`${live.accountId}/${live.conversationId}`);
    // Adopted: no claim write before the first poll; the renames run while the first polls wait out the grace.
    for (const { live, endedAt } of adopted) this.holdAdopted(live, conversationOf(live), endedAt);
    if (adopted.length > 0) void this.renameAdopted();
    // Claims side by side (a handover taken one by one takes hundreds at once).
    let next = 0;
    const claimer = async (): Promise<void> => {
      while (next < ready.length && this.hasRoom()) {
        const { live, lapsedOwner, releasedAt } = ready[next++]!;
        await this.claim(live.accountId, live.conversationId, lapsedOwner, conversationOf(live), releasedAt);
      }
    };
    await Promise.all(Array.from({ length: 16 }, claimer));
    // Full before it took all it prefers (a big account, or accounts hashed unevenly): the running
    // fleet is told of the rest now, rather than leaving them to another run's next listing.
    // (A run that is ending leaves them to the next round's first look.)
    const leftovers = this.stop.signal.aborted ? [] : ready.slice(next).filter(({ live }) => isMine(live));
    // Likewise other slots' conversations of a run this run just marked to be claimed one by one: their
    // own slots' runs listed before the mark, and would see it only at their next look.
    const othersOfMarked = markedOneByOne.size === 0 ? [] : candidates.filter((live) => live.leaseOwner !== undefined && markedOneByOne.has(live.leaseOwner) && !isMine(live)).map((live) => ({ live }));
    await Promise.all([...leftovers, ...othersOfMarked].map(({ live }) => this.tellFleet(live.accountId, live.conversationId, now)));
    // A lapsed or ended run's heartbeat, once no listed lease leads through it (its owner, or a run on
    // its chain of adoptions; a lease this run holds counts under the name it has in the table now):
    // otherwise every run would keep listing for it. An ended run's stays through the handover
    // grace, so a run taking over later still waits it.
    const onChains = new Set<string>();
    for (const live of listed) {
      const owner = this.held.get(`${live.accountId}/${live.conversationId}`)?.owner ?? live.leaseOwner;
      if (owner) for (const runId of (await holderOf(owner)).chain) onChains.add(runId);
    }
    const graceMs = this.gateway.env.POLLER_HANDOVER_GRACE_SECONDS * 1000;
    const after = this.gateway.now();
    const gone = runs.filter((run) => !onChains.has(run.runId) && (run.endedAt !== undefined ? run.endedAt + graceMs < after : run.until + skewMs < after));
    await Promise.all(gone.map((run) => this.gateway.store.endPollerRun(run.runId).catch(() => undefined)));
  }

  /**
   * The run ends: stop every poll, then hand every conversation over at once. At its round's end the
   * run leaves its leases naming it and marks its heartbeat item ended (one write, not one release per
   * conversation); the next run takes them from that mark, after the handover grace. A fenced run has
   * released each lease already, and only removes its heartbeat.
   */
  private async handOver(): Promise<void> {
    this.handingOver = !this.stats.fenced && !this.killed;
    for (const held of this.held.values()) held.controller.abort();
    await Promise.allSettled([...this.held.values()].map((held) => held.done));
    if (this.killed) return;
    // A heartbeat still in flight must not land after the mark and make the run look alive.
    await this.beating;
    try {
      if (this.stats.handedOver > 0 && !this.stats.fenced) await this.gateway.store.markPollerRunEnded(this.runId, this.gateway.now(), { shard: this.options.shard, held: this.stats.handedOver });
      else await this.gateway.store.endPollerRun(this.runId);
    } catch (error) {
      // Its leases lapse with its heartbeat instead (the next run claims them a lease later).
      this.log.warn('poller heartbeat item not updated at the run\'s end; its leases lapse on their own', { error });
    }
  }

  // ---- one conversation ----

  private instanceUrl(accountId: string): Promise<string> {
    if (!this.instanceUrls.has(accountId)) {
      const url = messagingInstanceUrl(this.gateway, accountId);
      url.catch(() => this.instanceUrls.delete(accountId));
      this.instanceUrls.set(accountId, url);
    }
    return this.instanceUrls.get(accountId)!;
  }

  private settingsOf(accountId: string): Promise<MessagingSettings> {
    if (!this.settings.has(accountId)) this.settings.set(accountId, messagingSettings(this.gateway, accountId));
    return this.settings.get(accountId)!;
  }

  private async hold(held: Held): Promise<void> {
    const { live, controller } = held;
    const { accountId, conversationId } = live;
    const signal = controller.signal;
    let ack = live.ack;
    let failures = 0;
    let first = true;
    // Stopped holding for its own reason (ended, lost, expired, a fault), not because the run ended.
    let letGo = false;
    try {
      const conversation = held.conversation ?? (await this.gateway.store.getConversation(accountId, conversationId));
      if (!conversation || !isLive(conversation)) {
        letGo = true;
        await this.gateway.store.deleteLiveConversation(accountId, conversationId);
        return;
      }
      let session: ConversationSession | undefined;
      while (!signal.aborted) {
        try {
          this.guard();
          session ??= await conversationSession(this.gateway, conversation, conversation.instanceUrl ?? (await this.instanceUrl(accountId)), this.options.fetch ? { fetch: this.options.fetch } : {});
          if (first) {
            // Until the whole grace has passed by the clock (a timer may fire a millisecond early).
            for (let wait = this.handoverWait(live); wait > 0 && !signal.aborted; wait = this.handoverWait(live)) await this.sleep(wait, signal);
            if (signal.aborted) return;
            const openedAt = this.gateway.now();
            if (live.releasedAt !== undefined) this.stats.handoverGapsMs.push(openedAt - live.releasedAt);
            if (live.releasedAt !== undefined && held.adopted) this.stats.adoptedHandoverGapsMs.push(openedAt - live.releasedAt);
            else if (live.ack < 0) (live.startedAt < this.startedAt ? this.stats.firstPollAcrossRoundsMs : this.stats.firstPollMs).push(openedAt - live.startedAt);
            first = false;
          }
          // A poll on a lease still naming the run it was adopted from must end before the lease's hard expiry.
          if (held.owner !== this.runId && this.gateway.now() >= this.renameDeadline(held) && !(await this.renamed(held))) {
            letGo = true;
            return;
          }
          this.stats.polls++;
          const answer = await session.poll(ack, this.pollTimeoutSeconds, { signal, waitMs: this.pollTimeoutSeconds * 1000 + 15_000 });
          failures = 0;
          if (!answer) continue; // 204: nothing within the timeout; the same ack again.
          // An adopted lease names this run before anything is acknowledged under it.
          if (!(await this.renamed(held))) {
            letGo = true;
            return;
          }
          const outcome = await this.apply(conversation, ack, answer);
          letGo = outcome !== 'ok';
          if (outcome === 'lost') return;
          ack = answer.sequence;
          if (outcome === 'ended') return;
        } catch (error) {
          if (signal.aborted || error instanceof Killed) return;
          if (error instanceof PlatformError && error.status === 401) {
            letGo = true;
            this.stats.expired++;
            this.guard();
            await finishConversation(this.gateway, conversation, 'session_expired', this.log);
            return;
          }
          if (error instanceof PlatformError && error.status === 403 && /SESSION_ENDED/i.test(error.platformCode ?? '')) {
            letGo = true;
            this.guard();
            await finishConversation(this.gateway, conversation, 'system', this.log);
            return;
          }
          if (error instanceof PlatformError && error.status === 409) {
            // Rule 4 was broken somewhere: count it loudly, then wait for the other poll to finish.
            this.stats.conflicts++;
            this.log.error('a second long-poll was open on a conversation (409): a bug', { conversationId });
          }
          failures++;
          this.stats.reconnects++;
          await this.sleep(reconnectDelayMs(failures, this.random), signal);
        }
      }
    } catch (error) {
      if (!(error instanceof Killed)) {
        letGo = true;
        this.log.error('poller stopped holding a conversation', { conversationId, error });
      }
    } finally {
      if (this.handingOver && signal.aborted && !letGo && !this.stats.fenced && !this.killed) {
        // The run's end: the lease stays naming this run; its ended mark hands it over (handOver).
        this.stats.handedOver++;
      } else if (!this.killed) {
        const released = await this.gateway.store.releaseConversationLease(accountId, conversationId, held.owner, this.gateway.now()).catch(() => false);
        if (released) this.stats.released++;
        // Let go mid-round (a fault, or this run fenced itself): the running fleet is told, as for a new
        // conversation, rather than leaving it to the next listing. At the round's end the next round's first look takes it.
        if (released && (this.stats.fenced || !this.stop.signal.aborted)) {
          await this.tellFleet(accountId, conversationId, this.gateway.now());
        }
      }
    }
  }

  /**
   * Persists the answer's events at their sequences (in order; a redelivery is a no-op), then
   * publishes them, then moves the conversation's state, then acknowledges. A crash anywhere before
   * the acknowledgement means the next holder gets the same events again: stored once, and
   * re-published under the same event ids.
   */
  private async apply(conversation: Conversation, ack: number, answer: PollAnswer): Promise<'ok' | 'ended' | 'lost'> {
    const settings = await this.settingsOf(conversation.accountId);
    const firstSequence = answer.sequence - answer.messages.length + 1;
    const fallbackAt = new Date(this.gateway.now()).toISOString();
    const events = [];
    let lifecycle: { queued?: ReturnType<typeof messageOf>; agent?: ReturnType<typeof messageOf>; ended?: ReturnType<typeof messageOf> } = {};
    for (const [index, polled] of answer.messages.entries()) {
      const sequence = firstSequence + index;
      if (sequence <= ack) continue;
      const { lifecycle: effect, ...message } = messageOf(polled, fallbackAt);
      if (effect === 'queued') lifecycle = { ...lifecycle, queued: { ...message, lifecycle: effect } };
      if (effect === 'agent_joined') lifecycle = { ...lifecycle, agent: { ...message, lifecycle: effect } };
      if (effect === 'ended') lifecycle = { ...lifecycle, ended: { ...message, lifecycle: effect } };
      if (!keepsMessageType(settings, message.type)) continue;
      this.guard();
      await this.gateway.store.appendMessage(conversation.accountId, conversation.conversationId, sequence, message);
      events.push(
        conversationEvent(
          'message.received',
          conversation,
          {
            message: {
              sequence,
              type: message.type,
              ...(message.text !== undefined ? { text: message.text } : {}),
              ...(message.type === 'media' && message.details?.media ? { media: message.details.media as { url: string; mimeType: string } } : {}),
              ...(typeof message.details?.systemEvent === 'string' ? { systemEvent: message.details.systemEvent } : {}),
              sender: message.sender ?? 'agent',
              ...(typeof message.details?.senderName === 'string' ? { senderName: message.details.senderName } : {}),
              sentAt: message.sentAt,
            },
          },
          { occurredAt: message.sentAt, idSuffix: String(sequence) },
        ),
      );
    }
    const now = new Date(this.gateway.now()).toISOString();
    let current = conversation;
    if (lifecycle.queued) {
      const queued = await this.gateway.store.updateConversation(conversation.accountId, conversation.conversationId, { set: { state: 'queued', updatedAt: now }, whenStateIn: ['starting', 'active'] });
      if (queued) {
        current = queued;
        const details = lifecycle.queued.details ?? {};
        events.push(
          conversationEvent(
            'conversation.queued',
            queued,
            { ...(typeof details.queue === 'string' ? { queue: details.queue } : {}), ...(typeof details.position === 'number' ? { position: details.position } : {}), ...(typeof details.estimatedWaitSeconds === 'number' ? { estimatedWaitSeconds: details.estimatedWaitSeconds } : {}) },
            { occurredAt: lifecycle.queued.sentAt, idSuffix: String(queued.version) },
          ),
        );
      }
    }
    if (lifecycle.agent) {
      const agentName = typeof lifecycle.agent.details?.senderName === 'string' ? lifecycle.agent.details.senderName : undefined;
      const active = await this.gateway.store.updateConversation(conversation.accountId, conversation.conversationId, { set: { state: 'active', updatedAt: now, ...(agentName ? { agentName } : {}) }, whenStateIn: ['starting', 'queued', 'active'] });
      if (active) {
        current = active;
        events.push(conversationEvent('agent.joined', active, agentName ? { agentName } : {}, { occurredAt: lifecycle.agent.sentAt, idSuffix: String(active.version) }));
      }
    }
    this.guard();
    await publishConversationEvents(this.gateway, events);
    this.stats.delivered += answer.messages.length;
    recordMetric.messagesDelivered(events.length);
    this.guard();
    if (!(await this.gateway.store.advanceAck(conversation.accountId, conversation.conversationId, this.runId, answer.sequence))) return 'lost';
    if (lifecycle.ended) {
      this.guard();
      await finishConversation(this.gateway, current, endReasonOf(lifecycle.ended.details?.reason), this.log);
      return 'ended';
    }
    return 'ok';
  }
}

function period(heartbeatMs: number): number {
  return Math.max(heartbeatMs, 1000);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
