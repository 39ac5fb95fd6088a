import { schedulingPlatforms, syncPlatforms } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { queueFunction } from '../shared/handler/queue-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { traces } from '../shared/handler/traces';
import { SyncJob } from '../shared/queues/messages';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { purgeDisconnected } from '../shared/sync/purge-disconnected';
import { runScheduledWork } from '../shared/sync/scheduled-work';
import { processSyncJob } from '../shared/sync/sync-job-message';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

// A run that reaches its time budget hands over to a continuation job on the sync queue.
provideAwsServices({ table: signedTable, vault: signedKmsVault, queues: signedSqsQueues });
checkSettingsAtLoad('sync-job');

/** Leaves this much of the invocation for saving the checkpoint and enqueueing the continuation. */
const HAND_OVER_MARGIN_MS = 30_000;

/**
 * One sync job per message (batch size 1). A transient failure (rate limits, an outage) records
 * its next try on the checkpoint, and the retry schedule runs it then, with growing delays over
 * 12 hours; past that the job is reported failed until it reaches the dead-letter queue (alarmed).
 * A failure only the user can fix (a revoked key) is recorded on the connection's health and not retried.
 */
export const handler = queueFunction(
  SyncJob,
  async (job, log, { context, record }) => {
    const deadline = context ? Date.now() + context.getRemainingTimeInMillis() - HAND_OVER_MARGIN_MS : undefined;
    const jobLog = log.with({ connector: job.connector, object: job.object, trigger: job.trigger });
    if (job.trigger === 'purge') {
      await purgeDisconnected(gateway(), job, jobLog, deadline ? { deadline } : {});
      return;
    }
    const scheduled = schedulingPlatforms[job.connector]?.scheduled;
    if (scheduled?.owns(job.object)) {
      await runScheduledWork(scheduled, job, { gateway: gateway(), log: jobLog, ...(deadline ? { deadline } : {}) });
      return;
    }
    const message = { messageId: record.messageId, receiptHandle: record.receiptHandle, receiveCount: Number(record.attributes.ApproximateReceiveCount) };
    await processSyncJob(gateway(), syncPlatforms, job, message, jobLog, deadline ? { deadline } : {});
  },
  { accountOf: (job) => job.accountId, sequential: true, use: traces() },
);
