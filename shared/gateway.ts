import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { KMSClient } from '@aws-sdk/client-kms';
import { SQSClient } from '@aws-sdk/client-sqs';
import { gatewayEnvironment, type GatewayEnvironment } from './config';
import { EventBridgePublisher } from './events/event-bridge-publisher';
import type { EventPublisher } from './events/gateway-event';
import type { JobQueue, QueueMessage, QueueName } from './queues/messages';
import { SqsJobQueue } from './queues/sqs-queue';
import { Store } from './store/store';
import { KmsDataKeySource } from './vault/kms-data-key-source';
import { Vault } from './vault/vault';

/**
 * The services a handler works with. In Lambda they are AWS's (built once per warm container,
 * from the environment); under `npm start` and in tests the local runtime supplies loopback
 * stand-ins that speak the same interfaces.
 */
export interface Gateway {
  env: GatewayEnvironment;
  store: Store;
  vault: Vault;
  queues: { [Q in QueueName]: JobQueue<QueueMessage<Q>> };
  events: EventPublisher;
  now(): number;
}

let current: Gateway | undefined;

/** The gateway for this process: the one installed by `useGateway`, else AWS's from the environment. */
export function gateway(): Gateway {
  current ??= awsGateway(gatewayEnvironment());
  return current;
}

/** Installs the local runtime's (or a test's) gateway; returns the previous one. */
export function useGateway(next: Gateway | undefined): Gateway | undefined {
  const previous = current;
  current = next;
  return previous;
}

function required(env: GatewayEnvironment, name: keyof GatewayEnvironment): string {
  const value = env[name];
  if (typeof value !== 'string' || value === '') throw new Error(`${name} is not set for this function`);
  return value;
}

/** A queue whose URL this function was not given fails only if used, with a clear message. */
function sqsQueue<T>(client: () => SQSClient, url: string | undefined, name: string): JobQueue<T> {
  if (!url) return { send: () => Promise.reject(new Error(`${name} queue URL is not set for this function`)) };
  let queue: SqsJobQueue<T> | undefined;
  return { send: (messages) => (queue ??= new SqsJobQueue<T>(client(), url)).send(messages) };
}

function awsGateway(env: GatewayEnvironment): Gateway {
  // Clients are created on first use so a function pays only for the services it touches.
  let sqs: SQSClient | undefined;
  const sqsClient = () => (sqs ??= new SQSClient({}));
  let publisher: EventBridgePublisher | undefined;
  return {
    env,
    store: new Store({ client: new DynamoDBClient({}), tableName: required(env, 'TABLE_NAME') }),
    vault: new Vault({
      keySource: new KmsDataKeySource({ client: new KMSClient({}), keyId: env.CREDENTIALS_KEY_ID ?? '' }),
      cacheTtlSeconds: env.VAULT_CACHE_TTL_SECONDS,
    }),
    queues: {
      syncJobs: sqsQueue(sqsClient, env.SYNC_QUEUE_URL, 'sync'),
      webhookEvents: sqsQueue(sqsClient, env.WEBHOOK_QUEUE_URL, 'webhook events'),
      ingestion: sqsQueue(sqsClient, env.INGESTION_QUEUE_URL, 'ingestion'),
    },
    events: {
      publish: (events) =>
        (publisher ??= new EventBridgePublisher(new EventBridgeClient({}), required(env, 'EVENT_BUS_NAME'))).publish(events),
    },
    now: () => Date.now(),
  };
}
