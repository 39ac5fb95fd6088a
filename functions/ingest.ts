import type { SQSEvent } from 'aws-lambda';
import { dataClient } from '../shared/data/client';
import { connectionTargets, ingestSqsBatch, type OpenDataSession } from '../shared/data/ingestion';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { taskFunction } from '../shared/handler/engine';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { traces } from '../shared/handler/traces';
import { recordMetric } from '../shared/metrics/gateway-metrics';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';
import * as store from '../shared/store/store';

const openDataSession: OpenDataSession = async ({ accountId, config, credentials, env }) => dataClient({ env, accountId, config, credentials });

/**
 * The ingestion queue's consumer (batch of up to 50, partial batch responses): sends engagement
 * events to each account's data platform. The batch is planned as a whole (records of one account
 * share requests of up to 50; a refused record is isolated by splitting), so the per-message
 * outcomes and the partial batch response come from shared/data/ingestion.ts rather than a
 * per-record batch processor.
 */
provideAwsServices({ table: signedTable, vault: signedKmsVault });
checkSettingsAtLoad('ingest');

export const handler = taskFunction(
  async (event: SQSEvent) => {
    const services = gateway();
    const response = await ingestSqsBatch(event, {
      targetFor: connectionTargets(services, openDataSession),
      recordCounts: (accountId, counts) => store.addDeliveryCounts(services.table, accountId, 'data', services.now(), counts),
    });
    const failed = response.batchItemFailures.length;
    recordMetric.ingestionRecords(event.Records.length - failed, failed);
    return response;
  },
  { use: traces() },
);
