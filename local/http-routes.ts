import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { handler as api } from '../functions/api';
import { handler as oauthCallback } from '../functions/oauth-callback';
import { handler as webhookBilling } from '../functions/webhook-billing';
import { handler as webhookPayments } from '../functions/webhook-payments';
import { asFunction } from './iam/enforcement';
import type { LocalRoute } from './local-server';

/** Each route runs its handler as that function, so its AWS calls are judged against that function's role (local/iam/). */
const asHttp = (fn: (event: never) => Promise<APIGatewayProxyResultV2>) => asFunction('api', fn as (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>);
const oauth = asFunction('oauth-callback', oauthCallback);
const billing = asFunction('webhook-billing', webhookBilling);
const payments = asFunction('webhook-payments', webhookPayments);

/** The same routes lib/api.ts deploys, to the same handler functions. */
export const localHttpRoutes: LocalRoute[] = [
  { method: 'GET', path: '/auth/crmmessaging/callback', handler: oauth, authorized: false },
  { method: 'GET', path: '/auth/crmdata/callback', handler: oauth, authorized: false },
  { method: 'POST', path: '/webhooks/billing', handler: billing, authorized: false },
  { method: 'POST', path: '/webhooks/payments', handler: payments, authorized: false },
  { method: 'GET', path: '/api/v1/openapi.json', handler: asHttp(api), authorized: false },
  // Playbook reads authenticate with an account API key, checked by the function itself.
  { method: 'GET', path: '/api/v1/playbook/*', handler: asHttp(api), authorized: false },
  { method: 'POST', path: '/api/v1/playbook/*', handler: asHttp(api), authorized: false },
  { method: 'ANY', path: '/api/v1/*', handler: asHttp(api), authorized: true },
];
