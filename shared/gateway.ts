import { gatewayEnvironment, type GatewayEnvironment } from './config';
import { countedPublisher } from './events/counted-publisher';
import type { EventPublisher } from './events/gateway-event';
import type { JobQueue, QueueMessage, QueueName } from './queues/messages';
import type { Table } from './store/table-access';
import type { TableClient } from './store/table-client';
import type { Vault } from './vault/vault';
import type { PollerNotices } from './workflows/poller-notices';
import type { StateMachines } from './workflows/state-machines';

/**
 * The services a handler works with. In Lambda they are AWS's (built once per warm container,
 * from the environment); under `npm start` and in tests the local runtime supplies loopback
 * stand-ins that speak the same interfaces.
 */
export interface Gateway {
  env: GatewayEnvironment;
  /** The one table: the store's functions take it first (shared/store/store.ts). */
  table: Table;
  /** The vault's operations (locally one vault per function, as each Lambda function has its own cache). */
  vault: Pick<Vault, 'seal' | 'open' | 'forget'>;
  queues: { [Q in QueueName]: JobQueue<QueueMessage<Q>> };
  events: EventPublisher;
  /** The lifecycle and poller-fleet state machines (Step Functions; a local interpreter locally). */
  stateMachines: StateMachines;
  /** Tells the running poller fleet about new conversations. */
  pollerNotices: PollerNotices;
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

/**
 * The AWS services are provided by the handlers that use them (`provideAwsServices({ queues:
 * signedSqsQueues })`), so a function bundles only what it calls: in Lambda, signed calls with no SDK
 * client (shared/aws/signed-call.ts, docs/cold-starts.md).
 */
export interface AwsServices {
  /** The table (DynamoDB): every function provides it (`signedTable`). */
  table?: (env: GatewayEnvironment) => TableClient;
  queues?: (env: GatewayEnvironment) => Gateway['queues'];
  events?: (env: GatewayEnvironment) => EventPublisher;
  stateMachines?: (env: GatewayEnvironment) => StateMachines;
  pollerNotices?: (env: GatewayEnvironment) => PollerNotices;
  /** The credentials vault (KMS): provided by the functions that seal or open credentials. */
  vault?: (env: GatewayEnvironment) => Gateway['vault'];
}
let awsServices: AwsServices = {};

export function provideAwsServices(services: AwsServices): void {
  awsServices = { ...awsServices, ...services };
}

function missing(what: string): never {
  throw new Error(`${what} is not provided to this function: call provideAwsServices in its handler file`);
}

function required(env: GatewayEnvironment, name: keyof GatewayEnvironment): string {
  const value = env[name];
  if (typeof value !== 'string' || value === '') throw new Error(`${name} is not set for this function`);
  return value;
}

function awsGateway(env: GatewayEnvironment): Gateway {
  /** The service the handler provided, made on its first use and kept; one whose making failed (a setting missing) is made again next time. */
  const provided = <K extends keyof AwsServices>(name: K, what: string) => {
    let made: ReturnType<NonNullable<AwsServices[K]>> | undefined;
    return () => (made ??= ((awsServices[name] ?? missing(what)) as (env: GatewayEnvironment) => ReturnType<NonNullable<AwsServices[K]>>)(env));
  };
  const keys = provided('vault', 'The vault (KMS)');
  const machines = provided('stateMachines', 'Step Functions');
  const noticeQueue = provided('pollerNotices', 'the poller notice queue');
  const publisher = provided('events', 'EventBridge');
  const jobQueues = provided('queues', 'SQS');
  const sqs = <Q extends QueueName>(name: Q) => jobQueues()[name];
  const queue = <Q extends QueueName>(name: Q): JobQueue<QueueMessage<Q>> => ({
    send: (messages) => sqs(name).send(messages),
    changeVisibility: async (receiptHandle, seconds) => {
      const target = sqs(name);
      if (!target.changeVisibility) throw new Error(`the ${name} queue cannot change a message's visibility`);
      await target.changeVisibility(receiptHandle, seconds);
    },
  });
  return {
    env,
    table: { client: provided('table', 'The table (DynamoDB)')(), tableName: required(env, 'TABLE_NAME') },
    vault: {
      seal: (scope, credentials, options) => keys().seal(scope, credentials, options),
      open: (scope, sealed, options) => keys().open(scope, sealed, options),
      forget: (scope) => keys().forget(scope),
    },
    queues: { syncJobs: queue('syncJobs'), webhookEvents: queue('webhookEvents'), ingestion: queue('ingestion') },
    events: countedPublisher({ publish: async (batch) => publisher().publish(batch) }),
    stateMachines: {
      startLifecycle: async (name, input) => machines().startLifecycle(name, input),
      startFleet: async (input) => machines().startFleet(input),
      sendTaskSuccess: async (token, output) => machines().sendTaskSuccess(token, output),
    },
    pollerNotices: {
      tell: async (notice) => noticeQueue().tell(notice),
      receive: async (options) => noticeQueue().receive(options),
    },
    now: () => Date.now(),
  };
}
