/**
 * How many requests a payment first sync at 300 ms makes for one big object (records created at
 * random times: subscriptions), beside one request per 100 records, and how many slices it
 * discovered: each ends on a part-filled page, and while the store paces the run one is split off
 * every few pages, so the share of requests over stays about the same whatever the object's size.
 * Outside `npm run bench` (about 40 s for 30,000 records on two cores):
 *
 *   npx tsx bench/first-sync-big.ts 50000
 */
import { startLocalGateway } from '../local/local-gateway';
import { runAs } from '../local/iam/enforcement';
import { startPaymentSimulator } from '../sandbox/payment-simulator';
import { connectors } from '../shared/connections/registry';
import { setLogSink, log } from '../shared/log/logger';
import { runSyncJob } from '../shared/sync/run-sync-job';
import { generatedKey } from '../test/support/local-runtime';
import { storeConnection } from '../test/support/stored-connection';

setLogSink(() => {});
const records = Number(process.argv[2] ?? 50_000);
const sim = await startPaymentSimulator({ seed: 7 });
const local = await startLocalGateway({ env: { PAYMENT_API_BASE_URL: sim.url, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '10000' }, dynamoInChildProcess: true });
sim.seedCustomers(records, { mode: 'live' });
sim.seedSubscriptions({ mode: 'live' });
sim.setRateLimit(undefined);
sim.setLatency({ ms: 300, jitterMs: 100 });
const secretKey = generatedKey('rk_live_');
sim.addApiKey(secretKey, { access: 'read' });
const accountId = 'acct-big';
await storeConnection(local.gateway, {
  accountId,
  connector: 'payment',
  config: { authenticationMethod: 'api_key', keyType: 'restricted', mode: 'live' },
  credentials: { secretKey },
  syncSettings: { dataObjects: ['subscriptions'], frequency: 'daily', method: 'api' },
});
let requests = 0;
/** Slices: list requests without a cursor (each slice's first). */
let slices = 0;
sim.onRequest((request) => {
  if (request.path !== '/v1/subscriptions') return;
  requests += 1;
  if (!request.query.has('starting_after')) slices += 1;
});
const started = performance.now();
const result = await runAs('sync-job', () => runSyncJob(local.gateway, connectors.syncing(), { accountId, connector: 'payment', object: 'subscriptions', trigger: 'manual', requestedAt: new Date().toISOString() }, log, {}));
const seconds = (performance.now() - started) / 1000;
const pages = Math.ceil(records / 100);
process.stdout.write(`${records} subscriptions at 300 ms: ${result.outcome}, ${requests} requests (${(((requests - pages) / pages) * 100).toFixed(1)}% over ${pages}), ${seconds.toFixed(1)} s, ${slices} slices\n`);
await local.stop();
await sim.stop();
process.exit(0);
