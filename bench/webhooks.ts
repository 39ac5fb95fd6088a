import { seededRandom } from '../sandbox/faults';
import { createHmac, randomBytes } from 'node:crypto';
import { readBillingRecord } from '../shared/billing/objects';
import type { BillingObject } from '../shared/billing/settings';
import type { GatewayEvent } from '../shared/events/gateway-event';
import { useGateway } from '../shared/gateway';
import { setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { readPaymentRecord } from '../shared/payment/objects';
import type { PaymentObject } from '../shared/payment/settings';
import { recordHash } from '../shared/sync/record-hash';
import { forgetOpenedConnections } from '../shared/webhooks/connection-cache';
import { verifySignature } from '../shared/webhooks/signature';
import { handler as paymentsWebhook } from '../functions/webhook-payments';
import { startLocalRuntime } from '../local/local-runtime';
import { startBillingSimulator, type BillingEvent, type BillingSite, type BillingTransaction } from '../sandbox/billing-simulator';
import { startPaymentSimulator, type PaymentEvent, type PaymentSubscription } from '../sandbox/payment-simulator';
import { postWebhook } from '../sandbox/webhook-delivery';
import { startAwsHarness, webhookRequest } from '../test/webhooks/aws-harness';
import type { Figures } from './results-file';
import { storeConnection } from '../test/support/stored-connection';

/**
 * The webhook path, measured:
 * - receiver: AWS calls per verified delivery once warm (DynamoDB counted on dynalite, KMS and
 *   SQS on SDK mocks), its in-process latency (p50/p99) and throughput, next to the bare HMAC
 *   check on the same machine;
 * - shuffle: 10,000 deliveries (8,000 events of both platforms plus 20% duplicates) in random
 *   order through the local gateway over HTTP; afterwards every stored record is compared with
 *   the platform's final state, and every event must have been applied exactly once.
 */
export async function benchWebhooks(): Promise<{ figures: Figures; notes: string[] }> {
  const figures: Figures = {};
  const notes: string[] = [];
  const muted = setLogSink(() => {});
  // Metrics are serialized as in Lambda; only the write to stdout is left out, as for log lines.
  const mutedMetrics = setMetricSink(() => {});
  try {
    Object.assign(figures, await receiverFigures(notes));
    Object.assign(figures, await shuffleFigures(notes));
  } finally {
    setLogSink(muted);
    setMetricSink(mutedMetrics);
  }
  return { figures, notes };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
const secretLike = (prefix: string) => `${prefix}${randomBytes(18).toString('base64url').replace(/[-_]/g, 'x')}`;

// ---------- the receiver ----------

async function receiverFigures(notes: string[]): Promise<Figures> {
  const harness = await startAwsHarness();
  const previous = useGateway(harness.gateway);
  try {
    const secret = secretLike('whsec_');
    const at = new Date().toISOString();
    const { gateway } = harness;
    await gateway.store.putAccount({ accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(gateway, {
      accountId: 'bench',
      connector: 'payment',
      credentials: { secretKey: secretLike('rk_test_'), webhookSigningSecret: secret },
      syncSettings: { method: 'webhooks' },
    });
    gateway.vault.forget({ accountId: 'bench', connector: 'payment' });
    forgetOpenedConnections(gateway);

    // A real-shaped event (a subscription snapshot, ~1.3 KB), signed as the platform signs it.
    const simulator = await startPaymentSimulator({ seed: 9 });
    const customer = simulator.createCustomer({ email: 'bench@example.com' }).record;
    const template = simulator.createSubscription(customer.id).events[0]!;
    await simulator.stop();
    // A warm function: 1,000 deliveries to warm it up, then rounds of 1,000 deliveries, each
    // followed by the bare check on the same machine: the ratio is taken per round and the median
    // kept, so a burst of load from other work on this shared machine skews one round, not the figure.
    const WARM_UP = 1000;
    const PER_ROUND = 1000;
    const ROUNDS = 7;
    const HMAC_RUNS = 5000;
    let serial = 0;
    const signed = (count: number) =>
      Array.from({ length: count }, () => {
        const body = JSON.stringify({ ...template, id: `evt_bench_${serial++}` });
        const t = Math.floor(Date.now() / 1000);
        const signature = `t=${t},v1=${createSignature(secret, t, body)}`;
        return { body, signature, event: webhookRequest('/webhooks/payments', 'bench', body, { 'stripe-signature': signature }) };
      });
    const deliver = async (requests: ReturnType<typeof signed>, durations?: number[]) => {
      for (const request of requests) {
        const before = performance.now();
        const response = await paymentsWebhook(request.event);
        durations?.push(performance.now() - before);
        if (typeof response === 'string' || response.statusCode !== 200) throw new Error(`bench delivery refused: ${JSON.stringify(response)}`);
      }
    };
    /** Wall seconds and CPU seconds (user + system: what this process ran, whoever else shares the cores). */
    const timed = async (work: () => unknown) => {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await work();
      const used = process.cpuUsage(cpu);
      return { seconds: (performance.now() - started) / 1000, cpuSeconds: (used.user + used.system) / 1e6 };
    };

    await paymentsWebhook(signed(1)[0]!.event); // cold: reads the connection, opens the secret
    harness.reset();
    await deliver(signed(WARM_UP));
    const durations: number[] = [];
    const rounds: Array<{ receiver: number; hmac: number; receiverCpu: number; hmacCpu: number }> = [];
    let sample = signed(1)[0]!;
    for (let round = 0; round < ROUNDS; round += 1) {
      const requests = signed(PER_ROUND);
      sample = requests[0]!;
      const receiver = await timed(() => deliver(requests, durations));
      // The bare check: header parse, HMAC-SHA256 over the same body, constant-time compare.
      const raw = Buffer.from(sample.body);
      const nowSeconds = Math.floor(Date.now() / 1000);
      const check = sample.signature;
      const bare = await timed(() => {
        for (let n = 0; n < HMAC_RUNS; n += 1) verifySignature({ header: check, rawBody: raw, secret, nowSeconds, toleranceSeconds: 300 });
      });
      rounds.push({ receiver: PER_ROUND / receiver.seconds, hmac: HMAC_RUNS / bare.seconds, receiverCpu: PER_ROUND / receiver.cpuSeconds, hmacCpu: HMAC_RUNS / bare.cpuSeconds });
    }
    const delivered = WARM_UP + PER_ROUND * ROUNDS;
    const calls = harness.calls();
    durations.sort((a, b) => a - b);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    notes.push(
      `Receiver: warm deliveries of a ${sample.body.length}-byte signed event to the payments handler in process, one at a time, wired as in Lambda (dynalite for DynamoDB, SDK mocks for KMS and SQS, which have no local server): ${WARM_UP} to warm up, then ${ROUNDS} rounds of ${PER_ROUND}, each followed by ${HMAC_RUNS} bare signature checks. The first delivery of an account costs 3 calls (GetItem, KMS Decrypt, SendMessage); warm ones cost the SendMessage only.`,
      `Throughput ratio = receiver deliveries/s ÷ bare signature checks/s (parse + HMAC-SHA256 + compare) on the same machine and body, the median of the rounds' ratios; webhook.cpu_ratio_vs_hmac is the same from CPU time, which other work on the shared cores does not stretch.`,
    );
    return {
      'webhook.aws_calls_per_event': round((calls.dynamodb + calls.kms + calls.sqs) / delivered),
      'webhook.kms_calls_warm': calls.kms,
      'webhook.p50_ms': round(percentile(durations, 50)),
      'webhook.p99_ms': round(percentile(durations, 99)),
      'webhook.receiver_rps': Math.round(median(rounds.map((r) => r.receiver))),
      'webhook.hmac_rps': Math.round(median(rounds.map((r) => r.hmac))),
      'webhook.throughput_ratio_vs_hmac': round(median(rounds.map((r) => r.receiver / r.hmac))),
      'webhook.cpu_ratio_vs_hmac': round(median(rounds.map((r) => r.receiverCpu / r.hmacCpu))),
    };
  } finally {
    useGateway(previous);
    await harness.stop();
  }
}

/** The platform's computation, written out here rather than borrowed from the receiver. */
function createSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

// ---------- out of order, with duplicates ----------

const UNIQUE_PER_PLATFORM = 4000;
/** 8,000 events and 2,000 duplicates: 20% of the deliveries repeat one. */
const DELIVERIES = 10_000;
const CONCURRENT_DELIVERIES = 16;

interface Delivery {
  platform: 'payment' | 'billing';
  eventId: string;
  body: string;
}

async function shuffleFigures(notes: string[]): Promise<Figures> {
  const random = seededRandom(20_250_601);
  const payment = await startPaymentSimulator({ seed: 21 });
  const paymentKey = secretLike('rk_test_');
  payment.addApiKey(paymentKey, { access: 'read' });
  payment.setRateLimit(undefined);
  const billing = await startBillingSimulator({ seed: 21 });
  const site = billing.addSite('bench-test');
  const billingKey = secretLike('test_');
  billing.addApiKey('bench-test', billingKey, { type: 'read-only' });
  billing.setRateLimit(undefined);

  // The platforms' histories happen first, an hour or two ago, one change a second (a few share one).
  const start = Date.now() - 3 * 3600_000;
  payment.setNow(start);
  billing.setNow(start);
  const paymentEvents = paymentHistory(payment, random);
  const billingEvents = billingHistory(site, random);

  const runtime = await startLocalRuntime({
    port: 0,
    schedules: false,
    retryDelayMs: 5,
    // The database runs beside the gateway, not on its CPU, as in AWS.
    dynamoInChildProcess: true,
    env: { PAYMENT_API_BASE_URL: payment.url, BILLING_BASE_URL_TEMPLATE: `${billing.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true' },
  });
  const applied = new Map<string, number>();
  setLogSink((line) => {
    if (!line.includes('"webhook event applied"') && !line.includes('"webhook event ignored"')) return;
    const eventId = (JSON.parse(line) as { eventId: string }).eventId;
    applied.set(eventId, (applied.get(eventId) ?? 0) + 1);
  });
  const published = new Map<string, number>();
  runtime.local.bus.subscribe((event: GatewayEvent) => published.set(event.id, (published.get(event.id) ?? 0) + 1));

  try {
    const { signingSecret, basic } = await connect(runtime, paymentKey, billingKey);
    const unique: Delivery[] = [
      ...paymentEvents.map((event) => ({ platform: 'payment' as const, eventId: event.id, body: JSON.stringify(event) })),
      ...billingEvents.map((event) => ({ platform: 'billing' as const, eventId: event.id, body: JSON.stringify(event) })),
    ];
    const duplicates = Array.from({ length: DELIVERIES - unique.length }, () => unique[Math.floor(random() * unique.length)]!);
    const deliveries = shuffle([...unique, ...duplicates], random);

    const started = performance.now();
    let next = 0;
    const refused: number[] = [];
    const deliver = async () => {
      while (next < deliveries.length) {
        const delivery = deliveries[next++]!;
        const status =
          delivery.platform === 'payment'
            ? await postWebhook(`${runtime.url}/webhooks/payments?account=bench`, delivery.body, {
                'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${createSignature(signingSecret, Math.floor(Date.now() / 1000), delivery.body)}`,
              })
            : await postWebhook(`${runtime.url}/webhooks/billing?account=bench`, delivery.body, { authorization: basic });
        if (status !== 200) refused.push(status);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT_DELIVERIES }, deliver));
    await runtime.local.queues.webhookEvents.idle();
    const seconds = (performance.now() - started) / 1000;

    const mismatched = (await mismatchedPayment(runtime, payment)) + (await mismatchedBilling(runtime, site.data));
    const appliedTwice = [...applied.values()].filter((count) => count > 1).length;
    const unapplied = unique.filter((delivery) => !applied.has(delivery.eventId)).length;
    notes.push(
      `Shuffle: ${unique.length} platform events (${paymentEvents.length} payment, ${billingEvents.length} billing, for ${payment.state.test.customers.size + site.data.customers.size} customers and their subscriptions, invoices and payments) plus ${duplicates.length} duplicates = ${deliveries.length} deliveries, shuffled, ${CONCURRENT_DELIVERIES} at a time over HTTP to the local gateway (receivers, in-process queue, event worker; dynalite in its own process). ${refused.length} refused; ${runtime.local.queues.webhookEvents.deadLetters.length} dead-lettered; ${seconds.toFixed(1)} s.`,
      'Mismatched records: stored records whose normalised content differs from the platform’s final state, or missing, or stored but not on the platform. Applied twice: events the worker applied (or ignored) more than once; unapplied: events never applied.',
    );
    return {
      'webhook.shuffle.deliveries': deliveries.length,
      'webhook.shuffle.mismatched_records': mismatched,
      'webhook.shuffle.applied_twice': appliedTwice,
      'webhook.shuffle.unapplied': unapplied,
      'webhook.shuffle.published_twice': [...published.values()].filter((count) => count > 1).length,
      // Reads the worker made on the platforms: customers not stored yet, and copies whose order it could not tell.
      'webhook.shuffle.platform_fetches': payment.totalRequests() + billing.totalRequests(),
      'webhook.shuffle.seconds': round(seconds, 1),
    };
  } finally {
    await runtime.stop();
    await payment.stop();
    await billing.stop();
  }
}

/** The account, both connections (Webhooks), the payment signing secret and the billing webhook credentials. */
async function connect(runtime: Awaited<ReturnType<typeof startLocalRuntime>>, paymentKey: string, billingKey: string) {
  const operator = await runtime.local.signIn.issue({ operator: true });
  const user = await runtime.local.signIn.issue({ accountId: 'bench' });
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json() as Promise<Record<string, unknown>>;
  };
  const signingSecret = secretLike('whsec_');
  await call('PUT', '/api/v1/accounts/bench', operator, { name: 'Bench', integrationsEnabled: true });
  await call('PUT', '/api/v1/accounts/bench/connections/payment', user, { secretKey: paymentKey, webhookSigningSecret: signingSecret });
  await call('PUT', '/api/v1/accounts/bench/connections/billing', user, { siteName: 'bench-test', apiKey: billingKey, environment: 'test' });
  for (const connector of ['payment', 'billing']) {
    await call('PUT', `/api/v1/accounts/bench/connections/${connector}/sync-settings`, user, { method: 'webhooks', frequency: 'daily' });
  }
  const credentials = (await call('POST', '/api/v1/accounts/bench/connections/billing/webhook-credentials', user)) as { username: string; password: string };
  // The sandbox has no rate limit here; neither need the gateway's own budgets (a benchmark of the webhook path, not of the rate budget).
  const store = runtime.local.gateway.store;
  for (const [connector, limit] of [['payment', { requestsPerSecond: 1000 }], ['billing', { requestsPerMinute: 3500 }]] as const) {
    const connection = (await store.getConnection('bench', connector))!;
    await store.putConnection({ ...connection, config: { ...connection.config, ...limit } });
  }
  return { signingSecret, basic: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` };
}

function paymentHistory(sim: Awaited<ReturnType<typeof startPaymentSimulator>>, random: () => number): PaymentEvent[] {
  const events: PaymentEvent[] = [];
  const subscriptions: PaymentSubscription[] = [];
  const tick = () => {
    // One change a second, but now and then two in the same second: the gateway must ask the platform then.
    if (random() > 0.03) sim.advance(1000);
  };
  while (events.length < UNIQUE_PER_PLATFORM) {
    const roll = random();
    if (subscriptions.length < 20 || roll < 0.08) {
      const customer = sim.createCustomer({ email: `p${events.length}@example.com`, name: `Payer ${events.length}` });
      events.push(...customer.events);
      tick();
      const subscription = sim.createSubscription(customer.record.id);
      subscriptions.push(subscription.record);
      events.push(...subscription.events);
    } else if (roll < 0.5) {
      const subscription = subscriptions[Math.floor(random() * subscriptions.length)]!;
      const item = subscription.items.data[0]!;
      events.push(...sim.update('subscriptions', subscription.id, { items: { ...subscription.items, data: [{ ...item, quantity: 1 + Math.floor(random() * 9) }] } }).events);
    } else if (roll < 0.75) {
      const subscription = subscriptions[Math.floor(random() * subscriptions.length)]!;
      events.push(...sim.update('customers', subscription.customer, { name: `Payer ${Math.floor(random() * 1e6)}` }).events);
    } else {
      const subscription = subscriptions[Math.floor(random() * subscriptions.length)]!;
      events.push(...sim.createInvoice(subscription.id, random() < 0.8 ? 'paid' : 'open').events);
    }
    tick();
  }
  // Every change's events are kept: cutting a history short would leave records the events never showed.
  return events;
}

function billingHistory(site: BillingSite, random: () => number): BillingEvent[] {
  const events: BillingEvent[] = [];
  const subscriptions: string[] = [];
  const customers: string[] = [];
  while (events.length < UNIQUE_PER_PLATFORM) {
    const roll = random();
    if (subscriptions.length < 20 || roll < 0.08) {
      const customer = site.createCustomer({ email: `b${events.length}@example.com` });
      customers.push(customer.record.id);
      events.push(...customer.events);
      const subscription = site.createSubscription(customer.record.id);
      subscriptions.push(subscription.record.id);
      events.push(...subscription.events);
    } else if (roll < 0.45) {
      const id = subscriptions[Math.floor(random() * subscriptions.length)]!;
      events.push(...site.update('subscriptions', id, { mrr: Math.floor(random() * 100_000) }).events);
    } else if (roll < 0.75) {
      const id = customers[Math.floor(random() * customers.length)]!;
      events.push(...site.update('customers', id, { first_name: `Name${Math.floor(random() * 1e6)}` }).events);
    } else {
      const id = subscriptions[Math.floor(random() * subscriptions.length)]!;
      events.push(...site.createInvoice(id, { paid: random() < 0.8 }).events);
    }
  }
  // Every change's events are kept: cutting a history short would leave records the events never showed.
  return events;
}

/** Platform records (final state) against stored ones, by normalised content. */
async function compare(
  runtime: Awaited<ReturnType<typeof startLocalRuntime>>,
  connector: 'payment' | 'billing',
  expected: Map<string, Map<string, string>>,
): Promise<number> {
  let mismatched = 0;
  for (const [object, records] of expected) {
    const stored = new Map<string, string>();
    let startKey: string | undefined;
    do {
      const page = await runtime.local.gateway.store.listRecords('bench', connector, object, { limit: 1000, ...(startKey ? { startKey } : {}) });
      for (const record of page.records) stored.set(record.id, record.hash);
      startKey = page.nextStartKey;
    } while (startKey);
    for (const [id, hash] of records) if (stored.get(id) !== hash) mismatched += 1;
    for (const id of stored.keys()) if (!records.has(id)) mismatched += 1;
  }
  return mismatched;
}

async function mismatchedPayment(runtime: Awaited<ReturnType<typeof startLocalRuntime>>, sim: Awaited<ReturnType<typeof startPaymentSimulator>>): Promise<number> {
  const expected = new Map<string, Map<string, string>>();
  for (const object of ['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'] as const satisfies readonly PaymentObject[]) {
    const records = new Map<string, string>();
    for (const raw of sim.state.test.listed(object).values()) {
      const reading = readPaymentRecord(object, raw);
      if (!reading.ok) throw new Error(`bench: unreadable ${object}: ${reading.problem}`);
      records.set(reading.record.id, recordHash(reading.record.fields));
    }
    expected.set(object, records);
  }
  return compare(runtime, 'payment', expected);
}

async function mismatchedBilling(runtime: Awaited<ReturnType<typeof startLocalRuntime>>, data: BillingSite['data']): Promise<number> {
  const expected = new Map<string, Map<string, string>>();
  const sources: Array<[BillingObject, Iterable<unknown>]> = [
    ['customers', data.customers.values()],
    ['subscriptions', data.subscriptions.values()],
    ['invoices', data.invoices.values()],
    // Payments are the transactions of type payment.
    ['payments', [...data.transactions.values()].filter((transaction: BillingTransaction) => transaction.type === 'payment')],
  ];
  for (const [object, raws] of sources) {
    const records = new Map<string, string>();
    for (const raw of raws) {
      const reading = readBillingRecord(object, raw);
      if (!reading.ok) throw new Error(`bench: unreadable ${object}: ${reading.problem}`);
      records.set(reading.record.id, recordHash(reading.record.fields));
    }
    expected.set(object, records);
  }
  return compare(runtime, 'billing', expected);
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
