import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../shared/api/openapi';
import { createRouter } from '../../shared/api/router';
import { routeArea } from '../../shared/api/route-area';
import { route } from '../../shared/api/route';
import { allApiRoutes, apiRoutes } from '../../shared/api/routes/index';
import type { Gateway } from '../../shared/gateway';
import type { HttpRequest } from '../../shared/api/http';
import * as z from 'zod';

const request = (method: string, path: string): HttpRequest => ({ method, path, headers: {}, query: {}, rawBody: Buffer.alloc(0), requestId: 'route-areas' });
const noGateway = () => ({}) as Gateway;

/**
 * The API's areas are loaded by their first request (shared/api/route-area.ts): the router finds an
 * area by the paths it declares, so they must be exactly its routes' paths.
 */
describe('API route areas', () => {
  it('declare exactly the paths of the routes they load', async () => {
    for (const area of apiRoutes()) {
      const routes = await area.load();
      expect(routes.length).toBeGreaterThan(0);
      expect([...area.paths].sort(), routes[0]!.operationId).toEqual([...new Set(routes.map((r) => r.path))].sort());
    }
  });

  it('serve the OpenAPI document, as a cold router’s first request, the same as the whole table gives', async () => {
    const response = await createRouter(apiRoutes(), { gateway: noGateway })(request('GET', '/api/v1/openapi.json'));
    expect(response.body).toBe(JSON.stringify(openApiDocument(await allApiRoutes())));
  });

  it('load only the areas a request reaches, and keep the table’s order among them', async () => {
    const loads: string[] = [];
    const area = (name: string, path: string, answer: string) => {
      const built = routeArea([
        route({ method: 'GET', path, operationId: name, summary: name, access: 'public', params: z.object({}).passthrough(), response: { status: 200, description: name }, handle: async () => ({ answer }) as never }),
      ]);
      return { paths: built.paths, load: () => (loads.push(name), built.load()) };
    };
    const dispatch = createRouter([area('first', '/api/v1/things/{id}', 'first'), area('other', '/api/v1/other', 'other'), area('second', '/api/v1/things/special', 'second')], { gateway: noGateway });
    const special = await dispatch(request('GET', '/api/v1/things/special'));
    expect(JSON.parse(special.body as string)).toEqual({ answer: 'first' });
    expect(loads).toEqual(['first', 'second']);
    await dispatch(request('GET', '/api/v1/things/special'));
    expect(loads).toEqual(['first', 'second']);
  });
});
