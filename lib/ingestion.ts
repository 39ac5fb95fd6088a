import { Duration } from 'aws-cdk-lib';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { GatewayFunction } from './gateway-function';
import { WorkQueue } from './work-queue';

export interface IngestionProps {
  readonly logRetention: RetentionDays;
}

/** Engagement events on their way to the data platform, sent in batches of up to 50 (the platform's limit). */
export class Ingestion extends Construct {
  readonly work: WorkQueue;
  readonly ingestWorker: GatewayFunction;

  constructor(scope: Construct, id: string, props: IngestionProps) {
    super(scope, id);
    const timeout = Duration.seconds(90);
    // Lambda only fills a batch of 50 if it may wait for it; 5 s keeps events close to real time.
    const maxBatchingWindow = Duration.seconds(5);

    this.work = new WorkQueue(this, 'EngagementEvents', { consumerTimeout: timeout, maxBatchingWindow });
    this.ingestWorker = new GatewayFunction(this, 'IngestWorker', {
      handler: 'ingest',
      purpose: 'sends engagement events to the data platform, 50 per request',
      timeout,
      logRetention: props.logRetention,
    });
    this.ingestWorker.addEventSource(
      // Few consumers at a time: each holds the account's rate budget in its own memory, and a burst
      // that scaled out would trade the platform's 429s for dead-lettered good events.
      new SqsEventSource(this.work.queue, { batchSize: 50, maxBatchingWindow, reportBatchItemFailures: true, maxConcurrency: 2 }),
    );
  }
}
