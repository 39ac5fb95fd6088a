import { receiverAt } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { receiveWebhook } from '../shared/webhooks/receiver';
import { kmsVault } from '../shared/vault/kms-vault';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ vault: kmsVault, queues: sqsQueues });
checkSettingsAtLoad('webhook-billing');

const receiving = receiverAt('/webhooks/billing');

/**
 * POST /webhooks/billing?account=<accountId>: check the Basic credentials, enqueue, answer 200.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction((request) => receiveWebhook(gateway(), request, receiving));
