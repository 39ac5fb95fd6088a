import { createHmac, randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { handler as paymentsWebhook } from '../functions/webhook-payments';
import { startPaymentSimulator } from '../sandbox/payment-simulator';
import { requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { receiverAt } from '../shared/connections/registry';
import { gateway, useGateway } from '../shared/gateway';
import { invocationLogFields } from '../shared/handler/log-context';
import { problemErrors } from '../shared/handler/problem-errors';
import { originCheck } from '../shared/origin/origin-check';
import { securityHeaders } from '../shared/handler/security-headers';
import { withNewLogContext } from '../shared/log/log-context';
import { setLogSink } from '../shared/log/logger';
import { metrics, setMetricSink } from '../shared/metrics/gateway-metrics';
import { forgetOpenedConnections } from '../shared/webhooks/connection-cache';
import { receiveWebhook } from '../shared/webhooks/receiver';
import { verifySignature } from '../shared/webhooks/signature';
import { storeConnection } from '../test/support/stored-connection';
import { startAwsHarness, webhookRequest } from '../test/webhooks/aws-harness';
import { median } from './statistics';

/**
 * What each layer of the webhook receiver costs per delivery: the receiver's own work, then the
 * log context, middy, and each middleware added one at a time, up to the handler as deployed,
 * beside the bare signature check. CPU microseconds per delivery (user + system, which other work
 * on the shared cores stretches less than wall time), rounds of 1,000 warm deliveries taken in
 * turn, the median and the lowest round kept. `node --expose-gc --import tsx bench/webhook-layers.ts`.
 */

type Event = APIGatewayProxyEventV2;
type Handler = (event: Event) => Promise<unknown>;

const ROUNDS = 9;
/** A full collection between measurements when run with --expose-gc (the script's usage says so). */
const collect = () => (globalThis as { gc?: () => void }).gc?.();
const PER_ROUND = 1000;

export async function layerCosts(): Promise<Array<{ layer: string; medianUs: number; lowestUs: number }>> {
  const harness = await startAwsHarness();
  const previous = useGateway(harness.gateway);
  try {
    const secret = `whsec_${randomBytes(18).toString('hex')}`;
    const at = new Date().toISOString();
    await harness.gateway.store.putAccount({ accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(harness.gateway, {
      accountId: 'bench',
      connector: 'payment',
      credentials: { secretKey: `rk_test_${randomBytes(18).toString('hex')}`, webhookSigningSecret: secret },
      syncSettings: { method: 'webhooks' },
    });
    forgetOpenedConnections(harness.gateway);
    const simulator = await startPaymentSimulator({ seed: 9 });
    const template = simulator.createSubscription(simulator.createCustomer({ email: 'bench@example.com' }).record.id).events[0]!;
    await simulator.stop();
    let serial = 0;
    const signed = (count: number) =>
      Array.from({ length: count }, () => {
        const body = JSON.stringify({ ...template, id: `evt_layers_${serial++}` });
        const t = Math.floor(Date.now() / 1000);
        const signature = `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
        return { body, signature, event: webhookRequest('/webhooks/payments', 'bench', body, { 'stripe-signature': signature }) };
      });

    const receiving = receiverAt('/webhooks/payments')!;
    const own = async (event: Event) => responseToApiGateway(await receiveWebhook(gateway(), requestFromApiGateway(event), receiving));
    // As shared/handler/engine.ts wraps a function: the log context made once with the invocation's ids, then middy.
    const ids = (event: Event) => invocationLogFields({ requestId: event.requestContext?.requestId, accountId: event.queryStringParameters?.account });
    const wrapped = (middlewares: MiddlewareObj<Event, APIGatewayProxyResultV2>[]): Handler => {
      const engine = middy<Event, APIGatewayProxyResultV2>(own).use(middlewares);
      return (event) => withNewLogContext(() => engine(event, {} as never), ids(event));
    };
    const layers: Array<[string, Handler]> = [
      ['receiver only (verify, parse, envelope, enqueue, answer)', own],
      ['+ log context with the ids (async-local storage)', (event) => withNewLogContext(() => own(event), ids(event))],
      ['+ middy, no middleware', wrapped([])],
      ['+ Powertools logMetrics (flush per invocation)', wrapped([logMetrics(metrics)] as MiddlewareObj<Event, APIGatewayProxyResultV2>[])],
      ['+ origin check, security headers, problem+json (= the handler)', wrapped([logMetrics(metrics), originCheck(), securityHeaders(), problemErrors()] as MiddlewareObj<Event, APIGatewayProxyResultV2>[])],
      ['the deployed handler (functions/webhook-payments.ts)', paymentsWebhook as Handler],
    ];
    const cpuMicros = async (count: number, work: (index: number) => unknown) => {
      const before = process.cpuUsage();
      for (let index = 0; index < count; index += 1) await work(index);
      const used = process.cpuUsage(before);
      return (used.user + used.system) / count;
    };
    const samples = new Map<string, number[]>();
    const measure = async (record: boolean) => {
      const requests = signed(PER_ROUND);
      const raw = Buffer.from(requests[0]!.body);
      const nowSeconds = Math.floor(Date.now() / 1000);
      collect();
      const bare = await cpuMicros(PER_ROUND * 5, () => verifySignature({ header: requests[0]!.signature, rawBody: raw, secret, nowSeconds, toleranceSeconds: 300 }));
      if (record) samples.set('bare HMAC check', [...(samples.get('bare HMAC check') ?? []), bare]);
      // Each layer starts from a collected heap, in a new order each round, so a collection that the
      // previous layer's garbage made is not counted against the next.
      const order = [...layers].sort(() => Math.random() - 0.5);
      for (const [layer, handle] of order) {
        collect();
        const micros = await cpuMicros(PER_ROUND, async (index) => {
          const answer = (await handle(requests[index]!.event)) as { statusCode?: number };
          if (answer.statusCode !== 200) throw new Error(`${layer}: delivery refused (${JSON.stringify(answer)})`);
        });
        if (record) samples.set(layer, [...(samples.get(layer) ?? []), micros]);
      }
    };
    await measure(false);
    for (let round = 0; round < ROUNDS; round += 1) await measure(true);
    return ['bare HMAC check', ...layers.map(([layer]) => layer)].map((layer) => {
      const values = samples.get(layer)!;
      return { layer, medianUs: Math.round(median(values) * 10) / 10, lowestUs: Math.round(Math.min(...values) * 10) / 10 };
    });
  } finally {
    useGateway(previous);
    await harness.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  setLogSink(() => {});
  setMetricSink(() => {});
  const rows = await layerCosts();
  process.stdout.write(`| layer | CPU µs per delivery, median | lowest round |\n|---|--:|--:|\n${rows.map((row) => `| ${row.layer} | ${row.medianUs} | ${row.lowestUs} |`).join('\n')}\n`);
  process.exit(0);
}
