import { seededRandom } from '../sandbox/faults';
import { readBillingRecord } from '../shared/billing/objects';
import type { BillingObject } from '../shared/billing/settings';
import type { GatewayEvent } from '../shared/events/gateway-event';
import { setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { readPaymentRecord } from '../shared/payment/objects';
import type { PaymentObject } from '../shared/payment/settings';
import { recordHash } from '../shared/sync/record-hash';
import { startLocalRuntime } from '../local/local-runtime';
import { startBillingSimulator, type BillingEvent, type BillingSite, type BillingTransaction } from '../sandbox/billing-simulator';
import { startPaymentSimulator, type PaymentEvent, type PaymentSubscription } from '../sandbox/payment-simulator';
import { postWebhook } from '../sandbox/webhook-delivery';
import type { Figures } from './results-file';
import { createSignature, secretLike } from './webhook-receiver';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { round } from './statistics';
import { readPlace } from '../shared/reads/record-place';
import * as store from '../shared/store/store';

/**
 * The webhook path, measured:
 * - receiver: AWS calls per verified delivery once warm (the receivers' signed calls counted:
 *   DynamoDB on dynalite, KMS on the loopback stand-in, SQS at the call), its in-process latency
 *   (p50/p99) and throughput, next to the bare HMAC check on the same machine;
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
    Object.assign(figures, receiverFigures(notes));
    Object.assign(figures, await shuffleFigures(notes));
  } finally {
    setLogSink(muted);
    setMetricSink(mutedMetrics);
  }
  return { figures, notes };
}

// ---------- the receiver ----------

/**
 * The receiver is measured in a process of its own that loads only what its Lambda bundle loads:
 * this process also holds the local runtime, whose tracing handlers bring the X-Ray SDK, and that
 * SDK's async hook tracks every promise of every function in the process. The deployed webhook
 * receivers carry no tracer (see functions/webhook-receiver.ts), so they never pay for it.
 */
function receiverFigures(notes: string[]): Figures {
  const script = fileURLToPath(new URL('./webhook-receiver.ts', import.meta.url));
  const output = execFileSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const measured = JSON.parse(output) as { figures: Figures; notes: string[] };
  notes.push(...measured.notes);
  return measured.figures;
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
  // ?test=false: no first sync runs beside the deliveries measured (the connections are set to Webhooks only below).
  await call('PUT', '/api/v1/accounts/bench/connections/payment?test=false', user, { secretKey: paymentKey, webhookSigningSecret: signingSecret });
  await call('PUT', '/api/v1/accounts/bench/connections/billing?test=false', user, { siteName: 'bench-test', apiKey: billingKey, environment: 'test' });
  for (const connector of ['payment', 'billing']) {
    await call('PUT', `/api/v1/accounts/bench/connections/${connector}/sync-settings`, user, { method: 'webhooks', frequency: 'daily' });
  }
  const credentials = (await call('POST', '/api/v1/accounts/bench/connections/billing/webhook-credentials', user)) as { username: string; password: string };
  // The sandbox has no rate limit here; neither need the gateway's own budgets (a benchmark of the webhook path, not of the rate budget).
  const table = runtime.local.gateway.table;
  for (const [connector, limit] of [['payment', { requestsPerSecond: 1000 }], ['billing', { requestsPerMinute: 3500 }]] as const) {
    const connection = (await store.getConnection(table, 'bench', connector))!;
    await store.putConnection(table, { ...connection, config: { ...connection.config, ...limit } });
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
      const page = await store.listRecords(runtime.local.gateway.table, await readPlace(runtime.local.gateway.table, 'bench', connector, object), { limit: 1000, ...(startKey ? { startKey } : {}) });
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
