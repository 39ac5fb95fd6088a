import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { openApiDocument } from '../../shared/api/openapi';
import { allApiRoutes } from '../../shared/api/routes/index';

const routes = await allApiRoutes();

describe('OpenAPI document', () => {
  const document = openApiDocument(routes) as {
    openapi: string;
    paths: Record<string, Record<string, { operationId: string; security: unknown[] }>>;
    components: { schemas: Record<string, unknown> };
  };

  it('has every route, with the sign-in requirement on all but the document itself', () => {
    expect(document.openapi).toBe('3.1.0');
    for (const route of routes) {
      const operation = document.paths[route.path]?.[route.method.toLowerCase()];
      expect(operation?.operationId).toBe(route.operationId);
      expect(operation?.security).toEqual(route.access === 'public' ? [] : route.access === 'playbook' ? [{ playbookKey: [] }] : [{ signIn: [] }]);
    }
  });

  it('lists every path and query parameter (the document reads them from object schemas: never wrap one in z.lazy)', () => {
    for (const route of routes) {
      const operation = document.paths[route.path]![route.method.toLowerCase()] as unknown as { parameters: Array<{ name: string; in: string }> };
      for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
        if (schema === undefined) continue;
        expect(schema, `${route.operationId} ${where}`).toBeInstanceOf(z.ZodMiniObject);
        const names = Object.keys((schema as z.ZodMiniObject).shape);
        expect(operation.parameters.filter((parameter) => parameter.in === where).map((parameter) => parameter.name)).toEqual(names);
      }
    }
  });

  it('publishes the connection forms and the problem shape as components', () => {
    for (const name of ['Problem', 'PaymentConnectionInput', 'BillingConnectionInput', 'Connection', 'Account', 'AccountInput']) {
      expect(document.components.schemas).toHaveProperty(name);
    }
    expect(JSON.stringify(document.components.schemas.Problem)).toContain('remedy');
  });

  it('every $ref points at a component that exists', () => {
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(5);
    for (const ref of refs) expect(document.components.schemas).toHaveProperty(ref);
  });
});
