import { AccountInput, AccountView } from '../account-view';
import { assertAccountAccess, assertOperator } from '../caller';
import { problems } from '../problem';
import { route } from '../route';
import { AccountParams } from './params';

export const accountRoutes = [
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
];
