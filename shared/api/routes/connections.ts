import * as z from 'zod/mini';
import { connectAccount, disconnectAccount, getConnectionView, testNewConnection, viewOf } from '../../connections/connect';
import { ConnectionView } from '../../connections/connection-view';
import { connectors } from '../../connections/registry';
import { AuthorizationStarted } from '../../identity/authorization';
import { gatewayBaseUrl } from '../../webhooks/addresses';
import { assertAccountAccess } from '../caller';
import { json } from '../http';
import { route } from '../route';
import { ConnectionParams } from './connection-params';
import { AccountParams } from './params';
import * as store from '../../store/store';

const ConnectQuery = z.strictObject({
  returnTo: z
    .optional(z.string().check(z.maxLength(200)))
    .check(z.describe('Authorization code: the dashboard path to come back to (a path on the dashboard, e.g. /)')),
  test: z
    ._default(z.enum(['true', 'false']), 'true')
    .check(
      z.describe(
        'Test the connection once it is saved, and store the health found (default true); false saves it untested, health unknown. The authorization code method tests when the browser comes back',
      ),
    ),
});

export const connectionRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections',
    operationId: 'listConnections',
    summary: "List the account's connections (secrets masked)",
    params: AccountParams,
    response: { status: 200, description: 'Connections', schema: z.object({ connections: z.array(ConnectionView) }) },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const connections = await store.listConnections(gateway.table, params.accountId);
      return { connections: connections.map((connection) => viewOf(connection)) };
    },
  }),
  route({
    method: 'PUT',
    path: '/api/v1/accounts/{accountId}/connections/{connector}',
    operationId: 'connectAccount',
    summary: 'Connect Account: store a connector’s configuration (secrets go to the vault), then Test Connection once unless ?test=false; when it passes, the first sync starts',
    params: ConnectionParams,
    query: ConnectQuery,
    // Each connector has its own form; the connector's schema validates it in connectAccount.
    body: z.record(z.string(), z.unknown()),
    get documentedBody() {
      return anyOf(connectors.all().map((connector) => connector.connection.input));
    },
    response: { status: 200, description: 'The connection, secrets masked, with the health its test found', schema: ConnectionView },
    otherResponses: [
      {
        status: 202,
        description: 'Authorization code: send the browser to authorizationUrl; the connection is saved when it comes back',
        schema: AuthorizationStarted,
      },
    ],
    async handle({ params, body, query, caller, gateway, log, request }) {
      assertAccountAccess(caller, params.accountId);
      const outcome = await connectAccount(gateway, log, params.accountId, params.connector, body, {
        baseUrl: gatewayBaseUrl(gateway.env, request),
        ...(query.returnTo ? { returnTo: query.returnTo } : {}),
      });
      if (outcome.kind !== 'connected') return json(202, outcome.started, { 'set-cookie': outcome.setCookie });
      if (query.test === 'false') return outcome.view;
      // Saved whatever the test finds: the health says what to fix, and Test Connection re-checks.
      return testNewConnection(gateway, log, outcome.view, outcome.account);
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/{connector}',
    operationId: 'getConnection',
    summary: 'Read a connection (secrets masked)',
    params: ConnectionParams,
    response: { status: 200, description: 'The connection', schema: ConnectionView },
    async handle({ params, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      return getConnectionView(gateway, params.accountId, params.connector, log);
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/accounts/{accountId}/connections/{connector}',
    operationId: 'disconnect',
    summary: 'Disconnect: delete the credentials and stop the syncs',
    params: ConnectionParams,
    response: { status: 204, description: 'Disconnected' },
    async handle({ params, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      await disconnectAccount(gateway, log, params.accountId, params.connector);
      return json(204, undefined);
    },
  }),
];

/** One of several shapes, as the OpenAPI document shows a body that depends on the connector. */
export function anyOf(schemas: z.core.$ZodType[]): z.core.$ZodType {
  const [first, ...rest] = schemas;
  if (!first) return z.never();
  return rest.length ? z.union([first, ...rest]) : first;
}
