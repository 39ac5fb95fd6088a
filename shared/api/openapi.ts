import * as z from 'zod/mini';
import { Problem } from './problem';
import type { Route } from './route';
import { needsIntegrations } from '../tenants/account-guard';
import { DEFAULT_QUOTAS, type QuotaKind } from '../tenants/quotas';

type JsonSchema = Record<string, unknown>;

/**
 * Builds the OpenAPI 3.1 document from the route table: the same zod schemas that validate
 * requests describe them, so the document cannot drift from the code.
 */
export function openApiDocument(routes: Route[]): JsonSchema {
  const components: Record<string, JsonSchema> = {};

  /** Converts a schema, moving its named parts (`.meta({id})`) into components. */
  const toSchema = (schema: z.core.$ZodType, io: 'input' | 'output'): JsonSchema => {
    const converted = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const defs = (converted.$defs ?? {}) as Record<string, JsonSchema>;
    delete converted.$defs;
    delete converted.$schema;
    const rename = (id: string) => {
      const def = defs[id];
      const name = components[id] && JSON.stringify(components[id]) !== JSON.stringify(def) ? `${id}${io === 'input' ? 'Input' : ''}` : id;
      if (def) components[name] = rewriteRefs(def, rename);
      return name;
    };
    const names = new Map<string, string>();
    const once = (id: string) => {
      if (!names.has(id)) names.set(id, rename(id));
      return names.get(id)!;
    };
    const body = rewriteRefs(converted, once);
    const id = z.globalRegistry.get(schema)?.id;
    if (typeof id === 'string') {
      // zod already moved a named top-level schema into $defs and answered a $ref to it.
      if (body.$ref === `#/components/schemas/${id}`) return body;
      delete body.id;
      components[id] = body;
      return { $ref: `#/components/schemas/${id}` };
    }
    return body;
  };

  const problemContent = () => ({ 'application/problem+json': { schema: toSchema(Problem, 'output') } });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const shape = shapeOf(route.params);
    const queryShape = shapeOf(route.query);
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      security: route.access === 'public' ? [] : route.access === 'playbook' ? [{ playbookKey: [] }] : [{ signIn: [] }],
      parameters: [
        ...Object.entries(shape).map(([name, schema]) => ({
          name,
          in: 'path',
          required: true,
          schema: toSchema(schema, 'input'),
        })),
        ...Object.entries(queryShape).map(([name, schema]) => ({
          name,
          in: 'query',
          // Optional and defaulted parameters accept absence.
          required: !z.safeParse(schema, undefined).success,
          ...descriptionOf(schema),
          schema: toSchema(schema, 'input'),
        })),
      ],
      responses: {
        [String(route.response.status)]: {
          description: route.response.description,
          ...(route.response.schema ? { content: { 'application/json': { schema: toSchema(route.response.schema, 'output') } } } : {}),
        },
        ...Object.fromEntries(
          (route.otherResponses ?? []).map((other) => [
            String(other.status),
            { description: other.description, ...(other.schema ? { content: { 'application/json': { schema: toSchema(other.schema, 'output') } } } : {}) },
          ]),
        ),
        ...(needsIntegrations(route)
          ? {
              '403': {
                description: "The account's Integrations are switched off (problem integrations-disabled), or the caller may not do this",
                content: problemContent(),
              },
            }
          : {}),
        ...(route.quota ? { '429': quotaResponse(route.quota.kind, problemContent()) } : {}),
        default: {
          description: 'A problem (RFC 9457)',
          content: { 'application/problem+json': { schema: toSchema(Problem, 'output') } },
        },
      },
    };
    const documentedBody = route.documentedBody ?? route.body;
    if (documentedBody) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: toSchema(documentedBody, 'input') } } };
    }
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Integration gateway API',
      version: '1.0.0',
      description:
        'Connect, test and configure an account’s platform connections, and read synced data for playbooks. Errors are application/problem+json with a remedy where one exists.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        signIn: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard sign-in token (Cognito in AWS; local sign-in under npm start)' },
        playbookKey: { type: 'http', scheme: 'bearer', description: "An account's playbook API key (igk_...), for /api/v1/playbook routes" },
      },
    },
  };
}

/** The 429 of a route with a quota: which quota, its default, and the header that says when to come back. */
function quotaResponse(kind: QuotaKind, content: unknown): JsonSchema {
  const { ratePerSecond, burst } = DEFAULT_QUOTAS[kind];
  return {
    description: `Over the account's ${kind} quota (default ${ratePerSecond}/s, bursts of ${burst}; an operator sets it per account in PUT /api/v1/accounts/{accountId} quotas): problem over-quota`,
    headers: { 'Retry-After': { description: 'Seconds to wait before sending again', schema: { type: 'integer', minimum: 1 } } },
    content,
  };
}

function rewriteRefs(value: JsonSchema, rename: (id: string) => string): JsonSchema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [field, inner] of Object.entries(node)) {
      if (field === '$ref' && typeof inner === 'string' && inner.startsWith('#/$defs/')) {
        out[field] = `#/components/schemas/${rename(inner.slice('#/$defs/'.length))}`;
      } else out[field] = walk(inner);
    }
    return out;
  };
  return walk(value) as JsonSchema;
}

/** A query parameter's description, where its schema has one. */
function descriptionOf(schema: z.core.$ZodType): { description?: string } {
  const description = z.globalRegistry.get(schema)?.description;
  return description ? { description } : {};
}

/** An object schema's fields (by its kind: `instanceof z.core.$ZodObject` would bundle zod's core namespace, every locale with it). */
function shapeOf(schema: z.core.$ZodType | undefined): Record<string, z.core.$ZodType> {
  return schema?._zod.def.type === 'object' ? (schema._zod.def as z.core.$ZodObjectDef).shape : {};
}
