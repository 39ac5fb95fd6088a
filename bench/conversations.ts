import { key } from '../shared/store/table';
import { readFileSync } from 'node:fs';
import { GatewayEnvironment } from '../shared/config';
import { setLogSink } from '../shared/log/logger';
import { MAX_POLLER_SHARDS, shardCount } from '../shared/messaging/fleet';
import { LIVE_BUCKETS } from '../shared/store/table';
import type { GatewayEvent } from '../shared/events/gateway-event';
import { connectMessagingSandbox, platformIdOf } from '../test/messaging/support';
import { benchPollerMemory } from './conversations-memory';
import { SimulatorProcess, killBusiestPoller, startConversations } from './conversations-world';
import { sseScenario } from './conversations-sse';
import type { Figures } from './results-file';
import { percentile, round } from './statistics';

/**
 * `npm run bench -- conversations`: many simultaneous conversations against the messaging
 * simulator (in its own process, bench/conversations-simulator.ts) through the local runtime (the deployed lifecycle and fleet definitions in a local
 * interpreter, the real poller code), agents replying at random intervals, one poller killed part
 * way (the fleet's retry starts another), handovers every few seconds. Then a cost model from what
 * the run counted, at AWS list prices.
 *
 * Time: only the long-poll's wait is compressed. The simulator turns `timeout=30` into
 * 30 × POLL_MS_PER_SECOND ms, so one "platform second" is POLL_MS_PER_SECOND ms of wall time: an
 * idle conversation's polls per real hour are its polls per 3,600 platform seconds. Runs, leases and
 * heartbeats are shortened directly (seconds given below) so that handovers and a lapse happen
 * within the run; the cost model uses the production values.
 */

const POLL_MS_PER_SECOND = 100;
/** How long after a fleet plan a start counts as during the round change (bench/conversations-profile.ts: its first polls wait seconds behind the handover). */
const ROUND_CHANGE_MS = 3_000;

// AWS list prices (us-east-1, arm64 Lambda, on-demand DynamoDB, standard Step Functions).
const PRICE = {
  lambdaGbSecond: 0.0000133334,
  lambdaInvocation: 0.2 / 1e6,
  stateTransition: 0.025 / 1000,
  dynamoWrite: 0.625 / 1e6,
  dynamoRead: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  kmsRequest: 0.03 / 1e4,
  eventBridgeEvent: 1 / 1e6,
};
const defaults = GatewayEnvironment.parse({});
/** Production values the model uses (shared/config.ts defaults, lib/conversations.ts). */
const PRODUCTION = {
  pollerGb: 128 / 1024,
  runSeconds: defaults.POLLER_RUN_SECONDS,
  heartbeatSeconds: defaults.POLLER_HEARTBEAT_SECONDS,
  capacity: defaults.POLLER_CAPACITY,
  sweepSeconds: defaults.POLLER_SWEEP_SECONDS,
  pollTimeoutSeconds: 30,
  noticeWaitSeconds: 20,
  liveBuckets: LIVE_BUCKETS,
  /** A live conversation's lease item (keys, owner, expiry, ack, times), bytes: what a full sweep reads per conversation. */
  liveItemBytes: 200,
  /** Accounts the live conversations belong to (the reference workload's, bench/cost.ts). */
  accounts: 100,
  /**
   * Shared session-token keys one account's live conversations span: one per sealing container and
   * hour (shared/vault/vault.ts SHARED_KEY_MAX_AGE_MS); two assumed.
   */
  sessionKeysPerAccount: 2,
  /** Fleet state transitions a round costs besides one per poller (lib/conversations.ts: Plan, Any active conversations?, Poll shards, Next round). */
  transitionsPerRound: 4,
};

interface ScenarioOptions {
  conversations: number;
  windowMs: number;
  latencyMs: number;
  kill: boolean;
}

interface ScenarioResult {
  figures: Figures;
  counts: { conversations: number; pollers: number; writes: number; messages: number; windowMs: number; polls: number };
}

async function scenario(options: ScenarioOptions): Promise<ScenarioResult> {
  // The platform in its own process, as in production: its 1,000 conversations' polls and the agents
  // do not take the gateway's event loop (they did until this was moved, and the gateway's first
  // polls and deliveries waited behind them).
  const crm = await SimulatorProcess.start({ pollSecondsToMs: POLL_MS_PER_SECOND, sessionTokenLifetimeMs: 24 * 3600 * 1000 });
  const sandbox = await connectMessagingSandbox(crm, crm.world(), {
    settings: { maxConcurrentConversations: 100_000 },
    dynamoInChildProcess: true,
    env: {
      POLLER_CAPACITY: String(PRODUCTION.capacity),
      POLLER_RUN_SECONDS: String(Math.round(options.windowMs / 3000)),
      // Production heartbeat and lease: a poller lagging under this machine's load keeps its leases as it would in AWS.
      POLLER_HEARTBEAT_SECONDS: String(PRODUCTION.heartbeatSeconds),
      POLLER_LEASE_SECONDS: '20',
      POLLER_IDLE_SECONDS: '30',
      PLATFORM_TIMEOUT_MS: '20000',
    },
  });
  const machines = sandbox.gateway.runtime.local.stateMachines;
  const local = sandbox.gateway.runtime.local;

  // Count table writes (the cost model's DynamoDB line).
  const commands = new Map<string, number>();
  local.dynamo.client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      commands.set(name, (commands.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchCount' },
  );
  // Every published message.received: when, and how often per (conversation, sequence).
  const published = new Map<string, number[]>();
  const platformOf = new Map<string, string>();
  local.bus.subscribe((event: GatewayEvent) => {
    if (event.type !== 'message.received') return;
    const key = `${(event.data.conversation as { id: string }).id}:${(event.data.message as { sequence: number }).sequence}`;
    published.set(key, [...(published.get(key) ?? []), Date.now()]);
  });
  // Each fleet round's plan: a round change (every run hands over; the next round's start, list and claim),
  // seen as its claim of the fleet lease (an UpdateItem of the fleet's item that sets its execution) leaves for the table.
  const plans: number[] = [];
  const table = local.gateway.table;
  const client = table.client;
  const fleetPk = key.fleet().pk;
  table.client = {
    send: (command) => {
      const input = command.input as { Key?: { pk?: { S?: string } }; UpdateExpression?: string };
      if (command.operation === 'UpdateItem' && input.Key?.pk?.S === fleetPk && input.UpdateExpression?.startsWith('SET executionId')) plans.push(Date.now());
      return client.send(command);
    },
  };
  if (options.latencyMs > 0) await crm.call({ op: 'randomFaults', random: { rate: 1, faults: [{ kind: 'slow', delayMs: options.latencyMs }] } });

  const heapBefore = process.memoryUsage().heapUsed;
  const ids: string[] = [];
  const startedAt = Date.now();
  const starts = await startConversations(sandbox, options.conversations, 25, async (id) => {
    ids.push(id);
    platformOf.set(id, await platformIdOf(sandbox, id));
  });
  const startMs = Date.now() - startedAt;

  // Agents join within a second, then reply every 3-15 s until the window closes (in the platform's process).
  const windowStart = Date.now();
  const windowEnd = windowStart + options.windowMs;
  const platformIds = ids.map((id) => platformOf.get(id)!);
  const agents = crm.call({ op: 'agents', platformIds, untilMs: windowEnd });
  const killed = options.kill ? await killBusiestPoller(machines, options.windowMs) : 0;
  await agents;
  const heapDuring = process.memoryUsage().heapUsed;
  const pollersDuring = machines.pollers().length;

  // Everything emitted must arrive: wait for the stragglers (a killed run's conversations lapse first).
  const emitted = async () => (await crm.report(platformIds)).emitted.reduce((sum, times) => sum + times.length, 0);
  const deadline = Date.now() + 30_000;
  while (published.size < (await emitted()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
  const windowMs = Date.now() - windowStart;

  // What the platform emitted for the gateway (agent and system events), and when; what it saw of the polls.
  const report = await crm.report(platformIds);
  let lost = 0;
  const delivery: number[] = [];
  ids.forEach((id, index) => {
    report.emitted[index]!.forEach((emittedAt, at) => {
      const times = published.get(`${id}:${at + 1}`);
      if (!times) lost++;
      else if (emittedAt > 0) delivery.push(times[0]! - emittedAt);
    });
  });
  const duplicated = [...published.values()].reduce((sum, times) => sum + times.length - 1, 0);
  const timings = report.timings;
  const firstPoll = timings.map((t) => (t.firstPollAt ?? Infinity) - t.startedAt);
  // Started within ROUND_CHANGE_MS after a plan: in the middle of a round change (15 s rounds here, 840 s in production).
  const duringRoundChange = timings.map((t) => plans.some((at) => at <= t.startedAt && t.startedAt - at < ROUND_CHANGE_MS));
  const firstPollOutsideRoundChanges = firstPoll.filter((_, i) => !duringRoundChange[i]);
  const stats = report.stats;
  const runStats = machines.finishedPollers.concat(machines.pollers().map((run) => run.stats));
  const handoverGaps = runStats.flatMap((run) => run.handoverGapsMs);
  const adoptedGaps = runStats.flatMap((run) => run.adoptedHandoverGapsMs);
  const claimedGaps = runStats.flatMap((run) => {
    const adopted = [...run.adoptedHandoverGapsMs];
    return run.handoverGapsMs.filter((gap) => {
      const at = adopted.indexOf(gap);
      if (at < 0) return true;
      adopted.splice(at, 1);
      return false;
    });
  });
  // First polls as the pollers saw them: of conversations started while a round ran, and of those started between rounds.
  const acrossRounds = runStats.flatMap((run) => run.firstPollAcrossRoundsMs);
  const withinRound = runStats.flatMap((run) => run.firstPollMs);
  const polls = timings.reduce((sum, t) => sum + t.polls, 0);
  const messages = published.size;
  const writes = ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].reduce((sum, name) => sum + (commands.get(name) ?? 0), 0);
  const platformSecondsInWindow = windowMs / POLL_MS_PER_SECOND;

  const figures: Figures = {
    polls_per_conversation_max: stats.maxPerConversation,
    http_409: stats.conflicts,
    lost,
    duplicated,
    first_poll_ms_p99: round(percentile(firstPoll, 99)),
    // Those started more than ROUND_CHANGE_MS after a round's plan, and the share of starts that fell in a round change.
    first_poll_ms_p99_outside_round_changes: round(percentile(firstPollOutsideRoundChanges, 99)),
    first_poll_round_change_share: round(1 - firstPollOutsideRoundChanges.length / Math.max(1, firstPoll.length), 3),
    // The same from the pollers' side, split: started while a round ran (a running poller takes the notice) ...
    first_poll_ms_p99_within_round: round(percentile(withinRound, 99)),
    // ... and started between rounds (no poller takes notices until the next round's start): their share and worst.
    first_poll_across_rounds_share: round(acrossRounds.length / Math.max(1, acrossRounds.length + withinRound.length), 3),
    first_poll_ms_max_across_rounds: round(Math.max(0, ...acrossRounds)),
    delivery_ms_p50: round(percentile(delivery, 50)),
    delivery_ms_p99: round(percentile(delivery, 99)),
    handover_gap_ms_max: round(Math.max(0, ...handoverGaps)),
    handover_gap_ms_p50: round(percentile(handoverGaps, 50)),
    handovers: handoverGaps.length,
    // Split by how the next run took them: adopting the ended run whole, or claiming lease by lease.
    handovers_adopted: adoptedGaps.length,
    handover_gap_ms_max_adopted: round(Math.max(0, ...adoptedGaps)),
    handover_gap_ms_max_claimed: round(Math.max(0, ...claimedGaps)),
    // The killed run's conversations: the longest a conversation had no poll open (lease lapse + sweep).
    kill_gap_ms_max: round(Math.max(0, ...timings.map((t) => t.maxGapMs))),
    killed_run_conversations: killed,
    // The whole gateway process (1,000 lifecycle executions, every poller; the platform runs in its own): an upper bound; memory_kb_per_conversation is the poller's own.
    memory_kb_per_conversation_upper_bound: round(Math.max(0, heapDuring - heapBefore) / 1024 / ids.length, 1),
    // Calls in real time: polls scale with the compressed timeout, so per platform hour.
    platform_calls_per_hour: round(((polls + messages * 0) / ids.length) * (3600 / platformSecondsInWindow), 1),
    start_ms_per_conversation: round(startMs / ids.length, 2),
    start_retries: starts.retries,
    starts_throttled: starts.throttled,
    pollers: pollersDuring,
  };
  await sandbox.stop();
  return { figures, counts: { conversations: ids.length, pollers: pollersDuring, writes, messages, windowMs, polls } };
}

/**
 * Cost per conversation-hour of holding conversations (no messages) with production settings, for
 * `live` conversations held `perPoller` to a poller; and per message. Every line is something the
 * code does (docs/conversations.md, "Conversation cost").
 */
export function costModel(perPoller: number, live: number, writesPerMessage: number): Figures {
  const p = PRODUCTION;
  const rounds = 3600 / p.runSeconds;
  const pollers = Math.max(1, Math.ceil(live / perPoller));
  const perPollerHour = {
    lambda: p.pollerGb * 3600 * PRICE.lambdaGbSecond + rounds * PRICE.lambdaInvocation,
    transitions: rounds * (1 + p.transitionsPerRound / pollers) * PRICE.stateTransition,
    // One heartbeat write and one (strongly consistent) read of the runs' heartbeats per period, and
    // at each round's end the write marking the run ended (its hand-over of everything it held) and
    // the next run's write adopting it.
    heartbeats: (3600 / p.heartbeatSeconds) * (PRICE.dynamoWrite + PRICE.dynamoRead) + rounds * 2 * PRICE.dynamoWrite,
    // A full listing every POLLER_SWEEP_SECONDS: one query per live bucket (each at least one read unit,
    // 4 KB a unit, strongly consistent), then each owner's heartbeat and the runs' heartbeats once.
    sweeps: (3600 / p.sweepSeconds) * (p.liveBuckets * Math.max(1, Math.ceil((live * p.liveItemBytes) / p.liveBuckets / 4096)) + pollers + 1) * PRICE.dynamoRead,
    notices: (3600 / p.noticeWaitSeconds) * PRICE.sqsRequest,
  };
  const perConversationHour = {
    // Each handover: the adopting run's rename of the lease (after its first poll) and the conversation
    // read (batched: the same read units); the ending run releases nothing one by one (its ended mark,
    // per poller above).
    handovers: rounds * (PRICE.dynamoWrite + PRICE.dynamoRead),
    // And the session tokens opened again: one KMS Decrypt per shared key a run takes over. Runs prefer
    // whole accounts (poller.ts preferredShard), so a run holds about accounts / pollers accounts (+1
    // spilled over), each with its shared keys; the instance address is kept with the conversation.
    kms: (rounds * PRICE.kmsRequest * Math.min(p.accounts, Math.ceil(p.accounts / pollers) + 1) * p.sessionKeysPerAccount) / perPoller,
  };
  const pollerShare = Object.values(perPollerHour).reduce((a, b) => a + b, 0) / perPoller;
  const holding = pollerShare + perConversationHour.handovers + perConversationHour.kms;
  // Naive: one Lambda (same memory) waits on each conversation's poll, one state transition per poll.
  const pollsPerHour = 3600 / p.pollTimeoutSeconds;
  const naive = (gb: number) => gb * 3600 * PRICE.lambdaGbSecond + pollsPerHour * (PRICE.stateTransition + PRICE.lambdaInvocation);
  return {
    cost_per_hour_usd: round(holding, 8),
    cost_poller_gb_seconds_per_hour_usd: round(perPollerHour.lambda / perPoller, 8),
    cost_table_per_hour_usd: round((perPollerHour.heartbeats + perPollerHour.sweeps) / perPoller + perConversationHour.handovers, 8),
    cost_kms_per_hour_usd: round(perConversationHour.kms, 8),
    naive_cost_per_hour_usd: round(naive(p.pollerGb), 6),
    naive_256mb_cost_per_hour_usd: round(naive(0.25), 6),
    cost_ratio: round(naive(p.pollerGb) / holding, 0),
    cost_ratio_vs_256mb: round(naive(0.25) / holding, 0),
    cost_per_message_usd: round(writesPerMessage * PRICE.dynamoWrite + PRICE.eventBridgeEvent, 8),
    conversations_per_poller: round(perPoller, 1),
  };
}

/**
 * The same scenario over Messaging for In-App and Web (`conversations.sse.*`). BENCH_CONVERSATIONS_SSE
 * sets how many (default as the long-poll's); BENCH_CONVERSATIONS_TRANSPORTS=messaging_api runs only
 * these, keeping the long-poll figures of the last run (bench/results.json) and saying so.
 */
async function benchSse(conversations: number): Promise<{ figures: Figures; notes: string[] }> {
  const sse = await sseScenario({ conversations, windowMs: 45_000, latencyMs: 0, kill: true });
  const latency = await sseScenario({ conversations: Math.min(200, conversations), windowMs: 20_000, latencyMs: 300, kill: false });
  const figures: Figures = {};
  for (const [key, value] of Object.entries(sse.figures)) figures[`conversations.sse.${key}`] = value;
  for (const key of ['lost', 'duplicated', 'streams_per_conversation_max', 'first_event_ms_p99']) figures[`conversations.sse.latency300.${key}`] = latency.figures[key]!;
  const writesPerMessage = sse.counts.writes / Math.max(1, sse.counts.messages);
  figures['conversations.sse.table_writes_per_message_upper_bound'] = round(writesPerMessage, 2);
  // Holding a stream costs the gateway what holding a poll does (the poller's time, heartbeats, sweeps, handovers, token keys).
  const live = sse.counts.conversations;
  const perPoller = live / shardCount(live, PRODUCTION.capacity, MAX_POLLER_SHARDS);
  const cost = costModel(perPoller, live, Math.min(writesPerMessage, 3));
  for (const key of ['cost_per_hour_usd', 'cost_per_message_usd', 'cost_table_per_hour_usd', 'cost_kms_per_hour_usd'] as const) figures[`conversations.sse.${key}`] = cost[key]!;
  return {
    figures,
    notes: [
      `sse: ${live} conversations on Messaging for In-App and Web (the Messaging API simulator in its own process), agents writing every 3-15 s for ${Math.round(sse.counts.windowMs / 1000)} s, runs handing over every ~15 s, one run killed a third of the way; lost and duplicated count agent messages by their text; streams_per_conversation_max is the most streams one end user (one conversation) had open at once, at the platform; first_event_ms_p99 runs from the start's answer to the first event published (the routing result); sse.latency300: ${Math.min(200, conversations)} conversations with 300 ms added to every platform call. Cost per conversation-hour: the same holding model as the long-poll (a stream is held by the same poller for the same time); the Messaging API's reads are a stream, not 120 polls an hour.`,
    ],
  };
}

export async function benchConversations(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  try {
    const sseCount = Number(process.env.BENCH_CONVERSATIONS_SSE ?? process.env.BENCH_CONVERSATIONS ?? 1000);
    if (process.env.BENCH_CONVERSATIONS_TRANSPORTS === 'messaging_api') {
      const kept = Object.fromEntries(Object.entries(previousFigures()).filter(([key]) => key.startsWith('conversations.') && !key.startsWith('conversations.sse.')));
      const sse = await benchSse(sseCount);
      return { figures: { ...kept, ...sse.figures }, notes: ['The long-poll figures below are those of the previous full run (BENCH_CONVERSATIONS_TRANSPORTS=messaging_api ran only the Messaging API scenario).', ...sse.notes] };
    }
    const main = await scenario({ conversations: Number(process.env.BENCH_CONVERSATIONS ?? 1000), windowMs: 45_000, latencyMs: 0, kill: true });
    const latency = await scenario({ conversations: 200, windowMs: 20_000, latencyMs: 300, kill: false });
    const writesPerMessage = main.counts.writes / Math.max(1, main.counts.messages);
    const figures: Figures = {};
    for (const [key, value] of Object.entries(main.figures)) figures[`conversations.${key}`] = value;
    for (const key of ['first_poll_ms_p99', 'first_poll_ms_p99_outside_round_changes', 'delivery_ms_p50', 'delivery_ms_p99', 'lost', 'duplicated', 'http_409', 'handover_gap_ms_max', 'handover_gap_ms_max_adopted', 'handover_gap_ms_max_claimed', 'polls_per_conversation_max']) {
      figures[`conversations.latency300.${key}`] = latency.figures[key]!;
    }
    figures['conversations.table_writes_per_message_upper_bound'] = round(writesPerMessage, 2);
    // Held as the plan holds them in production: live / shardCount(live) conversations a poller.
    const live = main.counts.conversations;
    const perPoller = live / shardCount(live, PRODUCTION.capacity, MAX_POLLER_SHARDS);
    for (const [key, value] of Object.entries(costModel(perPoller, live, Math.min(writesPerMessage, 3)))) figures[`conversations.${key}`] = value;
    const memory = await benchPollerMemory();
    for (const [key, value] of Object.entries(memory.figures)) figures[`conversations.${key}`] = value;
    const sse = await benchSse(sseCount);
    Object.assign(figures, sse.figures);
    return {
      figures,
      notes: [
        ...sse.notes,
        `${main.counts.conversations} simultaneous conversations against the messaging simulator in its own process (as the platform is in production), agents replying every 3-15 s for ${Math.round(main.counts.windowMs / 1000)} s; one poller run killed a third of the way (its conversations: kill_gap_ms_max); runs hand over every ~15 s; heartbeat 5 s and lease 20 s as in production (so a killed run's conversations wait ~20-25 s).`,
        `Time: only the long-poll wait is compressed: 1 platform second = ${POLL_MS_PER_SECOND} ms, so an idle poll (timeout=30) answers after ${30 * POLL_MS_PER_SECOND} ms; platform_calls_per_hour is per conversation per platform hour (3,600 platform seconds). Latencies (ms) are real.`,
        'latency300: 200 conversations with 300 ms added to every platform call (the sandbox slow fault).',
        '`handover_gap_ms_*` run from the ending run\'s end to the next holder\'s first poll (a 1 s grace included); `_adopted` for the conversations of runs the next run of their slot adopted whole (no claim), `_claimed` for those claimed lease by lease (a run that ended fuller than the plan, or had no room).',
        `first_poll_ms_p99 is measured at the platform (start answered to first poll). The pollers split it: \`first_poll_ms_p99_within_round\` for conversations started while a round ran (a running poller takes the notice), \`first_poll_across_rounds_share\` and \`first_poll_ms_max_across_rounds\` for those started between rounds (no poller takes notices until the next round starts). Rounds here last 15 s (POLLER_RUN_SECONDS = window / 3), not 840 s, so round changes weigh about 56 times more than in production: \`first_poll_ms_p99_outside_round_changes\` leaves out the starts within ${ROUND_CHANGE_MS / 1000} s after a round's plan (\`first_poll_round_change_share\` of them here; about 0.4% in production), whose first polls wait behind the round's handover (bench/conversations-profile.ts).`,
        `Cost model (docs/conversations.md, "Conversation cost"): per conversation-hour of holding ${live} conversations, production settings (128 MB poller, POLLER_CAPACITY ${PRODUCTION.capacity} planned at ${Math.round(perPoller)} a poller, 14-min runs, 5 s heartbeat, a full listing every ${PRODUCTION.sweepSeconds} s), KMS included; per message extra (table writes + one EventBridge event), the same for the naive design.`,
        ...memory.notes,
      ],
    };
  } finally {
    setLogSink(restoreLogs);
  }
}

function previousFigures(): Figures {
  try {
    return JSON.parse(readFileSync(new URL('./results.json', import.meta.url), 'utf8')) as Figures;
  } catch {
    return {};
  }
}
