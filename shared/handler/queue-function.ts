import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod/mini';
import { addToLogContext, withLogContext } from '../log/log-context';
import { log, type Logger } from '../log/logger';
import { gatewayFunction, lambdaContext, type FunctionOptions } from './engine';

export interface QueueFunctionOptions<M, B> extends FunctionOptions<SQSEvent> {
  /** The account a message is for, into its log context. */
  accountOf?: (message: M) => string | undefined;
  /** Records one at a time (default: side by side, as SQS batches are unordered anyway). */
  sequential?: boolean;
  /** State shared by the records of one batch (a cache), made afresh for each batch. */
  perBatch?: () => B;
}

/** What a record's work gets besides its message. */
export interface BatchInvocation<B> {
  context: Context | undefined;
  batch: B;
}
export interface RecordInvocation<B> extends BatchInvocation<B> {
  /** The SQS record itself (its id, receive count, receipt handle). */
  record: SQSRecord;
}

/**
 * An SQS consumer: each record parsed with `schema` and handed to `work` in its own log context
 * (message id, receive count, account). Powertools' batch processor reports the records that threw
 * as a partial batch response, so SQS retries only those; a record that does not parse fails too,
 * and after the queue's maxReceiveCount lands in the dead-letter queue, where the alarm fires.
 */
export function queueFunction<S extends z.core.$ZodType, B = undefined>(
  schema: S,
  work: (message: z.infer<S>, log: Logger, invocation: RecordInvocation<B>) => Promise<void>,
  options: QueueFunctionOptions<z.infer<S>, B> = {},
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const onRecord = (invocation: BatchInvocation<B>) => (record: SQSRecord) =>
    withLogContext({ messageId: record.messageId, receiveCount: record.attributes?.ApproximateReceiveCount }, async () => {
      try {
        const parsed = z.safeParse(schema, JSON.parse(record.body));
        if (!parsed.success)
          throw new Error(`message does not match ${z.globalRegistry.get(schema)?.description ?? 'its schema'}: ${parsed.error.issues.length} issue(s)`);
        const accountId = options.accountOf?.(parsed.data);
        if (accountId) addToLogContext({ accountId });
        await work(parsed.data, log, { ...invocation, record });
      } catch (error) {
        log.warn('message failed; it will be retried', { error });
        throw error;
      }
    });
  return gatewayFunction<SQSEvent, SQSBatchResponse>(
    // A processor per invocation: its state is the batch's, and local runs may overlap.
    (event, context) =>
      processPartialResponse(event, onRecord({ context: lambdaContext(context), batch: options.perBatch?.() as B }), new BatchProcessor(EventType.SQS), {
        context,
        // All failed is reported like some failed (each retried, then dead-lettered), not thrown.
        throwOnFullBatchFailure: false,
        processInParallel: !options.sequential,
      }),
    () => ({}),
    (options.use ?? []) as MiddlewareObj<SQSEvent, SQSBatchResponse>[],
  );
}
