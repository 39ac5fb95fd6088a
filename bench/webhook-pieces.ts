import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { json, requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { useGateway } from '../shared/gateway';
import { invocationLogFields } from '../shared/handler/log-context';
import { problemErrors } from '../shared/handler/problem-errors';
import { securityHeaders } from '../shared/handler/security-headers';
import { withNewLogContext } from '../shared/log/log-context';
import { setLogSink } from '../shared/log/logger';
import { metrics, recordMetric, setMetricSink } from '../shared/metrics/gateway-metrics';
import { originCheck } from '../shared/origin/origin-check';
import { startAwsHarness, webhookRequest } from '../test/webhooks/aws-harness';
import { median } from './statistics';

/**
 * What each piece around the webhook receiver costs per request, each measured on its own around a
 * handler that only answers: the request conversion, the log context, middy, and each middleware
 * (docs/cold-starts.md, "The webhook receiver's warm path"). CPU µs per call, rounds of 20,000 with
 * the pieces in a new order each round, the median and the lowest round.
 * `npx tsx bench/webhook-pieces.ts`
 */

type Event = APIGatewayProxyEventV2;
type Http = MiddlewareObj<Event, APIGatewayProxyResultV2>;
const ROUNDS = 15;
const PER_ROUND = 20_000;

setLogSink(() => {});
setMetricSink(() => {});
// Wired as in Lambda: the origin secret is read from (mocked) Secrets Manager once, then held.
const harness = await startAwsHarness();
useGateway(harness.gateway);
const event = webhookRequest('/webhooks/payments', 'bench', JSON.stringify({ id: 'evt_1', type: 'customer.created' }), {});
const warm = originCheck();
await warm.before!({ event: { ...event } } as Parameters<NonNullable<Http['before']>>[0]);

const answer = json(200, { received: true, eventId: 'evt_1' });
const answerOnly = async () => responseToApiGateway(answer);
const engine = (...middlewares: Http[]) => {
  const handler = middy<Event, APIGatewayProxyResultV2>(answerOnly).use(middlewares);
  return () => handler(event, {} as never);
};
const counted = (call: () => Promise<unknown>) => () => {
  recordMetric.webhookVerified('payment');
  return call();
};

const pieces: Array<[string, () => unknown]> = [
  ['the answer alone (an async handler, the answer converted for API Gateway)', answerOnly],
  ['the event converted to the gateway\'s request (`requestFromApiGateway`)', () => requestFromApiGateway(event)],
  ['a log context with the invocation\'s ids (async-local storage)', () => withNewLogContext(answerOnly, invocationLogFields({ requestId: 'r', accountId: 'bench' }))],
  ['middy, no middleware', engine()],
  ['`new AbortController()` (middy makes one a request)', () => new AbortController().signal],
  ['middy + Powertools `logMetrics`, one metric counted and flushed', counted(engine(logMetrics(metrics) as Http))],
  ['middy + the origin check', engine(originCheck() as Http)],
  ['middy + security headers', engine(securityHeaders() as Http)],
  ['middy + problem+json (nothing thrown)', engine(problemErrors() as Http)],
  ['middy + all four middlewares', counted(engine(logMetrics(metrics) as Http, originCheck() as Http, securityHeaders() as Http, problemErrors() as Http))],
];

const samples = new Map<string, number[]>();
for (let round = 0; round <= ROUNDS; round += 1) {
  for (const [piece, call] of [...pieces].sort(() => Math.random() - 0.5)) {
    const before = process.cpuUsage();
    for (let i = 0; i < PER_ROUND; i += 1) await call();
    const used = process.cpuUsage(before);
    // Round 0 warms every piece up and is not kept.
    if (round > 0) samples.set(piece, [...(samples.get(piece) ?? []), (used.user + used.system) / PER_ROUND]);
  }
}
const lines = ['| piece | CPU µs a request, median | lowest round |', '|---|--:|--:|'];
for (const [piece] of pieces) {
  const values = samples.get(piece)!;
  lines.push(`| ${piece} | ${median(values).toFixed(2)} | ${Math.min(...values).toFixed(2)} |`);
}
process.stdout.write(`${lines.join('\n')}\n`);
await harness.stop();
process.exit(0);
