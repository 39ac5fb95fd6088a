import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { gateway, provideAwsServices } from '../shared/gateway';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { connectors } from '../shared/connections/registry';
import { receiveWebhook } from '../shared/webhooks/receiver';

// Verified events go to the webhook queue; the event worker applies them.
provideAwsServices({ queues: sqsQueues });

const receiving = connectors.receiving('/webhooks/billing');

/** POST /webhooks/billing?account=<accountId>: check the Basic credentials, enqueue, answer 200. */
export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2> =>
  responseToApiGateway(await receiveWebhook(gateway(), requestFromApiGateway(event), receiving));
