import * as z from 'zod';
import { connectors } from '../../connections/registry';
import { json } from '../http';
import { openApiDocument } from '../openapi';
import { route, type Route } from '../route';
import { historyRoutes } from '../../history/history-routes';
import { accountRoutes } from './accounts';
import { apiKeyRoutes } from './api-keys';
import { connectionRoutes } from './connections';
import { connectorRoutes } from './connectors';
import { playbookRoutes } from './playbook';
import { syncRoutes } from './syncs';
import { webhookRoutes } from './webhooks';

/**
 * The gateway's own API, `/api/v1`: the core's operations, then each connector's own (from the
 * registry). Each entry is validated, handled and documented from its route file.
 */
export function apiRoutes(): Route[] {
  let published: ReturnType<typeof openApiDocument> | undefined;
  const routes: Route[] = [
    route({
      method: 'GET',
      path: '/api/v1/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This API described as OpenAPI 3.1',
      access: 'public',
      params: z.object({}),
      response: { status: 200, description: 'The OpenAPI document' },
      // Built once per warm function: the routes never change while it runs.
      handle: async () => json(200, (published ??= openApiDocument(routes))),
    }),
    ...accountRoutes,
    ...connectorRoutes,
    ...connectionRoutes,
    ...syncRoutes,
    ...apiKeyRoutes,
    ...playbookRoutes,
    ...webhookRoutes,
    ...historyRoutes,
    ...connectors.all().flatMap((connector) => connector.routes ?? []),
  ];
  return routes;
}
