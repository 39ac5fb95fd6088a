import { Duration } from 'aws-cdk-lib';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { GatewayFunction } from './gateway-function';
import { WorkQueue } from './work-queue';

export interface WebhookProcessingProps {
  readonly logRetention: RetentionDays;
}

/**
 * The slow half of webhook handling. The receivers (lib/api.ts) verify and enqueue, and answer the
 * platform in milliseconds; the event worker here applies each event to the stored record and publishes it.
 */
export class WebhookProcessing extends Construct {
  readonly work: WorkQueue;
  readonly eventWorker: GatewayFunction;

  constructor(scope: Construct, id: string, props: WebhookProcessingProps) {
    super(scope, id);
    const timeout = Duration.seconds(60);

    this.work = new WorkQueue(this, 'WebhookEvents', { consumerTimeout: timeout });
    this.eventWorker = new GatewayFunction(this, 'EventWorker', {
      handler: 'webhook-event',
      purpose: 'applies verified webhook events to stored records and publishes them',
      timeout,
      logRetention: props.logRetention,
    });
    this.eventWorker.addEventSource(
      // One bad event must not send its nine neighbours back to the queue.
      new SqsEventSource(this.work.queue, { batchSize: 10, reportBatchItemFailures: true }),
    );
  }
}
