import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { responseToApiGateway } from '../shared/api/http';
import { notYetAvailable } from '../shared/api/not-yet-available';

/** /auth/crmmessaging/callback and /auth/crmdata/callback. Deployed and routed now; the work itself arrives with its connector's issue. */
export const handler = async (_event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> =>
  responseToApiGateway(notYetAvailable('The OAuth return for the messaging and data connectors'));
