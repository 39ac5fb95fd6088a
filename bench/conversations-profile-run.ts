/**
 * `npx tsx bench/conversations-profile.ts`: where a new conversation's first poll spends its time.
 * Starts BENCH_CONVERSATIONS (default 300) conversations 25 at a time against the messaging
 * simulator, as `npm run bench -- conversations` does, and stamps each one's path from the outside
 * (wrapping the local gateway's store, vault, notice channel and state machines; no production code
 * changes): platform start → conversation stored → notice told → notice received → lease claimed →
 * session token opened → first poll (at the platform). Prints each step's p50/p99/max, the steps of
 * the slowest 1%, surge pollers asked for, and the event loop's delay while starting.
 * BENCH_LATENCY_MS adds that much to every platform call (the sandbox slow fault); BENCH_RUN_SECONDS
 * sets the round length (15 s; the bench's latency300 run has 7); BENCH_WINDOW_MS, agents' replies after the starts.
 * Run it under the shared lock, with the store's seam: `flock /tmp/bench.lock npx tsx bench/conversations-profile.ts`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { CLAIMED_ONE_BY_ONE } from '../shared/store/items';
import * as store from '../shared/store/store';
import { replaceOn, type StoreReplacements } from '../test/support/store-seam';
import { platformIdOf, startMessagingSandbox } from '../test/messaging/support';
import { percentile } from './statistics';
import { startConversation } from './conversations-world';

const CONVERSATIONS = Number(process.env.BENCH_CONVERSATIONS ?? 300);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 0);
const STARTERS = 25;

setMetricSink(() => {});
setLogSink(() => {});

type Step = 'requested' | 'answered' | 'stored' | 'told' | 'received' | 'claimStart' | 'claimed' | 'opened' | 'pollSent' | 'firstPoll';
const stamps = new Map<string, Partial<Record<Step, number>> & { owner?: string; platformStart?: number }>();
const stamp = (conversationId: string, step: Step, at = Date.now()) => {
  const entry = stamps.get(conversationId) ?? {};
  entry[step] ??= at;
  stamps.set(conversationId, entry);
};

const sandbox = await startMessagingSandbox({
  simulator: { pollSecondsToMs: 100, sessionTokenLifetimeMs: 24 * 3600 * 1000 },
  settings: { maxConcurrentConversations: 100_000 },
  dynamoInChildProcess: true,
  env: { POLLER_CAPACITY: '230', POLLER_RUN_SECONDS: process.env.BENCH_RUN_SECONDS ?? '15', POLLER_HEARTBEAT_SECONDS: '5', POLLER_LEASE_SECONDS: '20', POLLER_IDLE_SECONDS: '30', PLATFORM_TIMEOUT_MS: '20000' },
});
const local = sandbox.gateway.runtime.local;
const gateway = local.gateway;
if (LATENCY_MS > 0) sandbox.crm.faults.setRandom({ rate: 1, faults: [{ kind: 'slow', delayMs: LATENCY_MS }] });

// ---- stamps, from the outside: the store's calls through its seam (bench/store-seam.ts) ----
const replaced: StoreReplacements = {};
replaceOn(gateway.table, replaced);
const byPlatformId = new Map<string, string>();
replaced.putConversation = async (beneath, conversation) => {
  if (conversation.platformConversationId) byPlatformId.set(conversation.platformConversationId, conversation.conversationId);
  const result = await store.putConversation(beneath, conversation);
  stamp(conversation.conversationId, 'stored');
  return result;
};
// Handovers: each release (one by one mid-round; at a round's end, the run's end for all it held),
// then the next holder's claim, session opened and poll sent (ms, wall).
type Handover = { releasedAt: number; by: string; claimStart?: number; claimed?: number; opened?: number; pollSent?: number };
const handovers = new Map<string, Handover[]>();
const pending = (conversationId: string) => handovers.get(conversationId)?.at(-1);
replaced.releaseConversationLease = async (beneath, accountId, conversationId, owner, at) => {
  const released = await store.releaseConversationLease(beneath, accountId, conversationId, owner, at);
  if (released) handovers.set(conversationId, [...(handovers.get(conversationId) ?? []), { releasedAt: Date.now(), by: owner }]);
  return released;
};
const endedRuns = new Map<string, number>();
// Each run's first heartbeat (its start).
const runStarts: number[] = [];
const begun = new Set<string>();
replaced.beatPollerRun = async (beneath, run) => {
  if (!begun.has(run.runId)) {
    begun.add(run.runId);
    runStarts.push(Date.now());
  }
  return store.beatPollerRun(beneath, run);
};
replaced.markPollerRunEnded = async (beneath, runId, endedAt, handedOver) => {
  await store.markPollerRunEnded(beneath, runId, endedAt, handedOver);
  endedRuns.set(runId, Date.now());
};
// Ended runs taken whole (their conversations polled with no claim: the handover lines below are the
// conversations claimed one by one) or marked for one-by-one claims, with each write's time from the run's end.
const adoptions = { whole: [] as number[], oneByOne: [] as number[] };
replaced.adoptPollerRun = async (beneath, runId, by) => {
  const adopted = await store.adoptPollerRun(beneath, runId, by);
  const endedAt = endedRuns.get(runId);
  if (adopted && endedAt !== undefined) (by === CLAIMED_ONE_BY_ONE ? adoptions.oneByOne : adoptions.whole).push(Date.now() - endedAt);
  return adopted;
};
const listings: number[] = [];
replaced.listLiveConversations = async (beneath) => {
  const startedAt = Date.now();
  const listed = await store.listLiveConversations(beneath);
  listings.push(Date.now() - startedAt);
  return listed;
};
replaced.claimConversationLease = async (beneath, accountId, conversationId, lease) => {
  stamp(conversationId, 'claimStart');
  const endedAt = lease.lapsedOwner === undefined ? undefined : endedRuns.get(lease.lapsedOwner);
  const claimStart = Date.now();
  const live = await store.claimConversationLease(beneath, accountId, conversationId, lease);
  if (live && endedAt !== undefined) handovers.set(conversationId, [...(handovers.get(conversationId) ?? []), { releasedAt: endedAt, by: lease.lapsedOwner! }]);
  const handover = pending(conversationId);
  if (live && handover && handover.by !== lease.owner && handover.claimed === undefined) Object.assign(handover, { claimStart, claimed: Date.now() });
  if (live && !stamps.get(conversationId)?.claimed) {
    stamp(conversationId, 'claimed');
    stamps.get(conversationId)!.owner = lease.owner;
  }
  return live;
};
// Each fleet round's plan (a round change: its pollers end, the next round's start and list).
const plans: number[] = [];
replaced.claimFleetLease = async (beneath, lease) => {
  plans.push(Date.now());
  return store.claimFleetLease(beneath, lease);
};
const open = gateway.vault.open.bind(gateway.vault);
gateway.vault.open = (async (...args: Parameters<typeof open>) => {
  const opened = await open(...args);
  for (const name of Object.keys(opened)) {
    if (!name.startsWith('sessionToken:')) continue;
    const conversationId = name.slice('sessionToken:'.length);
    stamp(conversationId, 'opened');
    const handover = pending(conversationId);
    if (handover?.claimed !== undefined && handover.opened === undefined) handover.opened = Date.now();
  }
  return opened;
}) as typeof open;
// The first poll as the poller sends it (the platform stamps it as it arrives).
const fetchBefore = globalThis.fetch;
globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = String(input instanceof Request ? input.url : input);
  const polled = /\/conversations\/([^/?]+)\/messages\?ack=(-?\d+)/.exec(url);
  const conversationId = polled ? byPlatformId.get(decodeURIComponent(polled[1]!)) : undefined;
  if (conversationId && polled![2] === '-1') stamp(conversationId, 'pollSent');
  const handover = conversationId ? pending(conversationId) : undefined;
  if (handover?.claimed !== undefined && handover.pollSent === undefined) handover.pollSent = Date.now();
  return fetchBefore(input, init);
}) as typeof fetch;
const notices = local.pollerNotices;
const tell = notices.tell.bind(notices);
notices.tell = async (notice) => {
  stamp(notice.conversationId, 'told');
  return tell(notice);
};
const receive = notices.receive.bind(notices);
const batches: number[] = [];
notices.receive = async (options) => {
  const received = await receive(options);
  if (received.length) batches.push(received.length);
  for (const item of received) stamp(item.notice.conversationId, 'received');
  return received;
};
const fleets: Array<{ at: number; input: Record<string, unknown> }> = [];
const machines = local.stateMachines;
const startFleet = machines.startFleet.bind(machines);
machines.startFleet = async (input) => {
  fleets.push({ at: Date.now(), input });
  return startFleet(input);
};

function row(label: string, values: number[]): string {
  return `${label.padEnd(28)} n=${String(values.length).padStart(4)}  p50 ${String(percentile(values, 50)).padStart(6)}  p90 ${String(percentile(values, 90)).padStart(6)}  p99 ${String(percentile(values, 99)).padStart(6)}  max ${String(Math.max(0, ...values)).padStart(6)}`;
}

// ---- the starts ----
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const ids: string[] = [];
let next = 0;
const t0 = Date.now();
process.stdout.write(`t0 epoch ms ${t0}\n`);
await Promise.all(
  Array.from({ length: STARTERS }, async () => {
    while (next < CONVERSATIONS) {
      next++;
      const requested = Date.now();
      const { id } = await startConversation(sandbox);
      stamp(id, 'requested', requested);
      stamp(id, 'answered');
      ids.push(id);
    }
  }),
);
const startSeconds = (Date.now() - t0) / 1000;
loop.disable();

// BENCH_WINDOW_MS: agents then reply every 3-15 s for that long; each message's delivery (platform
// emits → message.received published) is split by whether a round change (a plan) came within 3 s before it.
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 0);
const deliveryLines: string[] = [];
if (WINDOW_MS > 0) {
  const published = new Map<string, number>();
  local.bus.subscribe((event) => {
    if (event.type !== 'message.received') return;
    const key = `${(event.data.conversation as { id: string }).id}:${(event.data.message as { sequence: number }).sequence}`;
    if (!published.has(key)) published.set(key, Date.now());
  });
  const platformOf = new Map<string, string>();
  for (const id of ids) platformOf.set(id, await platformIdOf(sandbox, id));
  const windowEnd = Date.now() + WINDOW_MS;
  await Promise.all(
    ids.map(async (id) => {
      const platformId = platformOf.get(id)!;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 1000));
      sandbox.crm.messaging.agentJoins(platformId, 'Agent');
      while (Date.now() < windowEnd - 1000) {
        await new Promise((resolve) => setTimeout(resolve, 3000 + Math.random() * 12_000));
        if (Date.now() < windowEnd - 1000) sandbox.crm.messaging.agentSays(platformId, `reply at ${Date.now()}`);
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const near: number[] = [];
  const away: number[] = [];
  for (const id of ids) {
    const platformId = platformOf.get(id)!;
    const count = sandbox.crm.messaging.transcript(platformId).filter((e) => e.role !== 'EndUser').length;
    for (let sequence = 1; sequence <= count; sequence++) {
      const at = published.get(`${id}:${sequence}`);
      const emittedAt = sandbox.crm.messaging.emittedAtOf(platformId, sequence);
      if (at === undefined || emittedAt === undefined) continue;
      (plans.some((plan) => plan <= emittedAt && emittedAt - plan < 3000) ? near : away).push(at - emittedAt);
    }
  }
  deliveryLines.push(row('delivery, all', [...near, ...away]), row('delivery, <3 s after a plan', near), row('delivery, otherwise', away));
}
// Let the last first polls open.
await new Promise((resolve) => setTimeout(resolve, 3000));

for (const id of ids) {
  const timings = sandbox.crm.messaging.pollTimings(await platformIdOf(sandbox, id));
  const entry = stamps.get(id)!;
  entry.platformStart = timings.startedAt;
  if (timings.firstPollAt !== undefined) entry.firstPoll = timings.firstPollAt;
}

// ---- report ----
const order: Step[] = ['stored', 'told', 'received', 'claimStart', 'claimed', 'opened', 'pollSent', 'firstPoll'];
const lines: string[] = [];
lines.push(`${ids.length} conversations started ${STARTERS} at a time in ${startSeconds.toFixed(1)} s (${((startSeconds * 1000) / ids.length).toFixed(1)} ms each), latency ${LATENCY_MS} ms`);
lines.push(`event loop delay while starting: p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`);
lines.push(`notice batches received: ${batches.length}, sizes p50 ${percentile(batches, 50)} max ${Math.max(0, ...batches)}`);
lines.push(`fleet executions started: ${fleets.map((f) => `+${f.at - t0}ms ${JSON.stringify(f.input)}`).join('; ')}`);
const owners = new Map<string, number>();
for (const id of ids) owners.set(stamps.get(id)!.owner ?? '-', (owners.get(stamps.get(id)!.owner ?? '-') ?? 0) + 1);
lines.push(`first claimed by: ${[...owners.values()].join(', ')} (runs)`);
const crossed = (id: string) => {
  const e = stamps.get(id)!;
  return plans.some((at) => at > e.platformStart! && at < (e.firstPoll ?? Infinity));
};
lines.push(`fleet plans (round changes) at: ${plans.map((at) => `+${at - t0}ms`).join(', ')}; conversations whose first poll waited across one: ${ids.filter(crossed).length}`);
const within = ids.filter((id) => !crossed(id));
lines.push(row('within a round: start → poll', within.map((id) => stamps.get(id)!.firstPoll! - stamps.get(id)!.platformStart!)));
const afterPlan = (id: string) => plans.some((at) => at <= stamps.get(id)!.platformStart! && stamps.get(id)!.platformStart! - at < 3000);
lines.push(row('within, started ≥3 s after a plan', within.filter((id) => !afterPlan(id)).map((id) => stamps.get(id)!.firstPoll! - stamps.get(id)!.platformStart!)));
lines.push(row('within, started <3 s after a plan', within.filter(afterPlan).map((id) => stamps.get(id)!.firstPoll! - stamps.get(id)!.platformStart!)));
lines.push(row('platform start → first poll', ids.map((id) => (stamps.get(id)!.firstPoll ?? Infinity) - stamps.get(id)!.platformStart!)));
let previous: Step | 'platformStart' = 'platformStart';
for (const step of order) {
  const from = previous;
  lines.push(row(`${from} → ${step}`, within.map((id) => stamps.get(id)!).filter((e) => e[step] !== undefined && e[from] !== undefined).map((e) => e[step]! - e[from]!)));
  previous = step;
}
lines.push(row('stored → answered', ids.map((id) => stamps.get(id)!).map((e) => e.answered! - e.stored!)));
// The slowest 1%: where their time went.
/** From a conversation's start at the platform to its first poll there (Infinity if none came). */
const firstPollWait = (id: string) => (stamps.get(id)!.firstPoll ?? Infinity) - stamps.get(id)!.platformStart!;
const slowestFirst = (some: string[]) => [...some].sort((a, b) => firstPollWait(b) - firstPollWait(a));
/** Each step's time from the platform's start, for one conversation's line. */
const stepsOf = (e: NonNullable<ReturnType<typeof stamps.get>>) => order.map((step) => `${step} ${e[step] === undefined ? '-' : e[step]! - e.platformStart!}`).join(', ');
const slowest = slowestFirst(within).slice(0, Math.max(3, Math.ceil(ids.length / 100)));
lines.push('slowest first polls within a round (ms from platform start at each step):');
for (const id of slowest) {
  const e = stamps.get(id)!;
  lines.push(`  ${id} +${e.platformStart! - t0}ms: ${stepsOf(e)}`);
}
// Those whose first poll waited across a round change: the run ends and starts around them.
const across = slowestFirst(ids.filter(crossed)).slice(0, 5);
lines.push(`slowest first polls across a round change (ms from platform start; the plan, the ended runs' marks and the next runs' first heartbeats around it):`);
for (const id of across) {
  const e = stamps.get(id)!;
  const plan = plans.find((at) => at > e.platformStart!)!;
  const ends = [...endedRuns.values()].filter((at) => Math.abs(at - plan) < 10_000).map((at) => at - e.platformStart!);
  const begins = runStarts.filter((at) => Math.abs(at - plan) < 10_000).map((at) => at - e.platformStart!);
  lines.push(`  ${id}: ${stepsOf(e)}; plan ${plan - e.platformStart!}, runs ended ${ends.join(' ')}, runs began ${begins.join(' ')}`);
}
// Handovers taken up by another run: where the gap (release → poll sent) went.
const taken = [...handovers.values()].flat().filter((h) => h.pollSent !== undefined && h.claimed !== undefined);
const pollStats = sandbox.crm.messaging.pollStats();
const handoverLines = [
  `handovers: ${taken.length} taken up of ${[...handovers.values()].flat().length} releases; live listings ${listings.length}, ms p50 ${percentile(listings, 50)} max ${Math.max(0, ...listings)}; polls open at once on one conversation: ${pollStats.maxPerConversation} (409s ${pollStats.conflicts})`,
];
handoverLines.push(`ended runs adopted whole ${adoptions.whole.length} (written ms after the run's end p50 ${percentile(adoptions.whole, 50)} max ${Math.max(0, ...adoptions.whole)}), claimed one by one ${adoptions.oneByOne.length}; the lines below are conversations claimed (mid-round releases, one-by-one runs, lapsed runs)`);
handoverLines.push(row('release → poll sent', taken.map((h) => h.pollSent! - h.releasedAt)));
handoverLines.push(row('release → claim sent', taken.map((h) => h.claimStart! - h.releasedAt)));
handoverLines.push(row('claim sent → claimed', taken.map((h) => h.claimed! - h.claimStart!)));
handoverLines.push(row('claimed → session opened', taken.filter((h) => h.opened !== undefined).map((h) => h.opened! - h.claimed!)));
handoverLines.push(row('claimed → poll sent', taken.map((h) => h.pollSent! - h.claimed!)));
// Each round change: the previous round's releases (first, last) and the new runs' first claim, relative to the plan.
const runFirstClaim = new Map<string, number>();
for (const h of [...handovers.values()].flat()) if (h.claimStart !== undefined) runFirstClaim.set(h.by, Math.min(runFirstClaim.get(h.by) ?? Infinity, h.releasedAt));
const releases = [...handovers.values()].flat().map((h) => h.releasedAt).sort((a, b) => a - b);
for (const [index, plan] of plans.entries()) {
  const before = releases.filter((at) => at <= plan + 5000 && at > (plans[index - 1] ?? 0) + 3000);
  const claims = [...handovers.values()].flat().filter((h) => h.claimStart !== undefined && h.claimStart >= plan && h.claimStart < (plans[index + 1] ?? Infinity)).map((h) => h.claimStart!);
  if (before.length) handoverLines.push(`  plan +${plan - t0}ms: ${before.length} released from ${before[0]! - plan} to ${before.at(-1)! - plan} ms; their claims from ${Math.min(...claims) - plan} to ${percentile(claims.map((at) => at - plan), 99)} ms (p99)`);
}
const worst = [...taken].sort((a, b) => b.pollSent! - b.releasedAt - (a.pollSent! - a.releasedAt)).slice(0, 5);
for (const h of worst) handoverLines.push(`  released +${h.releasedAt - t0}ms: claim sent +${h.claimStart! - h.releasedAt}, claimed +${h.claimed! - h.releasedAt}, opened ${h.opened === undefined ? '-' : `+${h.opened - h.releasedAt}`}, poll sent +${h.pollSent! - h.releasedAt}`);
process.stdout.write(`${[...lines, ...deliveryLines, ...handoverLines].join('\n')}\n`);
await sandbox.stop();
process.exit(0);
