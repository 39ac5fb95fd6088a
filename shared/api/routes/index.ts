import * as z from 'zod/mini';
import { connectors } from '../../connections/registry';
import { json } from '../http';
import { openApiDocument } from '../openapi';
import { route } from '../route';
import { routeArea, routesOf, type RouteArea } from '../route-area';

/**
 * The gateway's own API, `/api/v1`: the core's operations, then each connector's own (from the
 * registry). Each entry is validated, handled and documented from its route file. An area's routes
 * (and the schemas they and their modules build) are loaded by the first request to one of its
 * paths: a cold start builds what its first request needs, not the whole API.
 */
export function apiRoutes(): RouteArea[] {
  let published: ReturnType<typeof openApiDocument> | undefined;
  const areas: RouteArea[] = [
    routeArea([
      route({
        method: 'GET',
        path: '/api/v1/openapi.json',
        operationId: 'getOpenApiDocument',
        summary: 'This API described as OpenAPI 3.1',
        access: 'public',
        params: z.object({}),
        response: { status: 200, description: 'The OpenAPI document' },
        // Built once per warm function: the routes never change while it runs.
        handle: async () => json(200, (published ??= openApiDocument(await routesOf(areas)))),
      }),
    ]),
    {
      paths: ['/api/v1/accounts', '/api/v1/accounts/{accountId}'],
      load: async () => (await import('./accounts')).accountRoutes,
    },
    {
      paths: ['/api/v1/connectors'],
      load: async () => (await import('./connectors')).connectorRoutes,
    },
    {
      paths: ['/api/v1/accounts/{accountId}/connections', '/api/v1/accounts/{accountId}/connections/{connector}'],
      load: async () => (await import('./connections')).connectionRoutes,
    },
    {
      paths: [
        '/api/v1/accounts/{accountId}/connections/{connector}/test',
        '/api/v1/accounts/{accountId}/connections/{connector}/sync-settings',
        '/api/v1/accounts/{accountId}/connections/{connector}/syncs',
      ],
      load: async () => (await import('./syncs')).syncRoutes,
    },
    {
      paths: ['/api/v1/accounts/{accountId}/api-keys', '/api/v1/accounts/{accountId}/api-keys/{keyId}'],
      load: async () => (await import('./api-keys')).apiKeyRoutes,
    },
    {
      paths: [
        '/api/v1/playbook/customers/{customer}/subscription',
        '/api/v1/playbook/customers/{customer}/next-payment',
        '/api/v1/playbook/customers/{customer}/payments',
        '/api/v1/playbook/customers/{customer}/invoices',
        '/api/v1/playbook/subscribers',
        '/api/v1/playbook/payments/failed',
      ],
      load: async () => (await import('./playbook')).playbookRoutes,
    },
    {
      paths: ['/api/v1/accounts/{accountId}/webhooks', '/api/v1/accounts/{accountId}/events'],
      load: async () => (await import('./webhooks')).webhookRoutes,
    },
    {
      paths: [
        '/api/v1/accounts/{accountId}/connections/{connector}/syncs/history',
        '/api/v1/accounts/{accountId}/connections/{connector}/webhooks/deliveries',
        '/api/v1/accounts/{accountId}/conversations/stats',
      ],
      load: async () => (await import('../../history/history-routes')).historyRoutes,
    },
    // A connector's own routes come with its definition (static: loading them through the registry would put
    // them in every function's bundle that imports the registry, docs/cold-starts.md).
    ...connectors.all().flatMap((connector) => (connector.routes ? [routeArea(connector.routes)] : [])),
  ];
  return areas;
}

/** Every route of the API, built: for the tests and tools that read the whole table. */
export const allApiRoutes = () => routesOf(apiRoutes());
