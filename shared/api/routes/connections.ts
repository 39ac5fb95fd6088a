import * as z from 'zod';
import { BillingConnectionInput } from '../../billing/config';
import { connectAccount, disconnectAccount, getConnectionView, viewOf } from '../../connections/connect';
import { connectionChecks } from '../../connections/connection-checks';
import { ConnectionView } from '../../connections/connection-view';
import { testConnection } from '../../connections/test-connection';
import { DataConnectionInput } from '../../data/config';
import { PaymentConnectionInput } from '../../payment/config';
import { assertAccountAccess } from '../caller';
import { json } from '../http';
import { route } from '../route';
import { AccountParams, ConnectionParams } from './params';

const ConnectQuery = z.strictObject({
  test: z
    .enum(['true', 'false'])
    .default('true')
    .describe('Test the connection once it is saved, and store the health found (default true); false saves it untested, health unknown'),
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
      const connections = await gateway.store.listConnections(params.accountId);
      return { connections: connections.map((connection) => viewOf(connection)) };
    },
  }),
  route({
    method: 'PUT',
    path: '/api/v1/accounts/{accountId}/connections/{connector}',
    operationId: 'connectAccount',
    summary: 'Connect Account: store a connector’s configuration (secrets go to the vault), then Test Connection once unless ?test=false',
    params: ConnectionParams,
    query: ConnectQuery,
    // Each connector has its own form; the connector's schema validates it in connectAccount.
    body: z.record(z.string(), z.unknown()),
    documentedBody: z.union([PaymentConnectionInput, BillingConnectionInput, DataConnectionInput]),
    response: { status: 200, description: 'The connection, secrets masked, with the health its test found', schema: ConnectionView },
    async handle({ params, query, body, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      const view = await connectAccount(gateway, log, params.accountId, params.connector, body);
      // Saved whatever the test finds: the health says what to fix, and Test Connection re-checks.
      if (query.test === 'false' || !connectionChecks[params.connector]) return view;
      const tested = await testConnection(gateway, connectionChecks, params.accountId, params.connector, log);
      return { ...view, health: tested.health };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/{connector}',
    operationId: 'getConnection',
    summary: 'Read a connection (secrets masked)',
    params: ConnectionParams,
    response: { status: 200, description: 'The connection', schema: ConnectionView },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      return getConnectionView(gateway, params.accountId, params.connector);
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
