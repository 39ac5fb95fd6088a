import { randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { Conversation, LiveConversation, PollerRun as PollerRunItem } from '../store/items';
import { adopterOf, handoverWaitMs, MAX_ADOPTION_CHAIN, takeover } from './lease-decisions';
import type { MessagingSettings } from './settings';
import * as store from '../store/store';

/**
 * Lease ownership of a poller run: its heartbeat (one write renews every lease), the fence (it stops
 * before a lease it could not renew may be taken), claims, adoption of ended runs' leases and their
 * renames. The sweep (poller-sweep.ts) decides what to take; the poll loop (poller.ts) holds it.
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
  /** Polls opened (200 and 204 answers count once each); on the Messaging API, reads of its streams. */
  polls: number;
  /** Messaging API event streams opened (a reconnect after a drop counts again). */
  streams: number;
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

export class Killed extends Error {
  override readonly name = 'Killed';
}

export interface Held {
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

export abstract class PollerLeases {
  readonly stats: PollerStats;
  protected readonly gateway: Gateway;
  protected readonly log: Logger;
  protected readonly options: PollerRunOptions;
  protected readonly runId: string;
  protected readonly capacity: number;
  protected readonly leaseMs: number;
  protected readonly heartbeatMs: number;
  protected readonly pollTimeoutSeconds: number;
  protected readonly random: () => number;
  protected readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  protected readonly held = new Map<string, Held>();
  protected readonly stop = new AbortController();
  protected killed = false;
  /** Set as the run ends at its round's end: the holds leave their leases for the one mark (handOver). */
  protected handingOver = false;
  /** Ended runs this run has listed since they ended (each is a reason to list once). */
  protected readonly listedAfterEnd = new Set<string>();
  /** Ended runs nobody adopted, listed once their wait had passed (a second reason to list). */
  protected readonly listedAfterWait = new Set<string>();
  /** Ended runs listed since they were marked to be claimed one by one. */
  protected readonly listedOneByOne = new Set<string>();
  /** The heartbeat write in flight, if any. */
  protected beating: Promise<void> = Promise.resolve();
  protected startedAt = 0;
  protected lastBeatSentAt = 0;
  protected readonly instanceUrls = new Map<string, Promise<string>>();
  protected readonly settings = new Map<string, Promise<MessagingSettings>>();

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
    this.stats = { runId: this.runId, claimed: 0, claimedOnNotice: 0, released: 0, handedOver: 0, adopted: 0, adoptedRuns: 0, polls: 0, streams: 0, delivered: 0, conflicts: 0, reconnects: 0, expired: 0, handoverGapsMs: [], adoptedHandoverGapsMs: [], firstPollMs: [], firstPollAcrossRoundsMs: [], fenced: false };
  }

  get id(): string {
    return this.runId;
  }

  /** Whether the run took any conversation (claimed or adopted). */
  protected get tookAny(): boolean {
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

  // ---- leases ----

  protected guard(): void {
    if (this.killed) throw new Killed('killed');
    // Past the point where a claimer may think our leases lapsed: stop before touching anything.
    if (this.lastBeatSentAt > 0 && this.gateway.now() > this.lastBeatSentAt + this.leaseMs - this.fenceMarginMs) this.fence();
    if (this.stats.fenced) throw new Killed('fenced');
  }

  /** How long before its leases could be taken a run stops polling: a heartbeat period or a quarter lease. */
  protected get fenceMarginMs(): number {
    return Math.max(this.heartbeatMs, this.leaseMs / 4);
  }

  protected fence(): void {
    if (this.stats.fenced) return;
    this.stats.fenced = true;
    this.log.error('poller could not renew its leases in time: it stops polling before they lapse', {});
    this.stop.abort();
    for (const held of this.held.values()) held.controller.abort();
  }

  /** Renews every lease; `lastBeatSentAt` moves only once the write succeeded (to when it was sent). */
  protected async beat(now: number): Promise<void> {
    if (this.killed) throw new Killed('killed');
    await store.beatPollerRun(this.gateway.table, { runId: this.runId, renewedAt: now, until: now + this.leaseMs, shard: this.options.shard });
    this.lastBeatSentAt = Math.max(this.lastBeatSentAt, now);
  }

  /**
   * Renews every lease at once. A run that could not renew in time stops polling before anyone
   * may take its conversations (their claimers wait for the lease plus a clock-skew margin).
   */
  protected async heartbeat(): Promise<void> {
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
  protected claiming = 0;

  /**
   * Tells the running fleet about a conversation this run could not keep. A notice only speeds up
   * the first poll (the next listing finds the conversation anyway), so a failed one does not stop
   * the run; it is logged, never silently dropped.
   */
  protected async tellFleet(accountId: string, conversationId: string, at: number): Promise<void> {
    await this.gateway.pollerNotices.tell({ accountId, conversationId, at }).catch((error: unknown) => this.log.warn('poller notice not sent; the next listing finds the conversation', { conversationId, error }));
  }

  protected hasRoom(): boolean {
    return this.held.size + this.claiming < this.capacity && !this.stop.signal.aborted;
  }

  /** Room for this many more conversations. */
  protected get room(): number {
    return this.stop.signal.aborted ? 0 : Math.max(0, this.capacity - this.held.size - this.claiming);
  }

  protected handoverWait(live: LiveConversation): number {
    return handoverWaitMs(live.releasedAt, this.gateway.now(), this.gateway.env.POLLER_HANDOVER_GRACE_SECONDS * 1000);
  }

  /** Claims a conversation and starts holding its poll; undefined if it is held, gone, or there is no room. */
  protected async claim(accountId: string, conversationId: string, lapsedOwner?: string, conversation?: Conversation, handedOverAt?: number): Promise<Held | undefined> {
    const key = `${accountId}/${conversationId}`;
    if (this.held.has(key) || !this.hasRoom()) return undefined;
    this.guard();
    const now = this.gateway.now();
    this.claiming++;
    let live: LiveConversation | undefined;
    try {
      live = await store.claimConversationLease(this.gateway.table, accountId, conversationId, {
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
  protected holdAdopted(live: LiveConversation, conversation: Conversation | undefined, endedAt: number | undefined): void {
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
  protected renameDeadline(held: Held): number {
    return held.live.leaseExpiresAt === undefined ? Number.POSITIVE_INFINITY : held.live.leaseExpiresAt - this.fenceMarginMs;
  }

  /** An adopted lease renamed to this run (once; false: someone else holds it now, stop polling it). */
  protected renamed(held: Held): Promise<boolean> {
    if (held.owner === this.runId) return Promise.resolve(true);
    held.renaming ??= (async () => {
      const { accountId, conversationId } = held.live;
      this.guard();
      const renamed = await store.claimConversationLease(this.gateway.table, accountId, conversationId, { owner: this.runId, now: this.gateway.now(), expiresAt: this.options.endsAt + this.leaseMs, lapsedOwner: held.owner });
      if (!renamed) return false;
      held.owner = this.runId;
      clearTimeout(held.renameDeadline);
      return true;
    })();
    return held.renaming;
  }

  /** Renames every adopted lease, a few side by side, while their first polls wait out the handover grace. */
  protected async renameAdopted(): Promise<void> {
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
  protected async claimTold(accountId: string, conversationId: string): Promise<Held | undefined> {
    const held = await this.claim(accountId, conversationId);
    if (held || !this.hasRoom()) return held;
    const live = await store.getLiveConversation(this.gateway.table, accountId, conversationId);
    if (!live?.leaseOwner || live.leaseOwner === this.runId) return undefined;
    const holder = await this.leaseHolder(live.leaseOwner, (runId) => store.getPollerRun(this.gateway.table, runId));
    if (holder.runId === this.runId) return undefined;
    const free = takeover(live, holder.run, this.gateway.now(), this.skewMs);
    return free?.lapsedOwner ? this.claim(accountId, conversationId, free.lapsedOwner, undefined, free.releasedAt) : undefined;
  }

  /**
   * The run holding a lease: its owner, or the run at the end of the owner's chain of adoptions
   * (an ended run adopted whole, perhaps by a run that ended and was adopted in turn). `chain` is
   * every run on the way, each of whose heartbeat items must stay while the lease names its start.
   */
  protected async leaseHolder(owner: string, runOf: (runId: string) => Promise<PollerRunItem | undefined>): Promise<{ runId: string; run?: PollerRunItem; chain: string[] }> {
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


  /** The clock-skew margin a claimer adds to another run's heartbeat before calling it lapsed. */
  protected get skewMs(): number {
    return Math.min(2000, this.leaseMs / 4);
  }

  /** Holds one conversation until it ends, is let go, or the run ends (the poll loop). */
  protected abstract hold(held: Held): Promise<void>;
}

export function period(heartbeatMs: number): number {
  return Math.max(heartbeatMs, 1000);
}

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
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
