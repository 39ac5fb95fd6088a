import type { SQSEvent } from 'aws-lambda';
import { handler as ingest } from '../functions/ingest';
import { handler as syncJob } from '../functions/sync-job';
import { handler as webhookEvent } from '../functions/webhook-event';
import type { LocalGateway } from './local-gateway';

/** Attaches each queue's consumer: the same handler its SQS event source invokes in AWS. */
export function attachQueueConsumers(local: LocalGateway): void {
  local.queues.syncJobs.setConsumer((event: SQSEvent) => syncJob(event));
  local.queues.webhookEvents.setConsumer((event: SQSEvent) => webhookEvent(event));
  local.queues.ingestion.setConsumer((event: SQSEvent) => ingest(event));
}
