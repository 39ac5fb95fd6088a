import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import type { SyncJob } from '../queues/messages';
import * as store from '../store/store';

const PAGE = 500;

export type PurgeResult = { outcome: 'purged'; deleted: number } | { outcome: 'continued'; deleted: number } | { outcome: 'skipped'; reason: string };

/**
 * After Disconnect: deletes one data object's synced records, so playbooks stop reading the
 * platform's data once its access is revoked. A connection reconnected in the meantime keeps them
 * (its next full sync reconciles them). Long purges hand over to a continuation job.
 */
export async function purgeDisconnected(gateway: Gateway, job: SyncJob, log: Logger, options: { deadline?: number } = {}): Promise<PurgeResult> {
  if (await store.getConnection(gateway.table, job.accountId, job.connector)) {
    log.info('purge skipped: the connector was reconnected');
    return { outcome: 'skipped', reason: 'the connector was reconnected' };
  }
  let deleted = 0;
  for (;;) {
    const count = await store.deleteRecords(gateway.table, job.accountId, job.connector, job.object, PAGE);
    deleted += count;
    if (count < PAGE) break;
    if (gateway.now() >= (options.deadline ?? Infinity)) {
      await gateway.queues.syncJobs.send([{ ...job, requestedAt: new Date(gateway.now()).toISOString() }]);
      return { outcome: 'continued', deleted };
    }
  }
  log.info('disconnected records purged', { deleted });
  return { outcome: 'purged', deleted };
}
