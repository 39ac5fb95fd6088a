/**
 * `npm run replay-dlq -- [options]`: after a fix, re-runs the messages a queue dead-lettered, in
 * AWS (credentials and region from the usual AWS environment). Locally, use
 * `POST /local/queues/<queue>/redrive` instead.
 *
 *   --queue webhookEvents|syncJobs|ingestion   which queue's dead letters (default webhookEvents)
 *   --stack <name>                             the stack that made the queues (default IntegrationGateway)
 *   --dlq <arn or url>                         the dead-letter queue itself, instead of finding it by name
 *   --rate <n>                                 move at most n messages a second (default: as fast as SQS goes)
 *   --status                                   show the latest replays of the queue instead of starting one
 */
import { parseArgs } from 'node:util';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_QUEUES, ReplayError, findDeadLetterQueue, replayDeadLetters, replayStatus, type ReplayQueue } from '../shared/webhooks/replay';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      queue: { type: 'string', default: 'webhookEvents' },
      stack: { type: 'string', default: 'IntegrationGateway' },
      dlq: { type: 'string' },
      rate: { type: 'string' },
      status: { type: 'boolean', default: false },
    },
  });
  if (!(values.queue in DEAD_LETTER_QUEUES)) throw new ReplayError(`--queue is one of ${Object.keys(DEAD_LETTER_QUEUES).join(', ')}`);
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  if (rate !== undefined && !(Number.isInteger(rate) && rate >= 1 && rate <= 500)) throw new ReplayError('--rate is a whole number from 1 to 500');

  const sqs = new SQSClient({});
  const url = await findDeadLetterQueue(sqs, { queue: values.queue as ReplayQueue, stackName: values.stack, ...(values.dlq ? { given: values.dlq } : {}) });
  if (values.status) {
    const tasks = await replayStatus(sqs, url);
    process.stdout.write(tasks.length === 0 ? `No replays of ${url} yet.\n` : `${tasks.map((task) => JSON.stringify(task)).join('\n')}\n`);
    return;
  }
  const started = await replayDeadLetters(sqs, url, rate === undefined ? {} : { maxPerSecond: rate });
  process.stdout.write(
    started.taskHandle
      ? `Replaying about ${started.waiting} message(s) from ${started.deadLetterQueueArn} to their queue. Follow with --status.\n`
      : `${started.deadLetterQueueArn} is empty: nothing to replay.\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`replay-dlq: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
