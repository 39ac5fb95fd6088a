import { createHmac, randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { handler as webhookReceiver } from '../functions/webhook-receiver';
import { startPaymentSimulator } from '../sandbox/payment-simulator';
import { useGateway } from '../shared/gateway';
import { setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import { forgetOpenedConnections } from '../shared/webhooks/connection-cache';
import { verifySignature } from '../shared/webhooks/signature';
import { storeConnection } from '../test/support/stored-connection';
import { startAwsHarness, webhookRequest } from '../test/webhooks/aws-harness';
import type { Figures } from './results-file';
import { median, percentile, round } from './statistics';
import * as store from '../shared/store/store';

/**
 * The webhook receiver, warm, beside the bare signature check it cannot do without. Run by
 * bench/webhooks.ts as a process of its own (`node --import tsx bench/webhook-receiver.ts` prints
 * the figures as JSON), so the process holds what the receiver's Lambda bundle holds and nothing
 * else: no local runtime, no tracer.
 */

export const secretLike = (prefix: string) => `${prefix}${randomBytes(18).toString('base64url').replace(/[-_]/g, 'x')}`;

export async function receiverFigures(notes: string[]): Promise<Figures> {
  const harness = await startAwsHarness();
  const previous = useGateway(harness.gateway);
  try {
    const secret = secretLike('whsec_');
    const at = new Date().toISOString();
    const { gateway } = harness;
    await store.putAccount(gateway.table, { accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
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
        const response = await webhookReceiver(request.event);
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

    await webhookReceiver(signed(1)[0]!.event); // cold: reads the connection, opens the secret
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
    notes.push(
      `Receiver: warm deliveries of a ${sample.body.length}-byte signed event to the payments handler, one at a time, in a process of its own that loads what its Lambda bundle loads (no local runtime, no tracer), wired as the receivers are in Lambda (signed calls to dynalite for DynamoDB and to the loopback stand-in for KMS and Secrets Manager; the enqueue stopped at the SQS call and counted): ${WARM_UP} to warm up, then ${ROUNDS} rounds of ${PER_ROUND}, each followed by ${HMAC_RUNS} bare signature checks. The first delivery of an account costs 3 calls (GetItem, KMS Decrypt, SendMessage); warm ones cost the SendMessage only.`,
      `Throughput ratio = receiver deliveries/s ÷ bare signature checks/s (parse + HMAC-SHA256 + compare) on the same machine and body, the median of the rounds' ratios; webhook.cpu_ratio_vs_hmac is the same from CPU time, which other work on the shared cores does not stretch.`,
    );
    return {
      'webhook.aws_calls_per_event': round((calls.dynamodb + calls.kms + calls.sqs) / delivered, 3),
      'webhook.kms_calls_warm': calls.kms,
      'webhook.p50_ms': round(percentile(durations, 50), 3),
      'webhook.p99_ms': round(percentile(durations, 99), 3),
      'webhook.receiver_rps': Math.round(median(rounds.map((r) => r.receiver))),
      'webhook.hmac_rps': Math.round(median(rounds.map((r) => r.hmac))),
      'webhook.throughput_ratio_vs_hmac': round(median(rounds.map((r) => r.receiver / r.hmac)), 3),
      'webhook.cpu_ratio_vs_hmac': round(median(rounds.map((r) => r.receiverCpu / r.hmacCpu)), 3),
    };
  } finally {
    useGateway(previous);
    await harness.stop();
  }
}

/** The platform's computation, written out here rather than borrowed from the receiver. */
export function createSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  setLogSink(() => {});
  // Metrics are serialized as in Lambda; only the write to stdout is left out, as for log lines.
  setMetricSink(() => {});
  const notes: string[] = [];
  const figures = await receiverFigures(notes);
  process.stdout.write(JSON.stringify({ figures, notes }));
  process.exit(0);
}
