import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EventPublisher } from '../../shared/events/gateway-event';
import type { JobQueue } from '../../shared/queues/messages';
import type { DataKeySource } from '../../shared/vault/data-key-source';
import type { PollerNotices } from '../../shared/workflows/poller-notices';
import type { StateMachines } from '../../shared/workflows/state-machines';
import { encryptionContextKeys, iamEnforcement, type IamEnforcement } from './enforcement';
import { LOCAL_ACCOUNT, LOCAL_REGION, localArns } from './local-arns';
import { tableDefinition } from '../../shared/store/table';

/**
 * The local stand-ins for AWS, each checking its call against the running function's role first,
 * as the service would: what the call's action is, on which ARN, with which condition keys.
 */

const tableArn = (name: string) => `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${name}`;

/** The tables (and index) a DynamoDB command names, as IAM resources. */
export function dynamoResources(command: string, input: Record<string, unknown>): string[] {
  if (command === 'BatchGetItem' || command === 'BatchWriteItem') return Object.keys((input.RequestItems as object | undefined) ?? {}).map(tableArn);
  const table = String(input.TableName ?? '');
  return [typeof input.IndexName === 'string' ? `${tableArn(table)}/index/${input.IndexName}` : tableArn(table)];
}

/**
 * `dynamodb:LeadingKeys` of a single-item command: the item's partition key, as DynamoDB gives it to
 * IAM, so a grant narrowed to some partitions (the receivers' delivery counters) is judged as in AWS.
 */
export function leadingKeys(command: string, input: Record<string, unknown>): Record<string, string[]> {
  if (!['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'].includes(command)) return {};
  const key = (command === 'PutItem' ? input.Item : input.Key) as Record<string, { S?: string }> | undefined;
  const pk = key?.[tableDefinition.partitionKey]?.S;
  return pk === undefined ? {} : { 'dynamodb:LeadingKeys': [pk] };
}

/**
 * DynamoDB (dynalite): an SDK middleware judges each command before it is sent. The table is
 * encrypted with the data key, which DynamoDB decrypts with the caller's permission: judged too.
 */
export function guardDynamo(client: DynamoDBClient, enforcement: IamEnforcement = iamEnforcement): DynamoDBClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? '').replace(/Command$/, '');
      const input = args.input as Record<string, unknown>;
      const keys = leadingKeys(command, input);
      for (const resource of dynamoResources(command, input)) enforcement.authorize({ action: `dynamodb:${command}`, resource, context: keys });
      enforcement.authorize({ action: 'kms:Decrypt', resource: localArns.dataKey, context: { 'kms:ViaService': `dynamodb.${LOCAL_REGION}.amazonaws.com` } });
      return next(args);
    },
    { step: 'initialize', name: 'localIamEnforcement' },
  );
  return client;
}

/** The key file stands in for the credentials key: its two operations judged as KMS's. */
export function guardKeySource(source: DataKeySource, enforcement: IamEnforcement = iamEnforcement): DataKeySource {
  return {
    keyId: source.keyId,
    generateDataKey: async (context) => {
      enforcement.authorize({ action: 'kms:GenerateDataKey', resource: localArns.credentialsKey, context: encryptionContextKeys(context) });
      return source.generateDataKey(context);
    },
    decryptDataKey: async (encrypted, context) => {
      enforcement.authorize({ action: 'kms:Decrypt', resource: localArns.credentialsKey, context: encryptionContextKeys(context) });
      return source.decryptDataKey(encrypted, context);
    },
  };
}

/** A local queue as a function sends to it (SendMessage covers SendMessageBatch in IAM). */
export function guardQueue<T>(queue: JobQueue<T>, arn: string, enforcement: IamEnforcement = iamEnforcement): JobQueue<T> {
  return {
    send: async (messages) => {
      enforcement.authorize({ action: 'sqs:SendMessage', resource: arn });
      return queue.send(messages);
    },
    ...(queue.changeVisibility
      ? {
          changeVisibility: async (receiptHandle: string, seconds: number) => {
            enforcement.authorize({ action: 'sqs:ChangeMessageVisibility', resource: arn });
            return queue.changeVisibility!(receiptHandle, seconds);
          },
        }
      : {}),
  };
}

/**
 * What Lambda's SQS poller does with the consumer's role for each batch: receives it, and deletes
 * what succeeded. Judged as the consumer before the batch is handed over.
 */
export function authorizeConsume(arn: string, enforcement: IamEnforcement = iamEnforcement): void {
  enforcement.authorize({ action: 'sqs:ReceiveMessage', resource: arn });
  enforcement.authorize({ action: 'sqs:DeleteMessage', resource: arn });
}

export function guardPublisher(bus: EventPublisher, enforcement: IamEnforcement = iamEnforcement): EventPublisher {
  return {
    publish: async (events) => {
      enforcement.authorize({ action: 'events:PutEvents', resource: localArns.bus });
      return bus.publish(events);
    },
    ...(bus.recent ? { recent: (accountId?: string) => bus.recent!(accountId) } : {}),
  };
}

/** Task tokens locally all come from the conversation lifecycle (the only machine that waits for one). */
export function guardStateMachines(machines: StateMachines, enforcement: IamEnforcement = iamEnforcement): StateMachines {
  const check = (action: string, resource: string) => enforcement.authorize({ action, resource });
  return {
    startLifecycle: async (name, input) => (check('states:StartExecution', localArns.lifecycle), machines.startLifecycle(name, input)),
    startFleet: async (input) => (check('states:StartExecution', localArns.fleet), machines.startFleet(input)),
    sendTaskSuccess: async (token, output) => (check('states:SendTaskSuccess', localArns.lifecycle), machines.sendTaskSuccess(token, output)),
  };
}

export function guardPollerNotices(notices: PollerNotices, enforcement: IamEnforcement = iamEnforcement): PollerNotices {
  const arn = localArns.queues.pollerNotices;
  const check = (action: string) => enforcement.authorize({ action, resource: arn });
  return {
    tell: async (notice) => (check('sqs:SendMessage'), notices.tell(notice)),
    receive: async (options) => {
      check('sqs:ReceiveMessage');
      const received = await notices.receive(options);
      return received.map((one) => ({
        notice: one.notice,
        done: async () => (check('sqs:DeleteMessage'), one.done()),
        giveBack: async () => (check('sqs:ChangeMessageVisibility'), one.giveBack()),
      }));
    },
  };
}
