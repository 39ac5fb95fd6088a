import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { findDeadLetterQueue, ReplayError, replayDeadLetters, replayStatus } from '../../shared/webhooks/replay';

/**
 * The operator's replay in AWS (`npm run replay-dlq`), against a mocked SQS (no local SQS server):
 * which queue it finds, and the message move task it starts. The end-to-end replay of a
 * dead-lettered event runs locally in event-worker.test.ts.
 */
const sqs = mockClient(SQSClient);
const client = new SQSClient({ region: 'eu-west-1' });
const base = 'https://sqs.eu-west-1.amazonaws.com/111122223333';
const dlqUrl = `${base}/IntegrationGateway-WebhooksWebhookEventsDeadLetterQueue3C4D5E6F-Ab12Cd34Ef56`;
const dlqArn = 'arn:aws:sqs:eu-west-1:111122223333:IntegrationGateway-WebhooksWebhookEventsDeadLetterQueue3C4D5E6F-Ab12Cd34Ef56';

beforeEach(() => {
  sqs.reset();
  sqs.on(ListQueuesCommand).resolves({
    QueueUrls: [
      `${base}/IntegrationGateway-WebhooksWebhookEventsQueue1A2B3C4D-Zz98Yy76Xx54`,
      dlqUrl,
      `${base}/IntegrationGateway-SyncSyncJobsDeadLetterQueue9F8E7D6C-Qq11Ww22Ee33.fifo`,
    ],
  });
  sqs.on(GetQueueAttributesCommand).resolves({ Attributes: { QueueArn: dlqArn, ApproximateNumberOfMessages: '7' } });
  sqs.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: 'task-1' });
  sqs.on(GetQueueUrlCommand).resolves({ QueueUrl: dlqUrl });
});
afterAll(() => sqs.restore());

describe('finding the dead-letter queue', () => {
  it("finds the stack's webhook dead-letter queue by name, and not its source queue", async () => {
    expect(await findDeadLetterQueue(client, { queue: 'webhookEvents', stackName: 'IntegrationGateway' })).toBe(dlqUrl);
    expect(sqs.commandCalls(ListQueuesCommand)[0]!.args[0].input).toMatchObject({ QueueNamePrefix: 'IntegrationGateway-' });
    expect(await findDeadLetterQueue(client, { queue: 'syncJobs', stackName: 'IntegrationGateway' })).toContain('SyncSyncJobsDeadLetterQueue');
  });

  it('says what to do when it cannot tell, and takes an ARN or a URL instead', async () => {
    await expect(findDeadLetterQueue(client, { queue: 'ingestion', stackName: 'IntegrationGateway' })).rejects.toThrow(ReplayError);
    await expect(findDeadLetterQueue(client, { queue: 'ingestion', stackName: 'IntegrationGateway' })).rejects.toThrow('--dlq');
    expect(await findDeadLetterQueue(client, { queue: 'webhookEvents', stackName: 'x', given: dlqArn })).toBe(dlqUrl);
    expect(sqs.commandCalls(GetQueueUrlCommand)[0]!.args[0].input).toEqual({ QueueName: dlqArn.split(':')[5], QueueOwnerAWSAccountId: '111122223333' });
    expect(await findDeadLetterQueue(client, { queue: 'webhookEvents', stackName: 'x', given: dlqUrl })).toBe(dlqUrl);
    await expect(findDeadLetterQueue(client, { queue: 'webhookEvents', stackName: 'x', given: 'arn:aws:sns:eu-west-1:1:topic' })).rejects.toThrow('not an SQS queue ARN');
  });
});

describe('replaying', () => {
  it('starts a message move task from the dead-letter queue back to its source queue', async () => {
    const started = await replayDeadLetters(client, dlqUrl, { maxPerSecond: 20 });
    expect(started).toEqual({ deadLetterQueueArn: dlqArn, waiting: 7, taskHandle: 'task-1' });
    // No destination: SQS returns each message to the queue that dead-lettered it.
    expect(sqs.commandCalls(StartMessageMoveTaskCommand)[0]!.args[0].input).toEqual({ SourceArn: dlqArn, MaxNumberOfMessagesPerSecond: 20 });
  });

  it('starts nothing when the dead-letter queue is empty', async () => {
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: { QueueArn: dlqArn, ApproximateNumberOfMessages: '0' } });
    expect(await replayDeadLetters(client, dlqUrl)).toEqual({ deadLetterQueueArn: dlqArn, waiting: 0 });
    expect(sqs.commandCalls(StartMessageMoveTaskCommand)).toHaveLength(0);
  });

  it('reports how the replays went', async () => {
    sqs.on(ListMessageMoveTasksCommand).resolves({
      Results: [{ Status: 'COMPLETED', ApproximateNumberOfMessagesMoved: 7, ApproximateNumberOfMessagesToMove: 7, StartedTimestamp: 1_750_000_000_000, SourceArn: dlqArn }],
    });
    expect(await replayStatus(client, dlqUrl)).toEqual([{ status: 'COMPLETED', moved: 7, toMove: 7, startedAt: new Date(1_750_000_000_000).toISOString() }]);
  });
});
