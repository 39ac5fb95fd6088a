import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { dataClient } from '../shared/data/client';
import { connectionTargets, ingestSqsBatch, type OpenDataSession } from '../shared/data/ingestion';
import { gateway } from '../shared/gateway';

/**
 * The ingestion queue's consumer (batch of up to 50, partial batch responses): sends engagement
 * events to each account's data platform. The work is in shared/data/ingestion.ts.
 */
const openDataSession: OpenDataSession = async ({ accountId, config, credentials, env }) => dataClient({ env, accountId, config, credentials });

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const services = gateway();
  return ingestSqsBatch(event, {
    targetFor: connectionTargets(services, openDataSession),
    recordCounts: (accountId, counts) => services.store.addDeliveryCounts(accountId, 'data', services.now(), counts),
  });
};
