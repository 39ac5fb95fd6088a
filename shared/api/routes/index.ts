import * as z from 'zod';
import { json } from '../http';
import { openApiDocument } from '../openapi';
import { route, type Route } from '../route';
import { accountRoutes } from './accounts';
import { apiKeyRoutes } from './api-keys';
import { connectionRoutes } from './connections';
import { dataRoutes } from './data';
import { playbookRoutes } from './playbook';
import { syncRoutes } from './syncs';
import { webhookRoutes } from './webhooks';

/** The gateway's own API, `/api/v1`. Each entry is validated, handled and documented from its route file. */
let publishedDocument: ReturnType<typeof openApiDocument> | undefined;

export const apiRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This API described as OpenAPI 3.1',
    access: 'public',
    params: z.object({}),
    response: { status: 200, description: 'The OpenAPI document' },
    // Built once per warm function: the routes never change while it runs.
    handle: async () => json(200, (publishedDocument ??= openApiDocument(apiRoutes))),
  }),
  ...accountRoutes,
  ...connectionRoutes,
  ...syncRoutes,
  ...apiKeyRoutes,
  ...playbookRoutes,
  ...webhookRoutes,
  ...dataRoutes,
];
