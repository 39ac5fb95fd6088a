import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { connectors } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { processBatch } from '../shared/queues/batch';
import { WebhookEventMessage } from '../shared/queues/messages';
import type { Connection } from '../shared/store/items';
import { applyWebhookEvent } from '../shared/webhooks/apply';

// Applied events are published on the gateway's bus for the playbooks.
// Connectors' reactions to published events may queue engagement events (shared/events/reactions.ts).
provideAwsServices({ events: eventBridgeEvents, queues: sqsQueues, reactions: (type) => connectors.reactingTo(type) });

/**
 * Applies verified webhook events (batch of 10, partial batch failures). A failed event is retried
 * by SQS, then dead-lettered (alarmed) for an operator to replay after a fix (`npm run replay-dlq`).
 * Events of one batch run side by side: each is claimed on its own, and record writes are
 * conditional, so their order does not matter.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const connections = new Map<string, Promise<Connection | undefined>>();
  return processBatch(event, WebhookEventMessage, (message, log) => applyWebhookEvent(gateway(), message, log, { connections }).then(() => undefined), {
    concurrency: 10,
  });
};
