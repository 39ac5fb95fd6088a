import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type * as z from 'zod';
import { log as rootLogger, type Logger } from '../log/logger';

/**
 * Runs `work` for each message of an SQS batch on its own, and reports the ones that failed so
 * SQS retries only those (partial batch response). A message that fails to parse is reported
 * too: after the queue's maxReceiveCount it lands in the dead-letter queue, where the alarm fires.
 */
export async function processBatch<S extends z.ZodType>(
  event: SQSEvent,
  schema: S,
  /** `record`: the SQS record itself, for consumers that act on the message (its id, receive count, receipt handle). */
  work: (message: z.infer<S>, log: Logger, record: SQSRecord) => Promise<void>,
  options: { log?: Logger; concurrency?: number } = {},
): Promise<SQSBatchResponse> {
  const log = options.log ?? rootLogger;
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  const records = event.Records;
  const concurrency = Math.max(1, options.concurrency ?? 1);

  let next = 0;
  async function worker(): Promise<void> {
    while (next < records.length) {
      const record = records[next++]!;
      const messageLog = log.with({ messageId: record.messageId, receiveCount: record.attributes.ApproximateReceiveCount });
      try {
        const parsed = schema.safeParse(JSON.parse(record.body));
        if (!parsed.success) throw new Error(`message does not match ${schema.description ?? 'its schema'}: ${parsed.error.issues.length} issue(s)`);
        await work(parsed.data, messageLog, record);
      } catch (error) {
        messageLog.warn('message failed; it will be retried', { error });
        failures.push({ itemIdentifier: record.messageId });
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, records.length) }, worker));
  return { batchItemFailures: failures };
}
