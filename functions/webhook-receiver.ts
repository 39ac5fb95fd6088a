import { receiverAt } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { problems } from '../shared/api/problem';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { signedTable } from '../shared/store/signed-table-client';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';
import { receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ table: signedTable, vault: signedKmsVault, queues: signedSqsQueues });
checkSettingsAtLoad('webhook-receiver');

/**
 * POST `/webhooks/payments`, `/webhooks/billing`, ... `?account=<accountId>`: every platform's
 * webhooks, one route per connector that receives them. The connector is the one whose address
 * this path is (the registry says); its check verifies the delivery (a signature over the raw body,
 * Basic credentials), then the event is enqueued and answered 200. One function for all of them, as
 * the OAuth callback is: a connector that receives webhooks adds no function, and every platform's
 * deliveries keep the same warm instances.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction((request) => {
  const receiving = receiverAt(request.path);
  if (!receiving) throw problems.notFound('No platform sends its webhooks to this address.');
  return receiveWebhook(gateway(), request, receiving);
});
