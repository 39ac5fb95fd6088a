import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import { limitTableWrites } from '../../local/table-throughput';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';
import { connectors } from '../../shared/connections/registry';
import { log } from '../../shared/log/logger';
import { runSyncJob } from '../../shared/sync/run-sync-job';
import { TableShare } from '../../shared/sync/write-pace';
import { sdkTableClient } from '../../shared/store/sdk-table-client';

import { localDynamoClient } from '../support/dynamo';
import { generatedKey } from '../support/local-runtime';
import { recordsAt, storeConnection, storedRecordIds } from '../support/stored-connection';

/**
 * A first sync into a table that takes fewer writes than the sync's pace, as a new on-demand table
 * does (4,000 write units a second for the whole table, whatever the keys; here scaled down to what
 * a test writes in a few seconds). DynamoDB refuses the excess (local/table-throughput.ts); the run
 * sends it again rather than failing, and stores every record once.
 */
describe('a first sync into a table that refuses writes for its throughput', () => {
  let sim: PaymentSimulator;
  let local: LocalGateway;
  let client: ReturnType<typeof localDynamoClient> | undefined;

  beforeAll(async () => {
    sim = await startPaymentSimulator({ seed: 41 });
    local = await startLocalGateway({ env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '5000' } });
    sim.seedCustomers(1_200, { mode: 'live', spacingSeconds: 26_000 });
  });
  afterAll(async () => {
    client?.destroy();
    await local.stop();
    await sim.stop();
  });

  it('rides out the refusals: every record stored once, the run finished', async () => {
    const accountId = 'acct-new-table';
    const secretKey = generatedKey('rk_live_');
    sim.addApiKey(secretKey, { access: 'read' });
    await storeConnection(local.gateway, {
      accountId,
      connector: 'payment',
      config: { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' },
      credentials: { secretKey },
      syncSettings: { dataObjects: ['customers'], frequency: 'daily', method: 'api' },
    });
    // The sync's own pace is 850 units a second into each of 8 shard keys: 6,800. The table takes 200.
    client = localDynamoClient(local.dynamo.endpoint);
    const table = limitTableWrites(client, { writeUnitsPerSecond: 200 });
    const lambda = { ...local.gateway, table: { client: sdkTableClient(client), tableName: local.dynamo.tableName } };
    // The run's share of the table (shared/sync/write-pace.ts) is told of the refusals and paces its record writes.
    const shareTold = vi.spyOn(TableShare.prototype, 'refused');
    const shareTaken = vi.spyOn(TableShare.prototype, 'take');
    const result = await runSyncJob(lambda, connectors.syncing(), { accountId, connector: 'payment', object: 'customers', trigger: 'manual', requestedAt: new Date().toISOString() }, log);

    expect(result).toMatchObject({ outcome: 'finished', mode: 'full' });
    if (result.outcome !== 'finished') return;
    const stored = await storedRecordIds(local.gateway.table, recordsAt(accountId, 'payment', 'customers'));
    const platform = [...sim.state.live.customers.values()].map((record) => record.id).sort();
    expect(stored.sort()).toEqual(platform);
    expect(result.counts).toMatchObject({ created: 1_200, updated: 0 });
    // The table did refuse writes, record batches and the run's own checkpoint and budget writes
    // alike: the run rode them out (the SDK's retries, STORE_MAX_ATTEMPTS, then the batch's own).
    expect(table.unitsRefused).toBeGreaterThan(0);
    expect(table.refusedBy.BatchWriteItem).toBeGreaterThan(0);
    expect(shareTold).toHaveBeenCalled();
    // Every record batch took its turn in the share (1,200 records: at least 48 batches of 25).
    expect(shareTaken.mock.calls.length).toBeGreaterThanOrEqual(48);
    shareTold.mockRestore();
    shareTaken.mockRestore();
  }, 60_000);
});
