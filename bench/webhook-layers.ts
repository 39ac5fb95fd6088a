import { createHmac, randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { handler as webhookReceiver } from '../functions/webhook-receiver';
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
import * as store from '../shared/store/store';

/**
 * What each layer of the webhook receiver costs per delivery: the receiver's own work, then the
 * log context, middy, and each middleware added one at a time, up to the handler as deployed,
 * beside the bare signature check. CPU microseconds per delivery (user + system, which other work
 * on the shared cores stretches less than wall time), rounds of 1,000 warm deliveries taken in
 * turn, the median and the lowest round kept. `node --expose-gc --import tsx bench/webhook-layers.ts`;
 * with `--base <dir>`, the deployed handler beside another checkout's instead (`sideBySide`).
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
    await store.putAccount(harness.gateway.table, { accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
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
      ['the deployed handler (functions/webhook-receiver.ts)', webhookReceiver as Handler],
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

/**
 * The deployed payments handler of this tree and of another checkout (`--base <dir>`, node_modules
 * beside it), each wired to a harness of its own in this one process, rounds of 1,000 deliveries
 * taken in turn (the order flipped each round), so both share whatever load the machine has.
 */
export async function sideBySide(base: string): Promise<Array<{ tree: string; medianUs: number; lowestUs: number }>> {
  const trees: Array<[string, string]> = [['this tree', fileURLToPath(new URL('..', import.meta.url))], ['base', resolve(base)]];
  const wired: Array<{ tree: string; handle: Handler; signed: (count: number) => Event[]; stop: () => Promise<void> }> = [];
  for (const [tree, root] of trees) {
    const from = (path: string) => import(pathToFileURL(join(root, path)).href);
    const [functions, simulators, gateways, logs, metered, cache, support, aws] = await Promise.all(
      ['functions/webhook-receiver.ts', 'sandbox/payment-simulator.ts', 'shared/gateway.ts', 'shared/log/logger.ts', 'shared/metrics/gateway-metrics.ts', 'shared/webhooks/connection-cache.ts', 'test/support/stored-connection.ts', 'test/webhooks/aws-harness.ts'].map(from),
    );
    logs.setLogSink(() => {});
    metered.setMetricSink(() => {});
    const harness = await aws.startAwsHarness();
    gateways.useGateway(harness.gateway);
    const secret = `whsec_${randomBytes(18).toString('hex')}`;
    const at = new Date().toISOString();
    await store.putAccount(harness.gateway.table, { accountId: 'bench', name: 'bench', integrationsEnabled: true, createdAt: at, updatedAt: at });
    await support.storeConnection(harness.gateway, { accountId: 'bench', connector: 'payment', credentials: { secretKey: `rk_test_${randomBytes(18).toString('hex')}`, webhookSigningSecret: secret }, syncSettings: { method: 'webhooks' } });
    cache.forgetOpenedConnections(harness.gateway);
    const simulator = await simulators.startPaymentSimulator({ seed: 9 });
    const template = simulator.createSubscription(simulator.createCustomer({ email: 'bench@example.com' }).record.id).events[0]!;
    await simulator.stop();
    let serial = 0;
    const signed = (count: number) =>
      Array.from({ length: count }, () => {
        const body = JSON.stringify({ ...template, id: `evt_side_${serial++}` });
        const t = Math.floor(Date.now() / 1000);
        return aws.webhookRequest('/webhooks/payments', 'bench', body, { 'stripe-signature': `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}` }) as Event;
      });
    // One delivery now, before the next tree's harness mocks the same SDK classes: it reads the
    // connection, the origin secret and the webhook secret, which a warm function holds from then on.
    await (functions.handler as Handler)(signed(1)[0]!);
    wired.push({ tree, handle: functions.handler as Handler, signed, stop: () => harness.stop() });
  }
  try {
    const samples = new Map<string, number[]>();
    for (let round = -1; round < ROUNDS * 2; round += 1) {
      for (const { tree, handle, signed } of round % 2 ? wired : [...wired].reverse()) {
        const events = signed(PER_ROUND);
        collect();
        const before = process.cpuUsage();
        for (const event of events) {
          const answer = (await handle(event)) as { statusCode?: number };
          if (answer.statusCode !== 200) throw new Error(`${tree}: delivery refused (${JSON.stringify(answer)})`);
        }
        const used = process.cpuUsage(before);
        // Round -1 warms both up.
        if (round >= 0) samples.set(tree, [...(samples.get(tree) ?? []), (used.user + used.system) / PER_ROUND]);
      }
    }
    return wired.map(({ tree }) => ({ tree, medianUs: Math.round(median(samples.get(tree)!) * 10) / 10, lowestUs: Math.round(Math.min(...samples.get(tree)!) * 10) / 10 }));
  } finally {
    for (const { stop } of wired) await stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  setLogSink(() => {});
  setMetricSink(() => {});
  const baseAt = process.argv.indexOf('--base');
  if (baseAt >= 0) {
    const rows = await sideBySide(process.argv[baseAt + 1]!);
    process.stdout.write(`| deployed handler | CPU µs per delivery, median | lowest round |\n|---|--:|--:|\n${rows.map((row) => `| ${row.tree} | ${row.medianUs} | ${row.lowestUs} |`).join('\n')}\n`);
    process.exit(0);
  }
  const rows = await layerCosts();
  process.stdout.write(`| layer | CPU µs per delivery, median | lowest round |\n|---|--:|--:|\n${rows.map((row) => `| ${row.layer} | ${row.medianUs} | ${row.lowestUs} |`).join('\n')}\n`);
  process.exit(0);
}
