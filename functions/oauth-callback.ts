import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { connectors } from '../shared/connections/registry';
import { gateway } from '../shared/gateway';
import { finishAuthorization, refusalPage } from '../shared/identity/authorization-callback';
import { log } from '../shared/log/logger';

/**
 * `/auth/crmmessaging/callback` and `/auth/crmdata/callback`: the browser's return from the
 * platform's sign-in. The connector is the one whose callback this path is (the registry says).
 */
export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> => {
  const request = requestFromApiGateway(event);
  // The query holds the code and state: only the route is logged.
  const requestLog = log.with({ requestId: request.requestId, route: request.path });
  const connector = connectors.authorizing(request.path);
  if (!connector) return responseToApiGateway(refusalPage(404, 'Unknown callback address', 'This address is not an OAuth callback of the gateway.', '/'));
  try {
    return responseToApiGateway(await finishAuthorization(gateway(), request, connector, requestLog));
  } catch (error) {
    requestLog.error('authorization callback failed', { error });
    return responseToApiGateway(refusalPage(500, 'The sign-in could not be finished', 'Something went wrong on the gateway; nothing was saved. Start Connect Account again in a moment.', gateway().env.DASHBOARD_URL ?? '/'));
  }
};
