import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Template } from 'aws-cdk-lib/assertions';
import Stripe from 'stripe';
import { readFileSync } from 'node:fs';
import { handler as webhookEvent } from '../functions/webhook-event';
import { createGatewayApp } from '../lib/app';
import { startLocalGateway } from '../local/local-gateway';
import { runAs } from '../local/iam/enforcement';
import { startPaymentSimulator } from '../sandbox/payment-simulator';
import { connectors } from '../shared/connections/registry';
import { forgetRateBudgets } from '../shared/http/rate-budget';
import { platformCallCounts, resetPlatformCallCounts } from '../shared/http/platform-client';
import { log, setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { paymentRateLimits } from '../shared/payment/client';
import { runSyncJob } from '../shared/sync/run-sync-job';
import { storeConnection } from '../test/support/stored-connection';
import { startWebhookWorld } from '../test/webhooks/support';
import type { Figures } from './results-file';
import { round } from './statistics';
import * as store from '../shared/store/store';

/**
 * The gateway's monthly AWS bill, from counted calls, for the reference workload and for an idle
 * stack (docs/cost.md). Three sources of counts:
 * - the synthesized stack (alarms and their metrics, dashboards, KMS keys, secrets, queues,
 *   schedules, memory sizes): the fixed costs, counted from the template this repository deploys;
 * - two small runs on the local runtime, counting DynamoDB capacity units (dynalite reports them;
 *   index writes added for items that carry index keys) and calls per webhook event and per
 *   synced record;
 * - the other benchmark parts where they measured it (bench/results.json), and the documented
 *   workload model below for what no local run can show (arrival rates, latencies, cache expiry).
 * Prices: AWS list prices, us-east-1, arm64, no free tier except the three free dashboards.
 */

/** us-east-1 list prices (USD), as published for each service; no free tiers (see the notes). */
export const PRICES = {
  lambdaGbSecond: 0.0000133334, // arm64
  lambdaRequest: 0.2 / 1e6,
  httpApiRequest: 1.0 / 1e6,
  sqsRequest: 0.4 / 1e6, // standard; 64 KB chunks
  sqsFifoRequest: 0.5 / 1e6,
  dynamoWriteUnit: 0.625 / 1e6, // on-demand
  dynamoReadUnit: 0.125 / 1e6,
  dynamoStorageGbMonth: 0.25,
  dynamoPitrGbMonth: 0.2,
  kmsKeyMonth: 1.0,
  kmsRequest: 0.03 / 1e4,
  secretMonth: 0.4,
  secretsRequest: 0.05 / 1e4,
  wafWebAclMonth: 5.0,
  wafRuleMonth: 1.0,
  wafRequest: 0.6 / 1e6,
  stepFunctionsTransition: 0.025 / 1000, // standard workflows
  eventBridgeEvent: 1.0 / 1e6, // custom events
  schedulerInvocation: 1.0 / 1e6,
  logsIngestGb: 0.5,
  logsStorageGbMonth: 0.03,
  customMetricMonth: 0.3, // prorated by the hour with data
  alarmMetricMonth: 0.1, // standard resolution, per metric in the alarm
  dashboardMonth: 3.0, // beyond the first three of an account, which are free
  xrayTrace: 5.0 / 1e6, // recorded
} as const;

const DAYS = 30;
const HOURS = DAYS * 24;

/**
 * The reference workload (the issue's): 100 accounts; per day 10,000 webhooks, 1,000 conversations
 * of 15 minutes, 100,000 engagement events; 1,000,000 records kept in sync, mostly incrementally.
 * What the issue leaves open is set here and in docs/cost.md.
 */
export const REFERENCE = {
  accounts: 100,
  webhooksPerDay: 10_000,
  /** Records kept in sync across all accounts (billing and payment, all objects). */
  syncedRecords: 1_000_000,
  /** Share of the records that change on the platform in a day (what daily incremental syncs write). */
  dailyChangeRate: 0.02,
  /** Connections per account with scheduled syncs, and data objects each syncs daily. */
  syncedConnectionsPerAccount: 2,
  objectsPerConnection: 4.5,
  /** A full reconcile of every object once a week (sync.ts: at least weekly). */
  fullReconcilesPerWeek: 1,
  conversationsPerDay: 1_000,
  conversationMinutes: 15,
  /** Messages per conversation (both directions), each written, published and acknowledged. */
  messagesPerConversation: 20,
  /** Lease renewals: each live conversation's lease is renewed this often (seconds). */
  leaseRenewalSeconds: 60,
  engagementEventsPerDay: 100_000,
  /** Events per POST from a playbook (the API takes up to 50; producers batch). */
  engagementEventsPerRequest: 10,
  /** Dashboard and playbook reads per day (not in the issue's list; a modest figure). */
  apiReadsPerDay: 10_000,
} as const;

/**
 * The history the dashboard shows (shared/history), per unit of work, as the code writes it: a sync
 * job invocation reads its checkpoint once (an item under 4 KB: at most 1 RRU) and
 * writes its run's item once (~0.5 KB: 1 WRU); a conversation adds to its day's counters when it
 * starts and when it ends (a hand-off once more, none in the reference workload) and reads its ~20
 * messages once at its end (~6 KB: 2 RRU); a refused webhook delivery is one counter write at the
 * receiver (none in the reference workload). A verified webhook's counter write (one, at the event
 * worker) is not added here: it is inside the measured writes per event.
 */
export const HISTORY_UNITS = { syncInvocation: { readUnits: 1, writeUnits: 1 }, conversation: { readUnits: 2, writeUnits: 2 }, refusedDelivery: { writeUnits: 1 } } as const;

/** Latencies the model charges while a function waits (in-region AWS calls; platform calls as the sync bench). */
const LATENCY_MS = { dynamo: 6, sqs: 10, kms: 8, eventBridge: 15, platform: 300, cpu: 3 } as const;
/** How long an opened credential stays cached (VAULT_CACHE_TTL_SECONDS default) and a warm container lives between cold starts. */
const VAULT_CACHE_SECONDS = 300;
const WARM_CONTAINER_MINUTES = 15;
/** Bytes each invocation writes to CloudWatch Logs: Lambda's START/END/REPORT, one EMF line, and the handler's own lines. */
const LOG_BYTES = { platformLines: 260, emfLine: 330, infoLine: 380 } as const;
/** Lambda pollers on an SQS event source with no messages: five long polls (20 s) at a time. */
const IDLE_SQS_POLLS_PER_QUEUE_PER_MONTH = 5 * 3 * 60 * HOURS;

interface StackCounts {
  alarmMetrics: number;
  alarms: number;
  dashboards: number;
  kmsKeys: number;
  secrets: number;
  /** The distribution's web ACL (on by default, in us-east-1) and its rules. */
  webAcls: number;
  webAclRules: number;
  standardQueuesPolled: number;
  fifoQueuesPolled: number;
  memoryMbByHandler: Record<string, number>;
  scheduleRunsPerMonth: number;
  fleetRunsPerMonth: number;
  /** States a conversation's lifecycle execution passes through when all goes well (each a billed transition). */
  lifecycleTransitions: number;
  /** States an idle fleet execution passes through (the schedule's check when no conversation is live). */
  idleFleetTransitions: number;
}

/** The states an execution enters from StartAt following `Next` to the end: its billed transitions when all goes well. */
function happyPath(definition: { StartAt: string; States: Record<string, { Next?: string; End?: boolean; Type: string }> }): number {
  let transitions = 0;
  for (let state: string | undefined = definition.StartAt; state; state = definition.States[state]?.Next) transitions += 1;
  return transitions;
}

type StateDefinition = { Next?: string; Default?: string; Choices?: Array<{ Next: string }>; Type: string };

/** The fewest states an execution enters from StartAt to `target` (following Next, choices and defaults): its billed transitions. */
function statesTo(definition: { StartAt: string; States: Record<string, StateDefinition> }, target: string): number {
  const depth = new Map<string, number>([[definition.StartAt, 1]]);
  const queue = [definition.StartAt];
  while (queue.length > 0) {
    const state = queue.shift()!;
    if (state === target) return depth.get(state)!;
    const at = definition.States[state];
    for (const next of [at?.Next, at?.Default, ...(at?.Choices ?? []).map((choice) => choice.Next)]) {
      if (next && !depth.has(next)) {
        depth.set(next, depth.get(state)! + 1);
        queue.push(next);
      }
    }
  }
  throw new Error(`cost bench: no path to the state "${target}"`);
}

/** The logical id a `{Ref}` or `{Fn::GetAtt}` points at. */
function targetId(arn: unknown): string {
  const value = arn as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  return value.Ref ?? value['Fn::GetAtt']?.[0] ?? '';
}

/** Fixed costs and function sizes, counted in the template the stack synthesizes. */
function stackCounts(): StackCounts {
  const cdkJson = JSON.parse(readFileSync(new URL('../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
  const { stack } = createGatewayApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const all = Object.values(resources);
  const ofType = (type: string) => all.filter((r) => r.Type === type);
  const alarms = ofType('AWS::CloudWatch::Alarm');
  const alarmMetrics = alarms.reduce((sum, alarm) => {
    const metrics = alarm.Properties.Metrics as Array<{ MetricStat?: unknown }> | undefined;
    return sum + (metrics ? metrics.filter((m) => m.MetricStat).length : 1);
  }, 0);
  const mappings = ofType('AWS::Lambda::EventSourceMapping');
  const queues = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
  const polled = mappings.map((m) => JSON.stringify(m.Properties.EventSourceArn));
  const fifo = queues.filter(([id, q]) => q.Properties.FifoQueue && polled.some((arn) => arn.includes(id))).length;
  const memoryMbByHandler: Record<string, number> = {};
  for (const fn of ofType('AWS::Lambda::Function')) {
    const handler = /^functions\/([a-z-]+)\.ts/.exec(String(fn.Properties.Description))?.[1];
    if (handler) memoryMbByHandler[handler] = Number(fn.Properties.MemorySize ?? 128);
  }
  const schedules = ofType('AWS::Scheduler::Schedule').map((schedule) => ({
    rate: String(schedule.Properties.ScheduleExpression),
    // The fleet's restart targets a state machine; the sync schedules (and the retry schedule) the dispatcher.
    startsStateMachine: resources[targetId((schedule.Properties.Target as { Arn: unknown }).Arn)]?.Type === 'AWS::StepFunctions::StateMachine',
  }));
  const perMonth = (expression: string) => {
    const [, amount, unit] = /rate\((\d+) (minute|minutes|hour|hours|day|days)\)/.exec(expression) ?? [];
    const minutes = Number(amount) * (unit!.startsWith('minute') ? 1 : unit!.startsWith('hour') ? 60 : 1440);
    return (HOURS * 60) / minutes;
  };
  const machines = ofType('AWS::StepFunctions::StateMachine').map((machine) => ({
    name: String(machine.Properties.StateMachineName),
    // The definition with its intrinsics (ARNs) replaced by placeholders: only the states' shape is read.
    definition: JSON.parse(((machine.Properties.DefinitionString as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1]).map((part) => (typeof part === 'string' ? part : 'ARN')).join('')),
  }));
  const lifecycle = machines.find((machine) => machine.name.endsWith('-conversation'));
  const fleet = machines.find((machine) => machine.name.endsWith('-poller-fleet'));
  return {
    lifecycleTransitions: lifecycle ? happyPath(lifecycle.definition) : 5,
    idleFleetTransitions: fleet ? statesTo(fleet.definition, 'Fleet idle') : 4,
    alarms: alarms.length,
    alarmMetrics,
    dashboards: ofType('AWS::CloudWatch::Dashboard').length,
    kmsKeys: ofType('AWS::KMS::Key').length,
    secrets: ofType('AWS::SecretsManager::Secret').length,
    webAcls: ofType('AWS::WAFv2::WebACL').length,
    webAclRules: ofType('AWS::WAFv2::WebACL').reduce((sum, acl) => sum + ((acl.Properties.Rules as unknown[] | undefined)?.length ?? 0), 0),
    standardQueuesPolled: mappings.length - fifo,
    fifoQueuesPolled: fifo,
    memoryMbByHandler,
    scheduleRunsPerMonth: schedules.reduce((sum, schedule) => sum + perMonth(schedule.rate), 0),
    fleetRunsPerMonth: schedules.filter((schedule) => schedule.startsStateMachine).reduce((sum, schedule) => sum + perMonth(schedule.rate), 0),
  };
}

/** Capacity units and commands a DynamoDB client uses, measured: dynalite reports table units; index writes are added. */
function meterCapacity(client: DynamoDBClient) {
  const totals = { readUnits: 0, writeUnits: 0, reads: 0, writes: 0 };
  const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand', 'TransactWriteItemsCommand']);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: { CapacityUnits?: number } | Array<{ CapacityUnits?: number }> };
      const consumed = [output.ConsumedCapacity ?? []].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      const name = context.commandName ?? '';
      if (WRITES.has(name)) {
        totals.writes += 1;
        // The index (projection ALL) is written too when the item carries its keys: as many units again.
        const indexed = JSON.stringify(input.Item ?? input.ExpressionAttributeValues ?? input.RequestItems ?? {}).includes('gsi1pk');
        totals.writeUnits += consumed * (indexed ? 2 : 1);
      } else {
        totals.reads += 1;
        totals.readUnits += consumed;
      }
      return result;
    },
    { step: 'initialize', name: `meterCapacity-${Math.random()}` },
  );
  const reset = () => Object.assign(totals, { readUnits: 0, writeUnits: 0, reads: 0, writes: 0 });
  return { totals, reset };
}

/** What one verified webhook costs downstream of the receiver, measured end to end on the local runtime. */
async function measureWebhooks(): Promise<{ perEvent: { readUnits: number; writeUnits: number; reads: number; writes: number; published: number; platformCalls: number }; batchSize: number }> {
  const world = await startWebhookWorld();
  try {
    const secret = (await world.connectPayment('bench', { method: 'webhooks' }))!;
    const stripe = new Stripe('sk_test_cost');
    const meter = meterCapacity(world.gateway.runtime.local.dynamo.client);
    let batches = 0;
    world.gateway.runtime.local.queues.webhookEvents.setConsumer(async (event) => {
      batches += 1;
      // As the runtime's own consumer does: the handler's AWS calls are judged against its role (local/iam/).
      return runAs('webhook-event', () => webhookEvent(event));
    });
    const events = [];
    for (let n = 0; n < 40; n += 1) {
      const customer = world.payment.createCustomer({ email: `cost${n}@example.com` });
      events.push(...customer.events, ...world.payment.createSubscription(customer.record.id).events);
    }
    const published = world.published.length;
    meter.reset();
    resetPlatformCallCounts();
    for (const event of events) {
      const body = JSON.stringify(event);
      const response = await fetch(world.paymentUrl('bench'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }) },
        body,
      });
      if (response.status !== 200) throw new Error(`cost bench: delivery refused ${response.status}`);
      // Deliveries arrive one by one, as at the reference rate (one every ~9 s): each is its own batch.
      await world.settle();
    }
    const n = events.length;
    const calls = Object.values(platformCallCounts()).reduce((a, b) => a + b, 0);
    return {
      perEvent: {
        readUnits: meter.totals.readUnits / n,
        writeUnits: meter.totals.writeUnits / n,
        reads: meter.totals.reads / n,
        writes: meter.totals.writes / n,
        published: (world.published.length - published) / n,
        platformCalls: calls / n,
      },
      batchSize: n / Math.max(1, batches),
    };
  } finally {
    await world.stop();
  }
}

/** What syncs cost in the table: a full sync per record, and an incremental sync per job and per changed record. */
async function measureSyncs(): Promise<{ full: { readUnitsPerRecord: number; writeUnitsPerRecord: number; callsPerRecord: number }; incremental: { readUnitsPerJob: number; writeUnitsPerJob: number; readUnitsPerChange: number; writeUnitsPerChange: number; callsPerJob: number } }> {
  const CUSTOMERS = 1_000;
  const CHANGED = 20;
  const payment = await startPaymentSimulator({ seed: 11 });
  let offset = 0;
  const local = await startLocalGateway({
    env: { PAYMENT_API_BASE_URL: payment.url, ALLOW_INSECURE_PLATFORM_URLS: 'true' },
    now: () => Date.now() + offset,
  });
  try {
    const key = `rk_live_${'c'.repeat(24)}`;
    payment.addApiKey(key, { access: 'read' });
    payment.setRateLimit(undefined);
    payment.seedCustomers(CUSTOMERS, { mode: 'live' });
    const at = new Date().toISOString();
    await store.putAccount(local.gateway.table, { accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(local.gateway, {
      accountId: 'bench',
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' },
      credentials: { secretKey: key },
      syncSettings: { dataObjects: ['customers'], frequency: 'daily', method: 'api' },
    });
    forgetRateBudgets();
    const meter = meterCapacity(local.dynamo.client);
    const job = (full: boolean) => ({ accountId: 'bench', connector: 'payment', object: 'customers', trigger: 'manual' as const, requestedAt: new Date().toISOString(), ...(full ? { full: true } : {}) });
    const run = async (full: boolean) => {
      meter.reset();
      resetPlatformCallCounts();
      const result = await runAs('sync-job', () => runSyncJob(local.gateway, connectors.syncing(), job(full), log));
      if (result.outcome !== 'finished') throw new Error(`cost bench: sync ${result.outcome}`);
      return { ...meter.totals, calls: Object.values(platformCallCounts()).reduce((a, b) => a + b, 0) };
    };
    const full = await run(true);
    offset += 3_600_000;
    payment.setNow(Date.now() + offset);
    const unchanged = await run(false);
    const customers = [...payment.state.live.customers.values()].slice(0, CHANGED);
    for (const customer of customers) payment.update('customers', customer.id, { name: `Renamed ${customer.id}` });
    offset += 3_600_000;
    payment.setNow(Date.now() + offset);
    const changed = await run(false);
    return {
      full: { readUnitsPerRecord: full.readUnits / CUSTOMERS, writeUnitsPerRecord: full.writeUnits / CUSTOMERS, callsPerRecord: full.calls / CUSTOMERS },
      incremental: {
        readUnitsPerJob: unchanged.readUnits,
        writeUnitsPerJob: unchanged.writeUnits,
        readUnitsPerChange: (changed.readUnits - unchanged.readUnits) / CHANGED,
        writeUnitsPerChange: (changed.writeUnits - unchanged.writeUnits) / CHANGED,
        callsPerJob: unchanged.calls,
      },
    };
  } finally {
    await local.stop();
    await payment.stop();
  }
}

type Bill = Record<string, number>;
export async function benchCost(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const restoreMetrics = setMetricSink(() => {});
  try {
    const stack = stackCounts();
    const webhook = await measureWebhooks();
    const sync = await measureSyncs();
    const results = readResults();
    return model(stack, webhook, sync, results);
  } finally {
    setLogSink(restoreLogs);
    setMetricSink(restoreMetrics);
  }
}

function readResults(): Figures {
  try {
    return JSON.parse(readFileSync(new URL('./results.json', import.meta.url), 'utf8')) as Figures;
  } catch {
    return {};
  }
}

function model(stack: StackCounts, webhook: Awaited<ReturnType<typeof measureWebhooks>>, sync: Awaited<ReturnType<typeof measureSyncs>>, results: Figures): { figures: Figures; notes: string[] } {
  const R = REFERENCE;
  const gb = (handler: string) => (stack.memoryMbByHandler[handler] ?? 512) / 1024;
  const lambda = (bill: Bill, handler: string, invocations: number, msEach: number) => {
    bill.lambda = (bill.lambda ?? 0) + invocations * PRICES.lambdaRequest + invocations * (msEach / 1000) * gb(handler) * PRICES.lambdaGbSecond;
    bill.logs = (bill.logs ?? 0) + (invocations * (LOG_BYTES.platformLines + LOG_BYTES.emfLine)) / 1e9 * (PRICES.logsIngestGb + PRICES.logsStorageGbMonth);
    return invocations;
  };
  const add = (bill: Bill, line: string, usd: number) => {
    bill[line] = (bill[line] ?? 0) + usd;
  };
  const logLines = (bill: Bill, lines: number) => add(bill, 'logs', ((lines * LOG_BYTES.infoLine) / 1e9) * (PRICES.logsIngestGb + PRICES.logsStorageGbMonth));
  /** Cold starts: a function busy all month restarts about every WARM_CONTAINER_MINUTES; the INIT phase is billed. */
  const coldStarts = (bill: Bill, handler: string, invocations: number) => {
    const starts = Math.min(invocations, (HOURS * 60) / WARM_CONTAINER_MINUTES);
    const initMs = 100 + (results[`bundle.${handler}.import_ms`] ?? 100);
    add(bill, 'lambda', starts * (initMs / 1000) * gb(handler) * PRICES.lambdaGbSecond);
  };

  // ---- fixed costs: what the stack costs whatever it does ----
  const fixed = (bill: Bill) => {
    add(bill, 'kms', stack.kmsKeys * PRICES.kmsKeyMonth);
    add(bill, 'secrets_manager', stack.secrets * PRICES.secretMonth);
    add(bill, 'waf', stack.webAcls * PRICES.wafWebAclMonth + stack.webAclRules * PRICES.wafRuleMonth);
    add(bill, 'cloudwatch_alarms', stack.alarmMetrics * PRICES.alarmMetricMonth);
    // The first three dashboards of an account are free; this stack has one.
    add(bill, 'cloudwatch_dashboards', Math.max(0, stack.dashboards - 3) * PRICES.dashboardMonth);
    add(bill, 'sqs', IDLE_SQS_POLLS_PER_QUEUE_PER_MONTH * (stack.standardQueuesPolled * PRICES.sqsRequest + stack.fifoQueuesPolled * PRICES.sqsFifoRequest));
    add(bill, 'eventbridge', stack.scheduleRunsPerMonth * PRICES.schedulerInvocation);
    // The sync dispatcher on each schedule, the fleet plan every 15 minutes (an idle execution: the
    // states from the start to "Fleet idle", counted in the deployed definition).
    const dispatches = stack.scheduleRunsPerMonth - stack.fleetRunsPerMonth;
    lambda(bill, 'sync-dispatcher', dispatches, LATENCY_MS.dynamo * 2 + LATENCY_MS.cpu);
    lambda(bill, 'poller-fleet-plan', stack.fleetRunsPerMonth, LATENCY_MS.dynamo * 2 + LATENCY_MS.cpu);
    add(bill, 'step_functions', stack.fleetRunsPerMonth * stack.idleFleetTransitions * PRICES.stepFunctionsTransition);
    add(bill, 'xray', (dispatches + stack.fleetRunsPerMonth * 2) * PRICES.xrayTrace);
    add(bill, 'dynamodb', (dispatches + stack.fleetRunsPerMonth) * 2 * PRICES.dynamoReadUnit);
  };

  const idle: Bill = {};
  fixed(idle);

  const ref: Bill = {};
  fixed(ref);

  // ---- webhooks ----
  const webhooks = R.webhooksPerDay * DAYS;
  add(ref, 'api_gateway', webhooks * PRICES.httpApiRequest);
  // Per account, one webhook every ~15 minutes: the opened connection (300 s cache) has expired, so
  // each delivery reads the connection and opens its secret, at the receiver and again at the worker.
  const gapSeconds = (86_400 * R.accounts) / R.webhooksPerDay;
  const coldShare = gapSeconds > VAULT_CACHE_SECONDS ? 1 : gapSeconds / VAULT_CACHE_SECONDS;
  const receiverCalls = (results['webhook.aws_calls_per_event'] ?? 1) + coldShare * 2; // SendMessage, plus GetItem and Decrypt when cold
  // One receiver for every platform's webhooks: one function's cold starts.
  lambda(ref, 'webhook-receiver', webhooks, LATENCY_MS.sqs + coldShare * (LATENCY_MS.dynamo + LATENCY_MS.kms) + LATENCY_MS.cpu);
  coldStarts(ref, 'webhook-receiver', webhooks);
  add(ref, 'kms', webhooks * coldShare * 2 * PRICES.kmsRequest);
  add(ref, 'dynamodb', webhooks * coldShare * PRICES.dynamoReadUnit);
  const workerBatches = webhooks / webhook.batchSize;
  // Each message: SendMessage, one ReceiveMessage share and DeleteMessageBatch per batch.
  add(ref, 'sqs', (webhooks + 2 * workerBatches) * PRICES.sqsRequest);
  const workerMs = webhook.perEvent.reads * LATENCY_MS.dynamo + webhook.perEvent.writes * LATENCY_MS.dynamo + webhook.perEvent.published * LATENCY_MS.eventBridge + webhook.perEvent.platformCalls * LATENCY_MS.platform + LATENCY_MS.cpu;
  lambda(ref, 'webhook-event', workerBatches, workerMs * webhook.batchSize);
  coldStarts(ref, 'webhook-event', workerBatches);
  logLines(ref, webhooks); // "webhook event applied"
  add(ref, 'dynamodb', webhooks * (webhook.perEvent.readUnits * PRICES.dynamoReadUnit + webhook.perEvent.writeUnits * PRICES.dynamoWriteUnit));
  add(ref, 'eventbridge', webhooks * webhook.perEvent.published * PRICES.eventBridgeEvent);
  add(ref, 'xray', (webhooks + workerBatches) * PRICES.xrayTrace);

  // ---- syncs: daily incremental jobs for every object, a weekly full reconcile ----
  const jobsPerDay = R.accounts * R.syncedConnectionsPerAccount * R.objectsPerConnection;
  const incrementalJobs = jobsPerDay * DAYS;
  const changes = R.syncedRecords * R.dailyChangeRate * DAYS;
  const fullRecords = R.syncedRecords * R.fullReconcilesPerWeek * (DAYS / 7);
  const fullPages = fullRecords / 100;
  const syncCalls = incrementalJobs * Math.max(1, sync.incremental.callsPerJob) + changes / 100 + fullRecords * sync.full.callsPerRecord;
  add(ref, 'sqs', (incrementalJobs + fullPages / 20) * 3 * PRICES.sqsFifoRequest); // send, receive, delete; a full run hands over every ~20 pages
  const syncJobMs = LATENCY_MS.platform * Math.max(1, sync.incremental.callsPerJob) + 8 * LATENCY_MS.dynamo + LATENCY_MS.kms + LATENCY_MS.cpu;
  lambda(ref, 'sync-job', incrementalJobs, syncJobMs);
  // A full run pages in slices side by side at the platform's pace, so a page costs its CPU, or its
  // turn in the rate budget if that is longer (the platform's wait overlaps other slices').
  const fullPageMs = Math.max(results['sync.latency300.payment.cpu_ms_per_page'] ?? 12, 1000 / paymentRateLimits({ mode: 'live' }).ratePerSecond);
  lambda(ref, 'sync-job', fullPages / 20, 20 * fullPageMs);
  coldStarts(ref, 'sync-job', incrementalJobs);
  logLines(ref, incrementalJobs * 2 + fullPages / 10);
  add(ref, 'kms', (incrementalJobs + fullPages / 20) * PRICES.kmsRequest);
  add(
    ref,
    'dynamodb',
    incrementalJobs * (sync.incremental.readUnitsPerJob * PRICES.dynamoReadUnit + sync.incremental.writeUnitsPerJob * PRICES.dynamoWriteUnit) +
      changes * (sync.incremental.readUnitsPerChange * PRICES.dynamoReadUnit + sync.incremental.writeUnitsPerChange * PRICES.dynamoWriteUnit) +
      fullRecords * (sync.full.readUnitsPerRecord * PRICES.dynamoReadUnit + sync.full.writeUnitsPerRecord * PRICES.dynamoWriteUnit) * 0.1,
  );
  // (A reconcile over unchanged data writes only the run's seen ids and checkpoints: a tenth of a first full sync's writes and reads is charged.)
  const syncInvocations = incrementalJobs + fullPages / 20;
  const syncHistoryUsd = syncInvocations * (HISTORY_UNITS.syncInvocation.readUnits * PRICES.dynamoReadUnit + HISTORY_UNITS.syncInvocation.writeUnits * PRICES.dynamoWriteUnit);
  add(ref, 'dynamodb', syncHistoryUsd);
  add(ref, 'xray', (incrementalJobs + fullPages / 20) * PRICES.xrayTrace);

  // ---- the table's storage: records of ~2 KB with their index entries, and continuous backups ----
  const storedGb = (R.syncedRecords * 2 * 1.5) / 1e6;
  add(ref, 'dynamodb', storedGb * (PRICES.dynamoStorageGbMonth + PRICES.dynamoPitrGbMonth));

  // ---- engagement events ----
  const engagement = R.engagementEventsPerDay * DAYS;
  const postRequests = engagement / R.engagementEventsPerRequest;
  add(ref, 'api_gateway', postRequests * PRICES.httpApiRequest);
  lambda(ref, 'api', postRequests, LATENCY_MS.sqs + LATENCY_MS.dynamo + LATENCY_MS.cpu * 2);
  add(ref, 'sqs', postRequests * PRICES.sqsRequest); // SendMessageBatch of 10
  // A 5 s batching window at ~1.2 events/s: batches of ~6, one data-platform request per account in a batch.
  const perSecond = R.engagementEventsPerDay / 86_400;
  const ingestBatch = Math.min(50, Math.max(1, perSecond * 5));
  const ingestInvocations = engagement / ingestBatch;
  add(ref, 'sqs', ingestInvocations * 2 * Math.ceil(ingestBatch / 10) * PRICES.sqsRequest);
  lambda(ref, 'ingest', ingestInvocations, LATENCY_MS.platform + LATENCY_MS.dynamo * Math.min(ingestBatch, R.accounts) / 2 + LATENCY_MS.cpu);
  coldStarts(ref, 'ingest', ingestInvocations);
  add(ref, 'dynamodb', ingestInvocations * Math.min(ingestBatch, 5) * PRICES.dynamoReadUnit);
  add(ref, 'kms', ingestInvocations * coldShare * Math.min(ingestBatch, 5) * 0.2 * PRICES.kmsRequest);
  logLines(ref, ingestInvocations);
  add(ref, 'xray', ingestInvocations * PRICES.xrayTrace);

  // ---- conversations: lifecycle executions, one poller shard holding every live poll ----
  const conversations = R.conversationsPerDay * DAYS;
  const liveAverage = (R.conversationsPerDay * R.conversationMinutes) / 1440;
  add(ref, 'step_functions', conversations * stack.lifecycleTransitions * PRICES.stepFunctionsTransition);
  lambda(ref, 'conversation-task', conversations * 4, LATENCY_MS.dynamo * 3 + LATENCY_MS.platform / 2);
  add(ref, 'xray', conversations * 5 * PRICES.xrayTrace);
  // While any conversation is live (nearly always at ~10 live on average), one poller runs ~14 of every 15 minutes.
  const pollerRuns = liveAverage >= 1 ? stack.fleetRunsPerMonth : stack.fleetRunsPerMonth * liveAverage;
  lambda(ref, 'poller', pollerRuns, 14 * 60_000);
  // A busy fleet execution also maps the shard (one poller) and loops or hands over: ~6 more transitions.
  add(ref, 'step_functions', pollerRuns * 6 * PRICES.stepFunctionsTransition);
  const messages = conversations * R.messagesPerConversation;
  const leaseRenewals = liveAverage * (HOURS * 3600) / R.leaseRenewalSeconds;
  add(ref, 'dynamodb', (messages * 3 + leaseRenewals) * PRICES.dynamoWriteUnit + messages * PRICES.dynamoReadUnit);
  add(ref, 'eventbridge', (messages + conversations) * PRICES.eventBridgeEvent);
  const conversationHistoryUsd = conversations * (HISTORY_UNITS.conversation.readUnits * PRICES.dynamoReadUnit + HISTORY_UNITS.conversation.writeUnits * PRICES.dynamoWriteUnit);
  add(ref, 'dynamodb', conversationHistoryUsd);
  logLines(ref, conversations * 4 + pollerRuns * 14);

  // ---- API reads ----
  const reads = R.apiReadsPerDay * DAYS;
  add(ref, 'api_gateway', reads * PRICES.httpApiRequest);
  lambda(ref, 'api', reads, 3 * LATENCY_MS.dynamo + LATENCY_MS.cpu);
  coldStarts(ref, 'api', reads + postRequests);
  add(ref, 'dynamodb', reads * 4 * PRICES.dynamoReadUnit);
  add(ref, 'logs', ((webhooks + reads + postRequests) * 500) / 1e9 * PRICES.logsIngestGb); // HTTP API access logs
  add(ref, 'xray', (reads + postRequests) * PRICES.xrayTrace);
  // The web ACL inspects every request the distribution sends the API (the exempt paths too: they are matched to be left out).
  if (stack.webAcls > 0) add(ref, 'waf', ((ref.api_gateway ?? 0) / PRICES.httpApiRequest) * PRICES.wafRequest);

  // ---- custom metrics: series x share of the month's hours with data ----
  const metricSeries: Array<[string, number, number]> = [
    ['WebhooksVerified (2 connectors, every hour)', 2, 1],
    ['WebhooksRefused (a few reasons, some hours)', 4, 0.2],
    ['EventsPublished (2 connectors, every hour)', 2, 1],
    ['RecordsSynced (9 objects, daily runs over ~2 h)', 9, 2 / 24],
    ['SyncRuns (2 connectors, ~2 h a day)', 2, 2 / 24],
    ['SyncFailures, PlatformThrottles, PlatformRetries (rare)', 6, 0.05],
    ['IngestionRecordsAccepted and Failed', 2, 1],
    ['PollsOpen, LiveConversations, MessagesDelivered', 3, 1],
  ];
  add(ref, 'cloudwatch_metrics', metricSeries.reduce((sum, [, series, share]) => sum + series * share * PRICES.customMetricMonth, 0));
  // Idle: the gauges report zero by sending nothing (alarms FILL missing data with 0), so no series is active.

  const total = (bill: Bill) => round(Object.values(bill).reduce((a, b) => a + b, 0));
  const figures: Figures = {
    'cost.reference_month_usd': total(ref),
    'cost.idle_month_usd': total(idle),
    'cost.fixed.kms_keys': stack.kmsKeys,
    'cost.fixed.alarm_metrics': stack.alarmMetrics,
    'cost.fixed.alarms': stack.alarms,
    'cost.fixed.dashboards': stack.dashboards,
    'cost.fixed.secrets': stack.secrets,
    'cost.fixed.web_acls': stack.webAcls,
    'cost.fixed.idle_fleet_transitions': stack.idleFleetTransitions,
    'cost.webhook.dynamodb_write_units_per_event': round(webhook.perEvent.writeUnits),
    'cost.webhook.dynamodb_read_units_per_event': round(webhook.perEvent.readUnits),
    'cost.webhook.worker_batch_size': round(webhook.batchSize),
    'cost.sync.full.write_units_per_record': round(sync.full.writeUnitsPerRecord),
    'cost.sync.incremental.write_units_per_change': round(sync.incremental.writeUnitsPerChange),
    'cost.sync.incremental.read_units_per_job': round(sync.incremental.readUnitsPerJob),
    'cost.sync.platform_calls_per_month': Math.round(syncCalls),
    'cost.history.write_units_per_sync_invocation': HISTORY_UNITS.syncInvocation.writeUnits,
    'cost.history.write_units_per_conversation': HISTORY_UNITS.conversation.writeUnits,
    'cost.history.write_units_per_refused_delivery': HISTORY_UNITS.refusedDelivery.writeUnits,
    'cost.history.sync_and_conversations_month_usd': round(syncHistoryUsd + conversationHistoryUsd),
    'cost.history.webhook_counters_month_usd': round(webhooks * PRICES.dynamoWriteUnit),
  };
  for (const [line, usd] of Object.entries(ref)) figures[`cost.reference.${line}_usd`] = round(usd);
  for (const [line, usd] of Object.entries(idle)) figures[`cost.idle.${line}_usd`] = round(usd);
  const notes = [
    `Monthly AWS bill (30 days) at us-east-1 list prices, arm64, no free tier except the first three CloudWatch dashboards of an account. Fixed costs counted in the synthesized stack: ${stack.kmsKeys} KMS keys, ${stack.secrets} secret, ${stack.webAcls} web ACL with ${stack.webAclRules} rule, ${stack.alarms} alarms on ${stack.alarmMetrics} metrics, ${stack.dashboards} dashboard, ${stack.standardQueuesPolled + stack.fifoQueuesPolled} queues polled by Lambda (${stack.fifoQueuesPolled} FIFO), ${Math.round(stack.scheduleRunsPerMonth)} schedule runs a month.`,
    `Measured on the local runtime: a webhook event costs ${round(webhook.perEvent.reads)} reads (${round(webhook.perEvent.readUnits)} RRU) and ${round(webhook.perEvent.writes)} writes (${round(webhook.perEvent.writeUnits)} WRU, index included) and ${round(webhook.perEvent.published)} published events; a full sync ${round(sync.full.writeUnitsPerRecord)} WRU and ${round(sync.full.readUnitsPerRecord)} RRU per record; an incremental sync ${round(sync.incremental.readUnitsPerJob)} RRU and ${round(sync.incremental.writeUnitsPerJob)} WRU per job with nothing changed, plus ${round(sync.incremental.writeUnitsPerChange)} WRU per changed record.`,
    `Reference workload: ${R.accounts} accounts; a day: ${R.webhooksPerDay} webhooks, ${R.syncedRecords} records kept in sync (${R.dailyChangeRate * 100}% changing a day, daily incremental syncs of ${jobsPerDay} objects, a weekly full reconcile), ${R.conversationsPerDay} conversations of ${R.conversationMinutes} min (${R.messagesPerConversation} messages each), ${R.engagementEventsPerDay} engagement events (${R.engagementEventsPerRequest} per request), ${R.apiReadsPerDay} API reads. Latencies charged: DynamoDB ${LATENCY_MS.dynamo} ms, SQS ${LATENCY_MS.sqs} ms, KMS ${LATENCY_MS.kms} ms, EventBridge ${LATENCY_MS.eventBridge} ms, platforms ${LATENCY_MS.platform} ms.`,
    `Reference, by service (USD/month): ${Object.entries(ref).sort(([, a], [, b]) => b - a).map(([line, usd]) => `${line} ${round(usd)}`).join(', ')}.`,
    `Idle, by service (USD/month): ${Object.entries(idle).sort(([, a], [, b]) => b - a).map(([line, usd]) => `${line} ${round(usd)}`).join(', ')}.`,
  ];
  return { figures, notes };
}
