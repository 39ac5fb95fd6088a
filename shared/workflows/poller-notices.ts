import type { ReceiveMessageResult } from '@aws-sdk/client-sqs';
import { SQS, signedCall } from '../aws/signed-call';
import * as z from 'zod/mini';
import type { GatewayEnvironment } from '../config';

/**
 * How the running poller fleet is told about a new conversation, so its first long-poll opens
 * within a second rather than at the next fleet round. In AWS an SQS queue that every poller
 * long-polls while it has room (signed calls, shared/aws/signed-call.ts); locally an in-process
 * channel (local/local-poller-notices.ts).
 */
export const PollerNotice = z.object({
  accountId: z.string().check(z.minLength(1)),
  conversationId: z.string().check(z.minLength(1)),
  at: z.number().check(z.int()),
});
export type PollerNotice = z.infer<typeof PollerNotice>;

export interface ReceivedNotice {
  notice: PollerNotice;
  /** Handled (claimed here, or by someone else already): gone for everyone. */
  done(): Promise<void>;
  /** This poller has no room: let another poller have it now. */
  giveBack(): Promise<void>;
}

export interface PollerNotices {
  tell(notice: PollerNotice): Promise<void>;
  /** Waits up to `waitMs` for notices; resolves early (possibly empty) when `signal` aborts. */
  receive(options: { max: number; waitMs: number; signal: AbortSignal }): Promise<ReceivedNotice[]>;
}

const LONG_POLL_MARGIN_MS = 5_000;

export class SqsPollerNotices implements PollerNotices {
  constructor(private readonly queueUrl: string) {}

  async tell(notice: PollerNotice): Promise<void> {
    await signedCall(SQS, 'SendMessage', { QueueUrl: this.queueUrl, MessageBody: JSON.stringify(PollerNotice.parse(notice)) });
  }

  async receive(options: { max: number; waitMs: number; signal: AbortSignal }): Promise<ReceivedNotice[]> {
    let answer;
    try {
      const waitSeconds = Math.min(20, Math.round(options.waitMs / 1000));
      answer = await signedCall<ReceiveMessageResult>(
        SQS,
        'ReceiveMessage',
        { QueueUrl: this.queueUrl, MaxNumberOfMessages: Math.min(10, Math.max(1, options.max)), WaitTimeSeconds: waitSeconds },
        // A long poll answers after up to its wait: its attempt's deadline is beyond it.
        { signal: options.signal, attemptTimeoutMs: waitSeconds * 1000 + LONG_POLL_MARGIN_MS },
      );
    } catch (error) {
      if (options.signal.aborted) return [];
      throw error;
    }
    const received: ReceivedNotice[] = [];
    for (const message of answer.Messages ?? []) {
      const handle = message.ReceiptHandle ?? '';
      const remove = async () => void (await signedCall(SQS, 'DeleteMessage', { QueueUrl: this.queueUrl, ReceiptHandle: handle }));
      const parsed = PollerNotice.safeParse(safeJson(message.Body));
      // A malformed notice helps nobody: drop it (the fleet's next round finds the conversation anyway).
      if (!parsed.success) {
        await remove();
        continue;
      }
      received.push({
        notice: parsed.data,
        done: remove,
        giveBack: async () => void (await signedCall(SQS, 'ChangeMessageVisibility', { QueueUrl: this.queueUrl, ReceiptHandle: handle, VisibilityTimeout: 0 })),
      });
    }
    return received;
  }
}

function safeJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return undefined;
  }
}

/** For `provideAwsServices({ pollerNotices: sqsPollerNotices })`. */
export function sqsPollerNotices(env: GatewayEnvironment): PollerNotices {
  if (!env.POLLER_NOTICE_QUEUE_URL) throw new Error('POLLER_NOTICE_QUEUE_URL is not set for this function');
  return new SqsPollerNotices(env.POLLER_NOTICE_QUEUE_URL);
}
