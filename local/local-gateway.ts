import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedEnvironment } from '../shared/config';
import { countedPublisher } from '../shared/events/counted-publisher';
import type { Gateway } from '../shared/gateway';
import { syncJobGroup, type IngestionMessage, type SyncJob, type WebhookEventMessage } from '../shared/queues/messages';
import { sdkTableClient } from '../shared/store/sdk-table-client';
import { openLocalKeyFile } from '../shared/vault/local-data-key-source';
import type { DataKeySource } from '../shared/vault/data-key-source';
import { Vault } from '../shared/vault/vault';
import { LocalEventBus } from './local-event-bus';
import { reactionsTo } from '../shared/connections/registry';
import { reactingPublisher } from '../shared/events/reactions';
import { openDataFolder } from './data-folder';
import { startLocalDynamo, type LocalDynamo } from './local-dynamo';
import { LocalQueue } from './local-queue';
import { LocalSignIn } from './local-sign-in';
import { LocalPollerNotices } from './local-poller-notices';
import { LocalStateMachines } from './local-state-machines';
import { localStateMachineHandlers } from './local-conversations';
import { guardDynamo, guardKeySource, guardPollerNotices, guardPublisher, guardQueue, guardStateMachines } from './iam/guarded-services';
import { saveIamUsage } from './iam/enforcement';
import { localArns } from './iam/local-arns';
import { perFunctionVault } from './iam/per-function-vault';
import { withTableThroughput } from './table-throughput';

export interface LocalGatewayOptions {
  /** Folder for the table and the key file; in memory with a throwaway key when absent (tests). */
  dataDir?: string;
  /** Environment values (platform addresses...) on top of the defaults. */
  env?: Record<string, string | undefined>;
  /** Run dynalite in its own process (benchmarks: the database does not share the gateway's CPU). */
  dynamoInChildProcess?: boolean;
  /**
   * Write units a second the table takes, as a deployed one does (local/table-throughput.ts): a new
   * on-demand table takes 4,000. Unset: as many as dynalite can (`LOCAL_TABLE_WRITE_UNITS` under `npm start`).
   */
  tableWriteUnits?: number;
  /** Queue retry delay; tests shorten it. */
  retryDelayMs?: number;
  now?: () => number;
}

export interface LocalGateway {
  gateway: Gateway;
  queues: { syncJobs: LocalQueue<SyncJob>; webhookEvents: LocalQueue<WebhookEventMessage>; ingestion: LocalQueue<IngestionMessage> };
  bus: LocalEventBus;
  /** The conversation lifecycle and poller fleet definitions, run in process. */
  stateMachines: LocalStateMachines;
  pollerNotices: LocalPollerNotices;
  dynamo: LocalDynamo;
  /** The vault's key source (KMS's stand-in): tests and benchmarks count its calls as KMS calls. */
  keySource: DataKeySource;
  signIn: LocalSignIn;
  stop(): Promise<void>;
}

/**
 * The gateway's services on this machine: dynalite for DynamoDB, a key file for KMS, in-process
 * queues for SQS and a recent-events buffer for EventBridge. Handlers get it through useGateway().
 */
export async function startLocalGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  // Every setting checked before anything starts: a wrong one stops `npm start` with its name and what is wrong.
  const env = checkedEnvironment({ GATEWAY_MODE: 'local', ...options.env });
  let dynamo: LocalDynamo;
  let keySource: DataKeySource;
  let signingKey: Uint8Array;

  if (options.dataDir) {
    openDataFolder(options.dataDir);
    const tablePath = join(options.dataDir, 'dynamodb');
    // A new key is made only together with a new, empty table: a key made for existing data would orphan it.
    const firstRun = !existsSync(tablePath);
    keySource = await openLocalKeyFile(env.LOCAL_KEY_FILE ?? join(options.dataDir, 'vault.key'), { create: firstRun });
    mkdirSync(tablePath, { recursive: true, mode: 0o700 });
    dynamo = await startLocalDynamo({ path: tablePath });
    signingKey = signInKey(join(options.dataDir, 'sign-in.key'));
  } else {
    keySource = await openLocalKeyFile(join(mkdtempSync(join(tmpdir(), 'gateway-key-')), 'vault.key'), { create: true });
    dynamo = await startLocalDynamo({ childProcess: options.dynamoInChildProcess ?? false });
    signingKey = randomBytes(32);
  }
  const guardedKeys = guardKeySource(keySource);
  const vault = perFunctionVault(() => new Vault({ keySource: guardedKeys, cacheTtlSeconds: env.VAULT_CACHE_TTL_SECONDS, ...(options.now ? { now: options.now } : {}) }));

  const retryDelayMs = options.retryDelayMs ?? 1000;
  const queues = {
    // The stack's event sources (lib/sync.ts, lib/webhooks.ts, lib/ingestion.ts): batch sizes, maxConcurrency
    // where set (else LOCAL_MAX_CONCURRENCY), and the sync queue's FIFO groups.
    syncJobs: new LocalQueue<SyncJob>({ name: 'sync-jobs', batchSize: 1, groupOf: syncJobGroup, retryDelayMs }),
    webhookEvents: new LocalQueue<WebhookEventMessage>({ name: 'webhook-events', batchSize: 10, retryDelayMs }),
    ingestion: new LocalQueue<IngestionMessage>({ name: 'ingestion', batchSize: 50, maxConcurrency: 2, retryDelayMs }),
  };
  const bus = new LocalEventBus();
  const pollerNotices = new LocalPollerNotices();
  const stateMachines = new LocalStateMachines(localStateMachineHandlers(() => gateway));
  // Every AWS call a handler makes is judged against its function's role in the synthesized
  // template (local/iam/), and refused with AccessDenied as AWS would.
  const gateway: Gateway = {
    env,
    table: { client: sdkTableClient(withTableThroughput(guardDynamo(dynamo.client), options.tableWriteUnits)), tableName: dynamo.tableName },
    vault,
    queues: {
      syncJobs: guardQueue(queues.syncJobs, localArns.queues.syncJobs),
      webhookEvents: guardQueue(queues.webhookEvents, localArns.queues.webhookEvents),
      ingestion: guardQueue(queues.ingestion, localArns.queues.ingestion),
    },
    // As in AWS: connectors' reactions run on the publishing path (shared/events/reactions.ts).
    events: countedPublisher(reactingPublisher(guardPublisher(bus), reactionsTo, () => gateway)),
    stateMachines: guardStateMachines(stateMachines),
    pollerNotices: guardPollerNotices(pollerNotices),
    now: options.now ?? Date.now,
  };

  return {
    gateway,
    queues,
    bus,
    stateMachines,
    pollerNotices,
    dynamo,
    keySource,
    signIn: new LocalSignIn(signingKey),
    async stop() {
      await stateMachines.stopAll();
      for (const queue of Object.values(queues)) queue.stop();
      await dynamo.stop();
      saveIamUsage();
    },
  };
}

/** The local sign-in key; losing it only signs everyone out, so it is made whenever missing. */
function signInKey(path: string): Uint8Array {
  if (existsSync(path)) {
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length === 32) return key;
  }
  const key = randomBytes(32);
  writeFileSync(path, key.toString('base64'), { mode: 0o600 });
  return key;
}
