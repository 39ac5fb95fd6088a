import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processBatch } from '../shared/queues/batch';
import { IngestionMessage } from '../shared/queues/messages';

/**
 * Sending engagement events to the data platform: deployed and wired now, built with its connector's issue. Until then every message is
 * reported as failed, so it is retried and then kept in the dead-letter queue (alarmed), never dropped.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  processBatch(event, IngestionMessage, async () => {
    throw new Error('Sending engagement events to the data platform is not available in this version of the gateway');
  });
