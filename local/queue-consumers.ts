import type { SQSEvent } from 'aws-lambda';
import { handler as ingest } from '../functions/ingest';
import { handler as syncJob } from '../functions/sync-job';
import { handler as webhookEvent } from '../functions/webhook-event';
import { runAs } from './iam/enforcement';
import { authorizeConsume } from './iam/guarded-services';
import { localArns } from './iam/local-arns';
import type { LocalGateway } from './local-gateway';
import type { QueueConsumer } from './local-queue';

/**
 * Attaches each queue's consumer: the same handler its SQS event source invokes in AWS, run as its
 * function (local/iam/), after the receive and delete Lambda's poller makes with the function's role.
 */
export function attachQueueConsumers(local: LocalGateway): void {
  const consume = (handler: 'sync-job' | 'webhook-event' | 'ingest', arn: string, fn: QueueConsumer): QueueConsumer => (event: SQSEvent) =>
    runAs(handler, async () => {
      authorizeConsume(arn);
      return fn(event);
    });
  local.queues.syncJobs.setConsumer(consume('sync-job', localArns.queues.syncJobs, syncJob));
  local.queues.webhookEvents.setConsumer(consume('webhook-event', localArns.queues.webhookEvents, webhookEvent));
  local.queues.ingestion.setConsumer(consume('ingest', localArns.queues.ingestion, ingest));
}
