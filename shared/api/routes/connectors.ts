import * as z from 'zod/mini';
import type { Connector } from '../../connections/connector';
import { connectors } from '../../connections/registry';
import { ConnectorName } from '../../connectors';
import { gatewayBaseUrl } from '../../webhooks/addresses';
import { route } from '../route';

/** What the dashboard needs to draw a connector's Integrations card, from the registry alone. */
export const ConnectorDescription = z
  .object({
    name: ConnectorName,
    platform: z.string().check(z.describe('The platform in words: "payment platform"')),
    authenticationMethods: z.array(z.enum(['api_key', 'jwt_bearer', 'authorization_code'])).check(z.describe('The preferred first')),
    connectionForm: z.record(z.string(), z.unknown()).check(z.describe('JSON Schema of the Connect Account form')),
    keptOnReconnect: z.array(z.string()).check(z.describe('Secrets a reconnect keeps when the form leaves them out')),
    settings: z.record(z.string(), z.unknown()).check(z.describe('JSON Schema of the sync settings, with their defaults')),
    capabilities: z.object({
      sync: z.optional(z.object({ objects: z.array(z.string()) })).check(z.describe('Records it syncs on schedules')),
      webhooks: z.optional(z.object({ path: z.string(), events: z.array(z.string()) })).check(z.describe('The platform sends webhooks to this address')),
      authorizationCode: z.boolean().check(z.describe('Can connect through the browser (OAuth authorization code)')),
      callbackUrl: z.optional(z.string()).check(z.describe("The OAuth callback address to register on the platform's OAuth client, exactly")),
      revokesOnDisconnect: z.boolean().check(z.describe('Disconnect also ends the grant on the platform (revokes the refresh token)')),
    }),
  })
  .register(z.globalRegistry, { id: 'ConnectorDescription' });
export type ConnectorDescription = z.infer<typeof ConnectorDescription>;

const jsonSchema = (schema: z.core.$ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;

/** A connector for the dashboard; `baseUrl` ({base_url}) makes its OAuth callback address whole. */
export function describeConnector(connector: Connector, baseUrl?: string): ConnectorDescription {
  return {
    name: connector.name,
    platform: connector.platform,
    authenticationMethods: [...connector.connection.methods],
    connectionForm: jsonSchema(connector.connection.input),
    keptOnReconnect: [...(connector.connection.keptOnReconnect ?? [])],
    settings: jsonSchema(connector.settings),
    capabilities: {
      ...(connector.sync ? { sync: { objects: [...connector.sync.objects] } } : {}),
      ...(connector.webhooks ? { webhooks: { path: connector.webhooks.path, events: [...connector.webhooks.subscribeTo] } } : {}),
      authorizationCode: connector.connection.methods.includes('authorization_code'),
      ...(connector.authorization && baseUrl !== undefined ? { callbackUrl: `${baseUrl.replace(/\/+$/, '')}${connector.authorization.callbackPath}` } : {}),
      revokesOnDisconnect: connector.revoke !== undefined,
    },
  };
}

export const connectorRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/connectors',
    operationId: 'listConnectors',
    summary: 'The connectors this gateway offers: forms, settings and capabilities',
    params: z.object({}),
    response: { status: 200, description: 'Every connector', schema: z.object({ connectors: z.array(ConnectorDescription) }) },
    handle: async ({ gateway, request }) => ({
      connectors: connectors.all().map((connector) => describeConnector(connector, gatewayBaseUrl(gateway.env, request))),
    }),
  }),
];
