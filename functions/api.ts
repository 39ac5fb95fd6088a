import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyResultV2 } from 'aws-lambda';
import { requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';

const dispatch = createRouter(apiRoutes());

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = async (event: APIGatewayProxyEventV2WithJWTAuthorizer): Promise<APIGatewayProxyResultV2> =>
  responseToApiGateway(await dispatch(requestFromApiGateway(event)));
