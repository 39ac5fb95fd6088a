import { gateway, provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/gateway-handler';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { billingVerifier, receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ queues: sqsQueues });

/**
 * POST /webhooks/billing?account=<accountId>: check the Basic credentials, enqueue, answer 200.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction('webhook-billing', (request) => receiveWebhook(gateway(), request, billingVerifier));
