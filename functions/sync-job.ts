import { connectors } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { queueFunction } from '../shared/handler/queue-function';
import { traces } from '../shared/handler/traces';
import { recordMetric } from '../shared/metrics/gateway-metrics';
import { SyncJob } from '../shared/queues/messages';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { purgeDisconnected } from '../shared/sync/purge-disconnected';
import { runSyncJob } from '../shared/sync/run-sync-job';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';

// A run that reaches its time budget hands over to a continuation job on the sync queue.
provideAwsServices({ queues: sqsQueues });
checkSettingsAtLoad('sync-job');

/** Leaves this much of the invocation for saving the checkpoint and enqueueing the continuation. */
const HAND_OVER_MARGIN_MS = 30_000;

/**
 * One sync job per message (batch size 1). A transient failure (rate limits, an outage) is
 * reported as a batch failure so SQS retries it later from the saved checkpoint; a failure only
 * the user can fix (a revoked key) is recorded on the connection's health and not retried.
 */
export const handler = queueFunction(
  SyncJob,
  async (job, log, { context }) => {
    const deadline = context ? Date.now() + context.getRemainingTimeInMillis() - HAND_OVER_MARGIN_MS : undefined;
    const jobLog = log.with({ connector: job.connector, object: job.object, trigger: job.trigger });
    if (job.trigger === 'purge') {
      await purgeDisconnected(gateway(), job, jobLog, deadline ? { deadline } : {});
      return;
    }
    const result = await runSyncJob(gateway(), connectors.syncing(), job, jobLog, { ...(deadline ? { deadline } : {}) });
    if (result.outcome === 'finished') {
      recordMetric.syncRun(job.connector, 'finished');
      recordMetric.recordsSynced(job.connector, job.object, result.counts.created + result.counts.updated + result.counts.deleted);
    }
    if (result.outcome === 'failed') {
      recordMetric.syncRun(job.connector, 'failed');
      if (result.retry) throw new Error(`sync failed, will retry: ${result.problem.reason}`);
    }
  },
  { accountOf: (job) => job.accountId, sequential: true, use: [traces()] },
);
