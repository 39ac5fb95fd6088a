import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import type { MiddlewareObj } from '@middy/core';
import { json, requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { gatewayFunction } from '../shared/handler/engine';
import { httpFunction } from '../shared/handler/http-function';
import { problemErrors } from '../shared/handler/problem-errors';
import { securityHeaders } from '../shared/handler/security-headers';
import { setLogSink } from '../shared/log/logger';
import { ORIGIN_HEADER } from '../shared/origin/origin-check';
import { useOriginSecret } from '../shared/origin/origin-secret';
import type { Figures } from './results-file';
import { median, round } from './statistics';

const REQUESTS = 20_000;
const ROUNDS = 7;

/**
 * What the origin check adds to every HTTP request (shared/origin/): the same trivial handler with and
 * without it, side by side in one process, round after round (medians kept), in microseconds of the
 * handler engine's own time; and how often the secret's source is asked, per request, once warm.
 */
export async function benchOrigin(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const value = 'v'.repeat(48);
  let reads = 0;
  const previous = useOriginSecret(async () => {
    reads += 1;
    return value;
  });
  try {
    const work = async () => json(200, { ok: true });
    const checked = httpFunction(work);
    type Http = MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>;
    const unchecked = gatewayFunction<APIGatewayProxyEventV2, APIGatewayProxyResultV2>(
      // The same conversion httpFunction makes, then the same work.
      async (event) => {
        requestFromApiGateway(event);
        return responseToApiGateway(await work());
      },
      () => ({}),
      [securityHeaders() as Http, problemErrors() as Http],
    );
    const event = () =>
      ({
        version: '2.0',
        routeKey: 'POST /webhooks/payments',
        rawPath: '/webhooks/payments',
        rawQueryString: '',
        headers: { [ORIGIN_HEADER]: value, 'content-type': 'application/json' },
        requestContext: { http: { method: 'POST', path: '/webhooks/payments' }, requestId: 'bench' },
        body: '{}',
        isBase64Encoded: false,
      }) as unknown as APIGatewayProxyEventV2;
    const microsEach = async (handler: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>) => {
      const started = performance.now();
      for (let n = 0; n < REQUESTS; n += 1) await handler(event());
      return ((performance.now() - started) * 1000) / REQUESTS;
    };
    await microsEach(checked);
    await microsEach(unchecked);
    const withCheck: number[] = [];
    const without: number[] = [];
    reads = 0;
    for (let pass = 0; pass < ROUNDS; pass += 1) {
      withCheck.push(await microsEach(checked));
      without.push(await microsEach(unchecked));
    }
    const figures: Figures = {
      'origin.request_us_with_check': round(median(withCheck)),
      'origin.request_us_without_check': round(median(without)),
      'origin.check_us_per_request': round(median(withCheck) - median(without)),
      'origin.source_asks_per_request': round(reads / (REQUESTS * ROUNDS)),
    };
    return {
      figures,
      notes: [
        `The same trivial HTTP handler through the handler engine, ${REQUESTS} requests a round, ${ROUNDS} rounds alternating with and without the origin check; medians. The check is one SHA-256 of the header and a constant-time compare; in AWS the source is Secrets Manager, read once per warm container (test/webhooks/receiver-cost.test.ts counts 1 GetSecretValue on a cold container's first delivery, 0 after), here a counting stand-in asked on every request (the AWS source answers from its cached promise).`,
      ],
    };
  } finally {
    useOriginSecret(previous);
    setLogSink(restoreLogs);
  }
}
