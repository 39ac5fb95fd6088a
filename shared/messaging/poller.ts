import { PlatformError } from '../http/platform-error';
import { recordMetric } from '../metrics/gateway-metrics';
import type { ConversationTransport, ResumePosition } from './conversation-transport';
import { finishConversation, isLive, messagingInstanceUrl, messagingSettings } from './conversations';
import { reconnectDelayMs } from './lease-decisions';
import { applyEvents } from './message-application';
import { conversationTransport } from './transports';
import { type Held, Killed, type PollerStats } from './poller-leases';
import { PollerSweep } from './poller-sweep';
import type { MessagingSettings } from './settings';
import * as store from '../store/store';

export * from './lease-decisions';
export { messageOf } from './long-poll-messages';
export type { PollerRunOptions, PollerStats } from './poller-leases';

/**
 * One poller run: holds the reads of up to `capacity` live conversations for up to ~14 minutes,
 * then hands them over. It reads through the conversation's transport (conversation-transport.ts):
 * the spec's long-poll below, or a Messaging API event stream resumed by event id; the lease
 * ownership is poller-leases.ts, what a run takes poller-sweep.ts, applying events
 * message-application.ts. The spec's long-poll rules, per conversation:
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
export class PollerRun extends PollerSweep {
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


  /**
   * The run ends: stop every poll, then hand every conversation over at once. At its round's end the
   * run leaves its leases naming it and marks its heartbeat item ended (one write, not one release per
   * conversation); the next run takes them from that mark, after the handover grace. A fenced run has
   * released each lease already, and only removes its heartbeat.
   */
  protected async handOver(): Promise<void> {
    this.handingOver = !this.stats.fenced && !this.killed;
    for (const held of this.held.values()) held.controller.abort();
    await Promise.allSettled([...this.held.values()].map((held) => held.done));
    if (this.killed) return;
    // A heartbeat still in flight must not land after the mark and make the run look alive.
    await this.beating;
    try {
      if (this.stats.handedOver > 0 && !this.stats.fenced) await store.markPollerRunEnded(this.gateway.table, this.runId, this.gateway.now(), { shard: this.options.shard, held: this.stats.handedOver });
      else await store.endPollerRun(this.gateway.table, this.runId);
    } catch (error) {
      // Its leases lapse with its heartbeat instead (the next run claims them a lease later).
      this.log.warn('poller heartbeat item not updated at the run\'s end; its leases lapse on their own', { error });
    }
  }

  // ---- one conversation ----

  protected instanceUrl(accountId: string): Promise<string> {
    if (!this.instanceUrls.has(accountId)) {
      const url = messagingInstanceUrl(this.gateway, accountId);
      url.catch(() => this.instanceUrls.delete(accountId));
      this.instanceUrls.set(accountId, url);
    }
    return this.instanceUrls.get(accountId)!;
  }

  protected settingsOf(accountId: string): Promise<MessagingSettings> {
    if (!this.settings.has(accountId)) this.settings.set(accountId, messagingSettings(this.gateway, accountId));
    return this.settings.get(accountId)!;
  }

  protected async hold(held: Held): Promise<void> {
    const { live, controller } = held;
    const { accountId, conversationId } = live;
    const signal = controller.signal;
    // Where its events resume: the last sequence stored, and on the Messaging API that event's id.
    let position: ResumePosition = { sequence: live.ack, ...(live.lastEventId ? { eventId: live.lastEventId } : {}) };
    let failures = 0;
    let first = true;
    // Stopped holding for its own reason (ended, lost, expired, a fault), not because the run ended.
    let letGo = false;
    let transport: ConversationTransport | undefined;
    try {
      const conversation = held.conversation ?? (await store.getConversation(this.gateway.table, accountId, conversationId));
      if (!conversation || !isLive(conversation)) {
        letGo = true;
        await store.deleteLiveConversation(this.gateway.table, accountId, conversationId);
        return;
      }
      while (!signal.aborted) {
        try {
          this.guard();
          transport ??= await conversationTransport(this.gateway, conversation, conversation.instanceUrl ?? (await this.instanceUrl(accountId)), { settings: await this.settingsOf(accountId), ...(this.options.fetch ? { fetch: this.options.fetch } : {}) });
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
          const answer = await transport.read(position, { signal, waitMs: this.pollTimeoutSeconds * 1000 + 15_000 });
          failures = 0;
          if (!answer) continue; // Nothing within the timeout (a 204, or a quiet stream): the same position again.
          // An adopted lease names this run before anything is acknowledged under it.
          if (!(await this.renamed(held))) {
            letGo = true;
            return;
          }
          const outcome = await applyEvents({ gateway: this.gateway, log: this.log, runId: this.runId, settings: await this.settingsOf(accountId), guard: () => this.guard(), stats: this.stats }, conversation, position.sequence, answer);
          letGo = outcome !== 'ok';
          if (outcome === 'lost') return;
          position = answer.position;
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
      // The stream closes before the lease is let go or handed over: never two open on one conversation.
      transport?.close();
      if (transport?.name === 'messaging_api') this.stats.streams += transport.opened;
      if (this.handingOver && signal.aborted && !letGo && !this.stats.fenced && !this.killed) {
        // The run's end: the lease stays naming this run; its ended mark hands it over (handOver).
        this.stats.handedOver++;
      } else if (!this.killed) {
        const released = await store.releaseConversationLease(this.gateway.table, accountId, conversationId, held.owner, this.gateway.now()).catch(() => false);
        if (released) this.stats.released++;
        // Let go mid-round (a fault, or this run fenced itself): the running fleet is told, as for a new
        // conversation, rather than leaving it to the next listing. At the round's end the next round's first look takes it.
        if (released && (this.stats.fenced || !this.stop.signal.aborted)) {
          await this.tellFleet(accountId, conversationId, this.gateway.now());
        }
      }
    }
  }
}
