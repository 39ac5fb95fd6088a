import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SYNC_RETRY } from '../shared/sync/sync-retry';
import { GatewayFunction } from './gateway-function';
import { nagArnOf } from './nag-findings';
import { WorkQueue } from './work-queue';

/** The sync frequencies a connection can choose, and how often each fires. */
export const syncFrequencies = {
  hourly: Duration.hours(1),
  daily: Duration.days(1),
  weekly: Duration.days(7),
} as const;
export type SyncFrequency = keyof typeof syncFrequencies;

/** How EventBridge Scheduler retries a target that failed, before it gives the event to the DLQ. */
export const scheduleRetry = { retryAttempts: 3, maxEventAge: Duration.hours(1) } as const;

/**
 * The sync job's memory: Lambda gives CPU in proportion to memory, one vCPU at 1,769 MB. A page of
 * 100 records costs the job about 3.6 to 6.1 ms of CPU (reading and checking the platform's JSON,
 * hashing, the store's client: `npm run bench -- sync`, `sync.latency300.payment.cpu_ms_per_page`).
 * A payment job lists one endpoint, 25 pages a second at most (0.09 to 0.15 vCPU, `vcpu_at_limit`); a
 * billing job may take its whole connection's limit, up to 3,500 a minute on large plans (about
 * 0.35 vCPU if its pages cost what payment pages do: not measured). A whole vCPU leaves room for the event loop's hiccups; about 1,024 MB would cover the
 * measured CPU. The bill barely moves: CPU-bound work finishes proportionally sooner, and only the
 * waiting of small incremental runs costs more (docs/cost.md).
 */
export const SYNC_JOB_MEMORY_MB = 1769;

export interface SyncProps {
  readonly logRetention: RetentionDays;
  /** Where EventBridge Scheduler puts an invocation it could not deliver. */
  readonly scheduleDeadLetterQueue: sqs.IQueue;
}

/**
 * Scheduled syncs: each schedule fires the dispatcher with its frequency; the dispatcher enqueues one job per due
 * connection and data object; a sync job pages through the platform with a checkpoint after every page.
 */
export class Sync extends Construct {
  readonly work: WorkQueue;
  readonly dispatcher: GatewayFunction;
  readonly job: GatewayFunction;

  constructor(scope: Construct, id: string, props: SyncProps) {
    super(scope, id);
    const jobTimeout = Duration.minutes(5);

    this.dispatcher = new GatewayFunction(this, 'Dispatcher', {
      handler: 'sync-dispatcher',
      purpose: 'enqueues one sync job per due connection and data object',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
    });
    // FIFO grouped by connection and data object: one job of an object runs at a time (in order:
    // continuations and retries after the run they carry on). A connection's objects sync side by
    // side; every caller of a platform account draws from its one rate budget, kept in the table.
    this.work = new WorkQueue(this, 'SyncJobs', { consumerTimeout: jobTimeout, fifo: true });
    this.job = new GatewayFunction(this, 'Job', {
      handler: 'sync-job',
      purpose: 'syncs one data object of one connection, page by page, from its checkpoint',
      timeout: jobTimeout,
      memorySize: SYNC_JOB_MEMORY_MB,
      logRetention: props.logRetention,
      // A job that reaches its deadline sends its continuation to its own queue, carrying the
      // invocation's trace header (as every AWS call does); Lambda counts that chain and stops it
      // after 16 as a loop: a first sync of a large account would be cut off. The chain is meant.
      recursiveLoop: RecursiveLoop.ALLOW,
    });
    // One job per invocation: a job can run for minutes, and its failure must not retry another job.
    this.job.addEventSource(new SqsEventSource(this.work.queue, { batchSize: 1, reportBatchItemFailures: true }));

    const scheduleRole = new iam.Role(this, 'ScheduleRole', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'Lets EventBridge Scheduler start the sync dispatcher',
    });
    Validations.of(scheduleRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagArnOf(this.dispatcher)}:*]`,
      reason: 'Invoke any version or alias of the sync dispatcher (ARN:*), as the Scheduler Lambda target grants it; one function only.',
    });

    // Failed syncs are tried again with growing delays (shared/sync/sync-retry.ts): the sync queue is
    // FIFO and cannot delay one message, so each failure records its next try on the checkpoint and
    // this schedule enqueues the tries that have come.
    new scheduler.Schedule(this, 'RetrySchedule', {
      description: 'Enqueues the failed syncs whose next try has come',
      schedule: scheduler.ScheduleExpression.rate(Duration.millis(SYNC_RETRY.scheduleEveryMs)),
      target: new targets.LambdaInvoke(this.dispatcher, {
        role: scheduleRole,
        input: scheduler.ScheduleTargetInput.fromObject({ retries: true }),
        deadLetterQueue: props.scheduleDeadLetterQueue,
        ...scheduleRetry,
      }),
    });

    for (const [frequency, every] of Object.entries(syncFrequencies)) {
      new scheduler.Schedule(this, `${frequency.charAt(0).toUpperCase()}${frequency.slice(1)}Schedule`, {
        description: `Starts the ${frequency} syncs`,
        schedule: scheduler.ScheduleExpression.rate(every),
        target: new targets.LambdaInvoke(this.dispatcher, {
          role: scheduleRole,
          input: scheduler.ScheduleTargetInput.fromObject({ frequency }),
          deadLetterQueue: props.scheduleDeadLetterQueue,
          ...scheduleRetry,
        }),
      });
    }
  }
}
