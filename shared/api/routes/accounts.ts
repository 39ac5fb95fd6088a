import * as z from 'zod/mini';
import { encodeCursor } from '../../reads/cursor';
import { AccountInput, AccountList, AccountView, accountView } from '../account-view';
import { assertAccountAccess, assertOperator } from '../caller';
import { problems } from '../problem';
import { route } from '../route';
import { AccountParams, PageCursor } from './params';
import { forgetGuardedAccount } from '../../tenants/account-guard';
import * as store from '../../store/store';

const AccountListQuery = z.strictObject({
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 50).check(z.describe('How many accounts, 1-100 (default 50)')),
  cursor: PageCursor,
});

export const accountRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/accounts',
    operationId: 'listAccounts',
    summary: 'List the accounts, by account id (operator only)',
    params: z.object({}),
    query: AccountListQuery,
    response: { status: 200, description: 'A page of accounts', schema: AccountList },
    async handle({ query, caller, gateway }) {
      assertOperator(caller);
      const page = await store.listAccounts(gateway.table, { limit: query.limit, ...(query.cursor ? { startAfter: query.cursor } : {}) });
      return {
        accounts: page.accounts.map((account) => accountView(account)),
        ...(page.lastAccountId ? { nextCursor: encodeCursor(page.lastAccountId) } : {}),
      };
    },
  }),
  route({
    method: 'PUT',
    path: '/api/v1/accounts/{accountId}',
    operationId: 'putAccount',
    summary: 'Create or update an account, and switch its Integrations section on or off (operator only)',
    params: AccountParams,
    integrations: 'not-required',
    body: AccountInput,
    response: { status: 200, description: 'The account', schema: AccountView },
    async handle({ params, body, caller, gateway, log }) {
      assertOperator(caller);
      const now = new Date(gateway.now()).toISOString();
      const existing = await store.getAccount(gateway.table, params.accountId);
      const account = {
        accountId: params.accountId,
        name: body.name,
        // Left out: a new account starts with Integrations off; an existing one keeps its setting.
        integrationsEnabled: body.integrationsEnabled ?? existing?.integrationsEnabled ?? false,
        ...((body.quotas ?? existing?.quotas) ? { quotas: body.quotas ?? existing?.quotas } : {}),
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      await store.putAccount(gateway.table, account);
      forgetGuardedAccount(gateway, account.accountId);
      log.info('account saved', { integrationsEnabled: account.integrationsEnabled, quotasSet: Object.keys(account.quotas ?? {}) });
      return accountView(account);
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}',
    operationId: 'getAccount',
    summary: 'Read an account',
    params: AccountParams,
    integrations: 'not-required',
    response: { status: 200, description: 'The account', schema: AccountView },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const account = await store.getAccount(gateway.table, params.accountId);
      if (!account) throw problems.notFound(`No account ${params.accountId}.`);
      return accountView(account);
    },
  }),
];
