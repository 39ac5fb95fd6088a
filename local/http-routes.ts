import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { handler as api } from '../functions/api';
import { handler as oauthCallback } from '../functions/oauth-callback';
import { handler as webhookReceiver } from '../functions/webhook-receiver';
import { authorizers, webhookReceivers } from '../shared/connections/registry';
import { asFunction } from './iam/enforcement';
import type { LocalRoute } from './local-server';

/** Each route runs its handler as that function, so its AWS calls are judged against that function's role (local/iam/). */
const asHttp = (fn: (event: never) => Promise<APIGatewayProxyResultV2>) => asFunction('api', fn as (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>);
const oauth = asFunction('oauth-callback', oauthCallback);
const receiver = asFunction('webhook-receiver', webhookReceiver);

/** The same routes lib/api.ts deploys, to the same handler functions, read from the registry's capability lists as it reads them. */
export function localHttpRoutes(): LocalRoute[] {
  return [
    ...authorizers.map(({ authorization }): LocalRoute => ({ method: 'GET', path: authorization.callbackPath, handler: oauth, authorized: false })),
    ...webhookReceivers.map(({ webhooks }): LocalRoute => ({ method: 'POST', path: webhooks.path, handler: receiver, authorized: false })),
    { method: 'GET', path: '/api/v1/openapi.json', handler: asHttp(api), authorized: false },
    // Playbook reads authenticate with an account API key, checked by the function itself.
    { method: 'GET', path: '/api/v1/playbook/*', handler: asHttp(api), authorized: false },
    { method: 'POST', path: '/api/v1/playbook/*', handler: asHttp(api), authorized: false },
    { method: 'ANY', path: '/api/v1/*', handler: asHttp(api), authorized: true },
  ];
}
