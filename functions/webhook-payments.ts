import { receiverAt } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { signedTable } from '../shared/store/signed-table-client';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';
import { receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ table: signedTable, vault: signedKmsVault, queues: signedSqsQueues });
checkSettingsAtLoad('webhook-payments');

const receiving = receiverAt('/webhooks/payments');

/**
 * POST /webhooks/payments?account=<accountId>: verify the signature over the raw body, enqueue, answer 200.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction((request) => receiveWebhook(gateway(), request, receiving));
