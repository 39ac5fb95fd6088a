import { receiverAt } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { kmsVault } from '../shared/vault/kms-vault';
import { receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ vault: kmsVault, queues: sqsQueues });
checkSettingsAtLoad('webhook-payments');

const receiving = receiverAt('/webhooks/payments');

/**
 * POST /webhooks/payments?account=<accountId>: verify the signature over the raw body, enqueue, answer 200.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction((request) => receiveWebhook(gateway(), request, receiving));
