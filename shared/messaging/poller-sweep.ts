import { CLAIMED_ONE_BY_ONE, type Conversation, type LiveConversation, type PollerRun as PollerRunItem } from '../store/items';
import { plannedPerPoller } from './fleet';
import { accountSpread, adoptionPlan, noticesToClaim, preferredShard, surgeWanted, takeover } from './lease-decisions';
import { period, PollerLeases } from './poller-leases';
import * as store from '../store/store';

/**
 * What a poller run takes: conversations the fleet is told of (notices), and what a listing finds
 * nobody holds (its sweep), adopting ended runs whole where it can.
 */
export abstract class PollerSweep extends PollerLeases {
  /** New conversations, as the start route tells the fleet: the first poll opens within a second. */
  protected async noticeLoop(): Promise<void> {
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
  protected async sweepLoop(): Promise<void> {
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

  /**
   * Other runs whose heartbeat lapsed (killed, or fenced), or that ended since this run last
   * listed: their conversations are free to take, or to adopt. An ended run is a reason to list
   * once as it ends (its own slot's next run adopts it), once more when nobody adopted it within
   * the wait (another run adopts it), and once when it is to be claimed one by one.
   */
  protected async lapsedRuns(now: number): Promise<string[]> {
    this.guard();
    const runs = await store.listPollerRuns(this.gateway.table);
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
  protected async adoptEndedRuns(runs: PollerRunItem[], runOf: Map<string, Promise<PollerRunItem | undefined>>, now: number): Promise<Set<string>> {
    const marked = new Set<string>();
    const { shard, shards } = this.options;
    const plan = adoptionPlan({ runs, shard, shards, room: this.room, capacity: this.capacity, keepFree: this.capacity - plannedPerPoller(this.capacity), now, waitMs: period(this.heartbeatMs) });
    const settle = async (runId: string, by: string) => {
      if (await store.adoptPollerRun(this.gateway.table, runId, by)) {
        const run = runs.find((candidate) => candidate.runId === runId)!;
        runOf.set(runId, Promise.resolve({ ...run, adoptedBy: by }));
        if (by === this.runId) this.stats.adoptedRuns++;
        // The others cannot tell it will not be adopted (a bigger one they mark themselves).
        else if (plan.noRoom.includes(runId)) marked.add(runId);
      } else {
        // Another run adopted it (or marked it) first: look again at what it decided.
        runOf.set(runId, store.getPollerRun(this.gateway.table, runId));
      }
    };
    await Promise.all([...plan.adopt.map((runId) => settle(runId, this.runId)), ...plan.oneByOne.map((runId) => settle(runId, CLAIMED_ONE_BY_ONE))]);
    return marked;
  }

  protected async sweep(first: boolean): Promise<void> {
    this.guard();
    const now = this.gateway.now();
    const skewMs = this.skewMs;
    const waitMs = period(this.heartbeatMs);
    // The runs' heartbeats, read once before the listing: which ended runs this listing covers (an
    // ended run's leases all name it before its item says it ended), who holds what, and (after the
    // claims) which lapsed or ended runs' items can go. Neither comes back to life.
    const runs = (await store.listPollerRuns(this.gateway.table)).filter((run) => run.runId !== this.runId);
    const runOf = new Map<string, Promise<PollerRunItem | undefined>>(runs.map((run) => [run.runId, Promise.resolve(run)]));
    const ownerOf = (runId: string) => {
      if (!runOf.has(runId)) runOf.set(runId, store.getPollerRun(this.gateway.table, runId));
      return runOf.get(runId)!;
    };
    // Each lease owner's holder, resolved once a sweep (after the adoptions below, which it reads).
    const holders = new Map<string, ReturnType<PollerLeases['leaseHolder']>>();
    const holderOf = (owner: string) => {
      if (!holders.has(owner)) holders.set(owner, this.leaseHolder(owner, ownerOf));
      return holders.get(owner)!;
    };
    const listed = await store.listLiveConversations(this.gateway.table);
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
    const conversations = reading.length > 0 ? await store.getConversations(this.gateway.table, reading) : new Map<string, Conversation>();
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
    await Promise.all(gone.map((run) => store.endPollerRun(this.gateway.table, run.runId).catch(() => undefined)));
  }
}
