import * as z from 'zod/mini';
import { newApiKey } from '../../api-keys/api-key';
import { assertAccountAccess } from '../caller';
import { json } from '../http';
import { problems } from '../problem';
import { route } from '../route';
import { AccountParams } from './params';
import * as store from '../../store/store';

const ApiKeyView = z.object({ keyId: z.string(), name: z.string(), createdAt: z.iso.datetime() }).register(z.globalRegistry, { id: 'ApiKey' });
const NewApiKey = z
  .extend(ApiKeyView, { key: z.string().check(z.describe('Shown once: store it in the playbook’s secret store')) })
  .register(z.globalRegistry, { id: 'NewApiKey' });

export const apiKeyRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/accounts/{accountId}/api-keys',
    operationId: 'createApiKey',
    summary: 'Create a playbook API key (the key is shown once; only its hash is stored)',
    params: AccountParams,
    body: z.strictObject({ name: z.string().check(z.trim(), z.minLength(1), z.maxLength(100)) }),
    response: { status: 201, description: 'The new key', schema: NewApiKey },
    async handle({ params, body, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      const { key, keyId, hash } = newApiKey(params.accountId);
      const createdAt = new Date(gateway.now()).toISOString();
      await store.putApiKey(gateway.table, { accountId: params.accountId, keyId, name: body.name, hash, createdAt });
      log.info('api key created', { keyId });
      return json(201, { keyId, name: body.name, createdAt, key });
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/api-keys',
    operationId: 'listApiKeys',
    summary: "List the account's playbook API keys (never the keys themselves)",
    params: AccountParams,
    response: { status: 200, description: 'Keys', schema: z.object({ apiKeys: z.array(ApiKeyView) }) },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const keys = await store.listApiKeys(gateway.table, params.accountId);
      return { apiKeys: keys.map(({ keyId, name, createdAt }) => ({ keyId, name, createdAt })) };
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/accounts/{accountId}/api-keys/{keyId}',
    operationId: 'revokeApiKey',
    summary: 'Revoke a playbook API key (effective within a minute)',
    params: z.extend(AccountParams, { keyId: z.string().check(z.regex(/^[a-z0-9]{12}$/)) }),
    response: { status: 204, description: 'Revoked' },
    async handle({ params, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      if (!(await store.deleteApiKey(gateway.table, params.accountId, params.keyId))) throw problems.notFound(`No API key ${params.keyId}.`);
      log.info('api key revoked', { keyId: params.keyId });
      return json(204, undefined);
    },
  }),
];
