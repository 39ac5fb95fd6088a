import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processBatch } from '../shared/queues/batch';
import { SyncJob } from '../shared/queues/messages';

/**
 * Syncing platform data: deployed and wired now, built with its connector's issue. Until then every message is
 * reported as failed, so it is retried and then kept in the dead-letter queue (alarmed), never dropped.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  processBatch(event, SyncJob, async () => {
    throw new Error('Syncing platform data is not available in this version of the gateway');
  });
