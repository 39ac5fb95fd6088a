import { gateway, provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/gateway-handler';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { paymentVerifier, receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ queues: sqsQueues });

/**
 * POST /webhooks/payments?account=<accountId>: verify the signature over the raw body, enqueue, answer 200.
 * No tracer: the work is one SQS call, which Lambda's own trace already times.
 */
export const handler = httpFunction('webhook-payments', (request) => receiveWebhook(gateway(), request, paymentVerifier));
