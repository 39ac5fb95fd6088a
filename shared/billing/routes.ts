import { assertAccountAccess } from '../api/caller';
import { route } from '../api/route';
import { AccountParams } from '../api/routes/params';
import { gatewayBaseUrl, webhookAddress } from '../webhooks/addresses';
import { billingWebhooks } from './webhook-endpoint';
import { BillingWebhookCredentials, createBillingWebhookCredentials } from './webhook-credentials';

/** The billing connector's own operation: Basic credentials for its webhook endpoint. */
export const billingRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/accounts/{accountId}/connections/billing/webhook-credentials',
    operationId: 'createBillingWebhookCredentials',
    summary: 'Make Basic credentials for the billing webhooks; the password is shown this once',
    params: AccountParams,
    response: { status: 201, description: 'The address and credentials to enter on the billing platform', schema: BillingWebhookCredentials },
    async handle({ params, caller, gateway, log, request }) {
      assertAccountAccess(caller, params.accountId);
      const url = webhookAddress(gatewayBaseUrl(gateway.env, request), billingWebhooks.path, params.accountId);
      return createBillingWebhookCredentials(gateway, log, params.accountId, url);
    },
  }),
];
