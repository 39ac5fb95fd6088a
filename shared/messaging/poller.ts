import { createHash, randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import type { Logger } from '../log/logger';
import { recordMetric } from '../metrics/gateway-metrics';
import type { Conversation, LiveConversation, MessageWrite, PollerRun as PollerRunItem } from '../store/items';
import type { ConversationSession, PolledEvent, PollAnswer } from './conversation-api';
import { conversationEvent, publishConversationEvents } from './conversation-events';
import { conversationSession, finishConversation, isLive, messagingInstanceUrl, messagingSettings } from './conversations';
import { keepsMessageType, type MessagingSettings } from './settings';

/**
 * One poller run: holds the long-polls of up to `capacity` live conversations for up to ~14
 * minutes, then hands them over. The spec's long-poll rules, per conversation:
 * 1-3. `GET .../messages?ack=<last sequence>&timeout=30`, reopened at once after each answer;
 *   a 200's events are persisted (a conditional write per sequence), published, then acknowledged;
 *   a 204 reopens with the same ack;
 * 4. exactly one poll per conversation: the conversation's lease item names this run, and the run
 *   renews all its leases with one heartbeat; it stops polling (fences itself) before a lease it
 *   could not renew may be taken, and releases every lease before it ends;
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
  released: number;
  /** Polls opened (200 and 204 answers count once each). */
  polls: number;
  delivered: number;
  conflicts: number;
  reconnects: number;
  expired: number;
  /** Milliseconds from a lease's release (by the run before) to this run's first poll on it. */
  handoverGapsMs: number[];
  /** Milliseconds from a conversation's start to its first poll, for conversations this run took first. */
  firstPollMs: number[];
  fenced: boolean;
}

/** Pure: which poller slot prefers a conversation. */
export function preferredShard(conversationId: string, shards: number): number {
  return createHash('sha256').update(conversationId).digest().readUInt32BE(0) % Math.max(1, shards);
}

/** Pure: full-jitter backoff for the n-th consecutive failure. */
export function reconnectDelayMs(failures: number, random: () => number, baseMs = 500, capMs = 30_000): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** Math.min(failures - 1, 16)));
}

/** Pure: whether another run's lease on a conversation has lapsed, from its heartbeat. */
export function leaseLapsed(live: LiveConversation, ownerUntil: number | undefined, now: number, skewMs: number): boolean {
  if (!live.leaseOwner) return true;
  if (live.leaseExpiresAt !== undefined && live.leaseExpiresAt < now) return true;
  return ownerUntil === undefined || ownerUntil + skewMs < now;
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
  controller: AbortController;
  done: Promise<void>;
}

/** What a poll needs before it opens: the conversation (without its sealed secrets) and its session. */
interface Ready {
  conversation: Conversation;
  session: ConversationSession;
}

/** Beats in flight at once at most: a slow write does not hold the next beat back, but they do not pile up. */
const MAX_BEATS_IN_FLIGHT = 3;
/** Claims in flight at once during a sweep (a handover takes a whole ending run's conversations). */
const CLAIMS_AT_ONCE = 32;
/** How often a run looks again while it is taking over an ending run's conversations. */
const TAKEOVER_TICK_MS = 200;

/** Pure: the fields of a conversation a held poll keeps (events name it; secrets and the task token stay in the table). */
export function heldConversation(conversation: Conversation): Conversation {
  const { accountId, conversationId, platformConversationId, state, direction, contactId, startedAt, updatedAt, version } = conversation;
  return { accountId, conversationId, state, startedAt, updatedAt, version, ...(platformConversationId ? { platformConversationId } : {}), ...(direction ? { direction } : {}), ...(contactId ? { contactId } : {}) };
}

export interface SweepDecision {
  /** Claim now (oldest free first); `lapsedOwner` when taking over from a run whose heartbeat lapsed. */
  claim: Array<{ live: LiveConversation; lapsedOwner?: string }>;
  /** This run's conversations still held by a run that hands over before this one ends: get them ready. */
  incoming: LiveConversation[];
  /** Runs whose heartbeat lapsed and that hold nothing any more: their heartbeat items can go. */
  forgotten: string[];
}

/**
 * Pure: what a sweep does with the live conversations it listed and the runs' heartbeats (read
 * after the listing, so every owner listed had beaten before it claimed).
 */
export function sweepDecision(
  listed: LiveConversation[],
  runs: Map<string, PollerRunItem>,
  me: { runId: string; shard: number; shards: number; endsAt: number },
  now: number,
  options: { skewMs: number; graceMs: number },
): SweepDecision {
  const claim: SweepDecision['claim'] = [];
  const incoming: LiveConversation[] = [];
  const owners = new Set<string>();
  for (const live of listed) {
    if (live.leaseOwner) owners.add(live.leaseOwner);
    const mine = preferredShard(live.conversationId, me.shards) === me.shard;
    if (live.leaseOwner === me.runId) claim.push({ live });
    else if (live.leaseOwner) {
      const owner = runs.get(live.leaseOwner);
      if (leaseLapsed(live, owner?.until, now, options.skewMs)) claim.push({ live, lapsedOwner: live.leaseOwner });
      else if (mine && owner?.endsAt !== undefined && owner.endsAt < me.endsAt) incoming.push(live);
    } else if (mine || now - (live.releasedAt ?? live.startedAt) > options.graceMs) claim.push({ live });
  }
  // Mine first, then the longest without a poll.
  const freeSince = (live: LiveConversation) => (live.leaseOwner ? 0 : (live.releasedAt ?? live.startedAt));
  const rank = (live: LiveConversation) => (preferredShard(live.conversationId, me.shards) === me.shard ? 0 : 1);
  claim.sort((a, b) => rank(a.live) - rank(b.live) || freeSince(a.live) - freeSince(b.live));
  const forgotten = [...runs.values()].filter((run) => run.runId !== me.runId && run.until + options.skewMs < now && !owners.has(run.runId)).map((run) => run.runId);
  return { claim, incoming, forgotten };
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
  /** Conversations this run is about to take over (read, session token opened), by key. */
  private readonly prepared = new Map<string, Promise<Ready | 'gone'>>();
  private readonly stop = new AbortController();
  private killed = false;
  private finished = false;
  private lastBeatSentAt = 0;
  private beatsInFlight = 0;
  private fenceTimer: ReturnType<typeof setTimeout> | undefined;
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
    this.stats = { runId: this.runId, claimed: 0, released: 0, polls: 0, delivered: 0, conflicts: 0, reconnects: 0, expired: 0, handoverGapsMs: [], firstPollMs: [], fenced: false };
  }

  get id(): string {
    return this.runId;
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
    await this.beat(now);
    const heartbeat = setInterval(() => void this.heartbeat(), this.heartbeatMs);
    // PollsOpen once a minute while the run lasts, and 0 as it ends (the "live conversations, no poller" alarm).
    const pollsOpen = setInterval(() => this.stats.claimed > 0 && recordMetric.pollsOpen(this.held.size), 60_000);
    const deadline = setTimeout(() => this.stop.abort(), Math.max(0, this.options.endsAt - now));
    try {
      await Promise.all([this.noticeLoop(), this.sweepLoop()]);
    } catch (error) {
      if (!(error instanceof Killed)) throw error;
    } finally {
      clearInterval(pollsOpen);
      clearTimeout(deadline);
      // The heartbeat goes on while the leases are released: a slow release is not a lapse.
      await this.handOver();
      this.finished = true;
      clearInterval(heartbeat);
      clearTimeout(this.fenceTimer);
      // A run that held nothing sends nothing: an idle stack pays for no metric series.
      if (this.stats.claimed > 0) recordMetric.pollsOpen(0);
    }
    // A killed run fails like a crashed Lambda: the fleet's Retry starts another for the rest of the round.
    if (this.killed) throw new Killed('the poller run was killed');
    return this.stats;
  }

  // ---- leases ----

  private guard(): void {
    if (this.killed) throw new Killed('killed');
    // Past the point where a claimer may think our leases lapsed: stop before touching anything.
    if (this.lastBeatSentAt > 0 && this.gateway.now() > this.fenceAt()) this.fence();
    if (this.stats.fenced) throw new Killed('fenced');
  }

  /** How long before its leases could be taken a run stops polling: a heartbeat period or a quarter lease. */
  private get fenceMarginMs(): number {
    return Math.max(this.heartbeatMs, this.leaseMs / 4);
  }

  private fenceAt(): number {
    return this.lastBeatSentAt + this.leaseMs - this.fenceMarginMs;
  }

  private fence(): void {
    if (this.stats.fenced || this.finished) return;
    this.stats.fenced = true;
    this.log.error('poller could not renew its leases in time: it stops polling before they lapse', {});
    this.stop.abort();
    for (const held of this.held.values()) held.controller.abort();
  }

  /**
   * Renews every lease; `lastBeatSentAt` moves only once the write succeeded (to when it was sent),
   * and the fence timer with it: the run stops polling at that moment, not at the next check, so a
   * poll never outlives the lease whatever the heartbeat's timing.
   */
  private async beat(now: number): Promise<void> {
    if (this.killed) throw new Killed('killed');
    this.beatsInFlight++;
    try {
      // false: a newer beat is stored already, so the leases hold at least until this one's end.
      await this.gateway.store.beatPollerRun({ runId: this.runId, renewedAt: now, until: now + this.leaseMs, endsAt: this.options.endsAt });
    } finally {
      this.beatsInFlight--;
    }
    if (now <= this.lastBeatSentAt || this.killed || this.finished) return;
    this.lastBeatSentAt = now;
    clearTimeout(this.fenceTimer);
    this.fenceTimer = setTimeout(() => this.fence(), Math.max(0, this.fenceAt() - this.gateway.now()));
  }

  /**
   * Renews every lease at once. A run that could not renew in time stops polling before anyone
   * may take its conversations (their claimers wait for the lease plus a clock-skew margin).
   */
  private async heartbeat(): Promise<void> {
    if (this.killed || this.finished || this.beatsInFlight >= MAX_BEATS_IN_FLIGHT) return;
    try {
      await this.beat(this.gateway.now());
    } catch (error) {
      if (error instanceof Killed) return;
      this.log.warn('poller heartbeat failed', { error });
    }
  }

  /** Claims whose write is in flight: counted as held, so side-by-side claims never pass the capacity. */
  private claiming = 0;

  private hasRoom(): boolean {
    return this.held.size + this.claiming < this.capacity && !this.stop.signal.aborted;
  }

  /** Claims a conversation and starts holding its poll; false if it is held, gone, or there is no room. */
  private async claim(accountId: string, conversationId: string, lapsedOwner?: string): Promise<boolean> {
    const key = `${accountId}/${conversationId}`;
    if (this.held.has(key) || !this.hasRoom()) return false;
    this.guard();
    const now = this.gateway.now();
    this.claiming++;
    // What the poll needs is read while the lease is written (or was read before a handover): the
    // first poll waits for one round trip, not three.
    const ready = this.prepared.get(key) ?? this.prepare(accountId, conversationId);
    this.prepared.delete(key);
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
    if (!live) return false;
    if (this.held.has(key) || this.killed) return false;
    this.stats.claimed++;
    const held: Held = { controller: new AbortController(), done: Promise.resolve() };
    this.held.set(key, held);
    held.done = this.hold(held, live, ready).finally(() => this.held.delete(key));
    return true;
  }

  /** Reads the conversation and opens its session; 'gone' when it is no longer live. */
  private prepare(accountId: string, conversationId: string): Promise<Ready | 'gone'> {
    const ready = (async (): Promise<Ready | 'gone'> => {
      const conversation = await this.gateway.store.getConversation(accountId, conversationId);
      if (!conversation || !isLive(conversation)) return 'gone';
      const session = await conversationSession(this.gateway, conversation, await this.instanceUrl(accountId), this.options.fetch ? { fetch: this.options.fetch } : {});
      return { conversation: heldConversation(conversation), session };
    })();
    ready.catch(() => undefined);
    return ready;
  }

  /** New conversations, as the start route tells the fleet: the first poll opens within a second. */
  private async noticeLoop(): Promise<void> {
    while (!this.stop.signal.aborted) {
      const received = await this.gateway.pollerNotices.receive({ max: 10, waitMs: Math.min(20_000, Math.max(0, this.options.endsAt - this.gateway.now())), signal: this.stop.signal });
      let full = false;
      // Side by side: ten notices cost one claim's wait, not ten.
      await Promise.all(
        received.map(async (item) => {
          if (this.killed) return;
          if (!this.hasRoom()) {
            full = true;
            return item.giveBack();
          }
          await this.claim(item.notice.accountId, item.notice.conversationId).catch((error: unknown) => {
            if (!(error instanceof Killed)) this.log.warn('poller could not claim a new conversation; a sweep will', { conversationId: item.notice.conversationId, error });
          });
          // Claimed here, or someone else holds it, or it ended: either way the notice is spent.
          await item.done();
        }),
      );
      if (full && !this.stop.signal.aborted) {
        // Every poller that sees it full asks; the fleet starts one extra poller per few seconds.
        await this.options.requestSurge?.();
        await this.sleep(1000, this.stop.signal);
      }
    }
  }

  /**
   * Claims what nobody holds, and takes over from runs that hand over. Every heartbeat period it
   * reads the runs' heartbeats (one small partition); it lists every live conversation only when
   * that is worth it: at its start, when a run lapsed (a killed poller), while a run ending before
   * it hands over, and every POLLER_SWEEP_SECONDS for what no notice brought (a listing reads every
   * live item, so a fixed fast sweep would cost reads growing with the fleet).
   */
  private async sweepLoop(): Promise<void> {
    const period = Math.max(this.heartbeatMs, 50);
    const sweepEveryMs = this.gateway.env.POLLER_SWEEP_SECONDS * 1000;
    const idleMs = this.gateway.env.POLLER_IDLE_SECONDS * 1000;
    const skewMs = this.skewMs;
    let sweptAt = -Infinity;
    let incoming = 0;
    let busyAt = this.gateway.now();
    while (!this.stop.signal.aborted) {
      this.guard();
      const now = this.gateway.now();
      const runs = await this.gateway.store.listPollerRuns();
      const others = runs.filter((run) => run.runId !== this.runId);
      const lapsed = others.some((run) => run.until + skewMs < now);
      // Runs of the round before this one: from their end on, their conversations are released.
      // (Past its end and its lease, a run that has not released is a lapsed one.)
      const endings = others.map((run) => run.endsAt).filter((endsAt): endsAt is number => endsAt !== undefined && endsAt < this.options.endsAt && endsAt + this.leaseMs > now);
      const takingOver = incoming > 0 && endings.some((endsAt) => endsAt <= now);
      const nextEnding = Math.min(...endings.filter((endsAt) => endsAt > now));
      const upcoming = Number.isFinite(nextEnding) && nextEnding - now <= Math.max(period, this.gateway.env.POLLER_HANDOVER_SECONDS * 1000);
      if (this.hasRoom() && (sweptAt === -Infinity || lapsed || takingOver || (upcoming && this.prepared.size === 0) || now - sweptAt >= sweepEveryMs)) {
        incoming = await this.sweep();
        sweptAt = now;
      }
      // Holding nothing for a while: end early, so an idle fleet stops (its next plan finds nothing live).
      if (this.held.size > 0 || incoming > 0) busyAt = this.gateway.now();
      else if (this.gateway.now() - busyAt >= idleMs) {
        this.stop.abort();
        return;
      }
      const after = this.gateway.now();
      const wait = takingOver || (incoming > 0 && endings.some((endsAt) => endsAt <= after)) ? TAKEOVER_TICK_MS : Math.min(period, idleMs, Number.isFinite(nextEnding) ? Math.max(0, nextEnding - after) : Infinity);
      await this.sleep(wait, this.stop.signal);
    }
  }

  /** The clock-skew margin a claimer adds to another run's heartbeat before calling it lapsed. */
  private get skewMs(): number {
    return Math.min(2000, this.leaseMs / 4);
  }

  /** One look over every live conversation; answers how many of this run's are still to come from an ending run. */
  private async sweep(): Promise<number> {
    this.guard();
    const listed = (await this.gateway.store.listLiveConversations()).filter((live) => !this.held.has(`${live.accountId}/${live.conversationId}`));
    // The heartbeats are read after the listing: an owner the listing shows had beaten before it claimed.
    const runs = new Map((await this.gateway.store.listPollerRuns()).map((run) => [run.runId, run]));
    const now = this.gateway.now();
    const decision = sweepDecision(listed, runs, { runId: this.runId, shard: this.options.shard, shards: this.options.shards, endsAt: this.options.endsAt }, now, {
      skewMs: this.skewMs,
      graceMs: Math.max(this.heartbeatMs, 1000),
    });
    // Ready before the handover: read each and open its session token, so its first poll waits for the claim only.
    for (const live of decision.incoming) {
      const key = `${live.accountId}/${live.conversationId}`;
      if (!this.prepared.has(key) && this.prepared.size + this.held.size < this.capacity) this.prepared.set(key, this.prepare(live.accountId, live.conversationId));
    }
    let next = 0;
    const claimer = async (): Promise<void> => {
      while (next < decision.claim.length && this.hasRoom()) {
        const { live, lapsedOwner } = decision.claim[next++]!;
        await this.claim(live.accountId, live.conversationId, lapsedOwner);
      }
    };
    await Promise.all(Array.from({ length: CLAIMS_AT_ONCE }, claimer));
    // A killed run's heartbeat, once nothing is held under it: otherwise every run would keep sweeping for it.
    await Promise.all(decision.forgotten.map((runId) => this.gateway.store.endPollerRun(runId).catch(() => undefined)));
    return decision.incoming.length;
  }

  /** The run ends: stop every poll, release every lease (the next run claims them), end the heartbeat. */
  private async handOver(): Promise<void> {
    this.prepared.clear();
    for (const held of this.held.values()) held.controller.abort();
    await Promise.allSettled([...this.held.values()].map((held) => held.done));
    if (this.killed) return;
    try {
      await this.gateway.store.endPollerRun(this.runId);
    } catch (error) {
      this.log.warn('poller heartbeat item not removed; it lapses on its own', { error });
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

  private async hold(held: Held, live: LiveConversation, ready: Promise<Ready | 'gone'>): Promise<void> {
    const { accountId, conversationId } = live;
    const signal = held.controller.signal;
    let ack = live.ack;
    let failures = 0;
    let first = true;
    let prepared = await ready.catch(() => undefined);
    try {
      while (!signal.aborted) {
        try {
          this.guard();
          prepared ??= await this.prepare(accountId, conversationId);
          if (prepared === 'gone') {
            await this.gateway.store.deleteLiveConversation(accountId, conversationId);
            return;
          }
          if (first) {
            const openedAt = this.gateway.now();
            if (live.releasedAt !== undefined) this.stats.handoverGapsMs.push(openedAt - live.releasedAt);
            else if (live.ack < 0) this.stats.firstPollMs.push(openedAt - live.startedAt);
            first = false;
          }
          this.stats.polls++;
          const answer = await prepared.session.poll(ack, this.pollTimeoutSeconds, { signal, waitMs: this.pollTimeoutSeconds * 1000 + 15_000 });
          failures = 0;
          if (!answer) continue; // 204: nothing within the timeout; the same ack again.
          const outcome = await this.apply(prepared.conversation, ack, answer);
          if (outcome === 'lost') return;
          ack = answer.sequence;
          if (outcome === 'ended') return;
        } catch (error) {
          if (signal.aborted || error instanceof Killed) return;
          const conversation = prepared && prepared !== 'gone' ? prepared.conversation : { accountId, conversationId };
          if (error instanceof PlatformError && error.status === 401) {
            this.stats.expired++;
            this.guard();
            await finishConversation(this.gateway, conversation as Conversation, 'session_expired', this.log);
            return;
          }
          if (error instanceof PlatformError && error.status === 403 && /SESSION_ENDED/i.test(error.platformCode ?? '')) {
            this.guard();
            await finishConversation(this.gateway, conversation as Conversation, 'system', this.log);
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
      if (!(error instanceof Killed)) this.log.error('poller stopped holding a conversation', { conversationId, error });
    } finally {
      if (!this.killed) {
        const released = await this.gateway.store.releaseConversationLease(accountId, conversationId, this.runId, this.gateway.now()).catch(() => false);
        if (released) this.stats.released++;
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
