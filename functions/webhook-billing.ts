import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { responseToApiGateway } from '../shared/api/http';
import { notYetAvailable } from '../shared/api/not-yet-available';

/** /webhooks/billing. Deployed and routed now; the work itself arrives with its connector's issue. */
export const handler = async (_event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> =>
  responseToApiGateway(notYetAvailable('Receiving billing-platform webhooks'));
