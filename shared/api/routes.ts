import * as z from 'zod';
import { AccountId, ConnectorName } from '../connectors';
import { connectAccount, disconnectAccount, getConnectionView, viewOf } from '../connections/connect';
import { ConnectionView } from '../connections/connection-view';
import { BillingConnectionInput } from '../billing/config';
import { PaymentConnectionInput } from '../payment/config';
import { AccountInput, AccountView } from './account-view';
import { assertAccountAccess, assertOperator } from './caller';
import { json } from './http';
import { openApiDocument } from './openapi';
import { problems } from './problem';
import { route, type Route } from './route';

const AccountParams = z.object({ accountId: AccountId });
const ConnectionParams = z.object({ accountId: AccountId, connector: ConnectorName });

/** The gateway's own API, `/api/v1`. Each entry is validated, handled and documented from here. */
export const apiRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This API described as OpenAPI 3.1',
    public: true,
    params: z.object({}),
    response: { status: 200, description: 'The OpenAPI document' },
    handle: async () => json(200, openApiDocument(apiRoutes)),
  }),
  route({
    method: 'PUT',
    path: '/api/v1/accounts/{accountId}',
    operationId: 'putAccount',
    summary: 'Create or update an account, and switch its Integrations section on or off (operator only)',
    params: AccountParams,
    body: AccountInput,
    response: { status: 200, description: 'The account', schema: AccountView },
    async handle({ params, body, caller, gateway, log }) {
      assertOperator(caller);
      const now = new Date(gateway.now()).toISOString();
      const existing = await gateway.store.getAccount(params.accountId);
      const account = {
        accountId: params.accountId,
        name: body.name,
        integrationsEnabled: body.integrationsEnabled,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      await gateway.store.putAccount(account);
      log.info('account saved', { integrationsEnabled: account.integrationsEnabled });
      return account;
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}',
    operationId: 'getAccount',
    summary: 'Read an account',
    params: AccountParams,
    response: { status: 200, description: 'The account', schema: AccountView },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const account = await gateway.store.getAccount(params.accountId);
      if (!account) throw problems.notFound(`No account ${params.accountId}.`);
      return AccountView.parse(account);
    },
  }),
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
    summary: 'Connect Account: store a connector’s configuration; secrets go to the vault',
    params: ConnectionParams,
    // Each connector has its own form; the connector's schema validates it in connectAccount.
    body: z.record(z.string(), z.unknown()),
    documentedBody: z.union([PaymentConnectionInput, BillingConnectionInput]),
    response: { status: 200, description: 'The connection, secrets masked', schema: ConnectionView },
    async handle({ params, body, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      return connectAccount(gateway, log, params.accountId, params.connector, body);
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
