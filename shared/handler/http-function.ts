import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { requestFromApiGateway, responseToApiGateway, type HttpRequest, type HttpResponse } from '../api/http';
import { originCheck } from '../origin/origin-check';
import { gatewayFunction, type FunctionOptions } from './engine';
import type { InvocationIds } from './log-context';
import { problemErrors } from './problem-errors';
import { securityHeaders } from './security-headers';

const accountInPath = /\/accounts\/([^/]+)/;

/** The account an HTTP request is about: `?account=` (webhooks), `/accounts/{id}`, or the signed-in user's. */
function httpIds(event: APIGatewayProxyEventV2): InvocationIds {
  // Read before middy starts (engine.ts): a malformed event must not throw here.
  const claims = (event?.requestContext as { authorizer?: { jwt?: { claims?: Record<string, unknown> } } } | undefined)?.authorizer?.jwt?.claims;
  const claimed = claims?.['custom:account_id'];
  return {
    requestId: event?.requestContext?.requestId,
    accountId: event?.queryStringParameters?.account ?? accountInPath.exec(event?.rawPath ?? '')?.[1] ?? (typeof claimed === 'string' ? claimed : undefined),
  };
}

type HttpMiddleware = MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>;

/**
 * An HTTP API route's function (engine.ts): the request as the gateway sees it (raw body kept
 * exactly as sent) in, an HttpResponse out; security headers on every answer, and every thrown
 * error answered as problem+json. First of all, the request must have come through the distribution
 * (shared/origin/): every route, whatever function serves it, refuses one that did not.
 */
export function httpFunction(
  respond: (request: HttpRequest) => Promise<HttpResponse>,
  options: FunctionOptions<APIGatewayProxyEventV2> = {},
): (event: APIGatewayProxyEventV2, context?: Context) => Promise<APIGatewayProxyResultV2> {
  return gatewayFunction<APIGatewayProxyEventV2, APIGatewayProxyResultV2>(
    async (event) => responseToApiGateway(await respond(requestFromApiGateway(event))),
    httpIds,
    // Order matters for onError, which runs innermost first: the problem is made, then headered.
    [originCheck() as HttpMiddleware, ...((options.use ?? []) as HttpMiddleware[]), securityHeaders() as HttpMiddleware, problemErrors() as HttpMiddleware],
  );
}
