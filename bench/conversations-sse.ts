import type { GatewayEvent } from '../shared/events/gateway-event';
import { connectMessagingSandbox, platformIdOf } from '../test/messaging/support';
import { SimulatorProcess, killBusiestPoller, startConversations } from './conversations-world';
import type { Figures } from './results-file';
import { percentile, round } from './statistics';

/**
 * The handover-and-kill scenario over Messaging for In-App and Web (Server-Sent Events): the same
 * gateway, fleet, leases and poller code as the long-poll scenario (bench/conversations.ts), the
 * Messaging API simulator in its own process, agents writing every 3-15 s, runs handing over every
 * window / 3, one run killed a third of the way. Counted at the gateway: each agent message
 * published once (`lost`, `duplicated`), the first event after a start (the platform's routing
 * result), and at the platform: the most streams one end user (one conversation) ever had open.
 */

const ORG_ID = '00D000000000001';
const DEPLOYMENT = 'Bench_Deployment';

export interface SseScenarioOptions {
  conversations: number;
  windowMs: number;
  latencyMs: number;
  kill: boolean;
}

interface SseReport {
  written: Array<{ text: string; at: number }>;
  streams: { opened: number; maxOpenPerEndUser: number; openNow: number };
  unauthorized: number;
}

export async function sseScenario(options: SseScenarioOptions): Promise<{ figures: Figures; counts: { conversations: number; writes: number; messages: number; windowMs: number } }> {
  const crm = await SimulatorProcess.start({ messagingApiTokenLifetimeMs: 24 * 3600 * 1000 });
  await crm.call({ op: 'registerDeployment', orgId: ORG_ID, deploymentName: DEPLOYMENT });
  const sandbox = await connectMessagingSandbox(crm, crm.world(), {
    settings: { maxConcurrentConversations: 100_000, conversationTransport: 'messaging_api', messagingOrgId: ORG_ID, deploymentDeveloperName: DEPLOYMENT, messagingUrl: crm.url },
    dynamoInChildProcess: true,
    env: { POLLER_CAPACITY: '230', POLLER_RUN_SECONDS: String(Math.round(options.windowMs / 3000)), POLLER_HEARTBEAT_SECONDS: '5', POLLER_LEASE_SECONDS: '20', POLLER_IDLE_SECONDS: '30', PLATFORM_TIMEOUT_MS: '20000' },
  });
  const local = sandbox.gateway.runtime.local;
  const machines = local.stateMachines;
  let writes = 0;
  local.dynamo.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].includes(context.commandName ?? '')) writes++;
      return next(args);
    },
    { step: 'initialize', name: 'benchCountSse' },
  );
  // Every published message.received: its text (agent messages), and each conversation's first event.
  const published = new Map<string, number>();
  const firstEventAt = new Map<string, number>();
  local.bus.subscribe((event: GatewayEvent) => {
    if (event.type !== 'message.received') return;
    const id = (event.data.conversation as { id: string }).id;
    if (!firstEventAt.has(id)) firstEventAt.set(id, Date.now());
    const text = (event.data.message as { text?: string }).text;
    if (text !== undefined) published.set(text, (published.get(text) ?? 0) + 1);
  });
  if (options.latencyMs > 0) await crm.call({ op: 'randomFaults', random: { rate: 1, faults: [{ kind: 'slow', delayMs: options.latencyMs }] } });

  const startedAt = new Map<string, number>();
  const platformIds: string[] = [];
  const starts = await startConversations(sandbox, options.conversations, 25, async (id) => {
    startedAt.set(id, Date.now());
    platformIds.push(await platformIdOf(sandbox, id));
  });

  const windowStart = Date.now();
  const agents = crm.call({ op: 'sseAgents', platformIds, untilMs: windowStart + options.windowMs });
  const killed = options.kill ? await killBusiestPoller(machines, options.windowMs) : 0;
  await agents;
  // Everything written must arrive: wait for the stragglers (a killed run's conversations lapse first).
  const deadline = Date.now() + 40_000;
  let report = (await crm.call({ op: 'sseReport' })) as SseReport;
  while (report.written.some((w) => !published.has(w.text)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    report = (await crm.call({ op: 'sseReport' })) as SseReport;
  }
  const windowMs = Date.now() - windowStart;
  const lost = report.written.filter((w) => !published.has(w.text)).length;
  // Only the agents' messages (unique texts) count: a join's text is the agent's name, the same everywhere.
  const duplicated = report.written.reduce((sum, w) => sum + Math.max(0, (published.get(w.text) ?? 0) - 1), 0);
  const firstEvent = [...startedAt].map(([id, at]) => (firstEventAt.get(id) ?? Infinity) - at);
  const runStats = machines.finishedPollers.concat(machines.pollers().map((run) => run.stats));
  const handoverGaps = runStats.flatMap((run) => run.handoverGapsMs);
  const figures: Figures = {
    lost,
    duplicated,
    streams_per_conversation_max: report.streams.maxOpenPerEndUser,
    streams_opened_per_conversation: round(report.streams.opened / Math.max(1, platformIds.length), 2),
    first_event_ms_p99: round(percentile(firstEvent, 99)),
    no_first_event: firstEvent.filter((ms) => !Number.isFinite(ms)).length,
    handovers: handoverGaps.length,
    handover_gap_ms_max: round(Math.max(0, ...handoverGaps)),
    killed_run_conversations: killed,
    agent_messages: report.written.length,
    http_401: report.unauthorized,
    start_retries: starts.retries,
    starts_throttled: starts.throttled,
  };
  await sandbox.stop();
  return { figures, counts: { conversations: platformIds.length, writes, messages: published.size, windowMs } };
}
