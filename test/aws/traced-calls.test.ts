import { ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import AWSXRay from 'aws-xray-sdk-core';
import Aws from 'aws-xray-sdk-core/dist/lib/segments/attributes/aws.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQS, signedCall } from '../../shared/aws/signed-call';
import { activateTracer, type AwsCallRecord, type SubsegmentLike } from '../../shared/tracing/segments';
import { useAwsStandIn } from '../support/use-aws-stand-in';

/**
 * A signed call's X-Ray subsegment (shared/tracing/segments.ts, `awsCallSegment`) held to X-Ray's
 * own: the real X-Ray SDK records an SDK client's call (captureAWSv3Client) and a signed call (the
 * tracer the traced functions activate) inside one segment, against the AWS stand-in, and the two
 * subsegments and the trace headers the stand-in received must read the same.
 */
const standIn = useAwsStandIn();
const QUEUE = 'https://sqs.us-east-1.amazonaws.com/111122223333/webhook-events';

beforeAll(() => {
  // Nothing to send the segments to: they are read here, never emitted.
  AWSXRay.setContextMissingStrategy('IGNORE_ERROR');
  activateTracer({
    awsAttribute: (call: AwsCallRecord, service: string) => new Aws(call, service),
    provider: { captureAsyncFunc: (name, work) => AWSXRay.captureAsyncFunc(name, work as (subsegment?: AWSXRay.Subsegment) => unknown) },
  });
});
afterAll(() => activateTracer(undefined));

interface Recorded {
  subsegment: Record<string, unknown>;
  traceHeader: unknown;
}

/**
 * Runs `call` inside a fresh X-Ray segment; answers its one subsegment as X-Ray would send it, less
 * what differs by nature (ids, times, the request id, the error's stack and message), and the type
 * of the trace header AWS got (its value is checked here).
 */
async function traced(call: () => Promise<unknown>): Promise<Recorded> {
  const segment = new AWSXRay.Segment('traced-calls-test');
  await AWSXRay.getNamespace().runPromise(async () => {
    AWSXRay.setSegment(segment);
    await call().catch(() => undefined);
  });
  const subsegment = segment.subsegments![0] as unknown as { id: string; end_time?: number; toJSON(): object };
  const { id, start_time: _start, end_time: _end, parent: _parent, segment: _segment, cause, aws, ...rest } = JSON.parse(JSON.stringify(subsegment.toJSON())) as Record<string, unknown>;
  const { request_id: requestId, ...awsRest } = (aws ?? {}) as Record<string, unknown>;
  const exceptions = ((cause as { exceptions?: Array<Record<string, unknown>> } | undefined)?.exceptions ?? []).map(({ id: _id, stack: _stack, message: _message, ...exception }) => exception);
  const traceHeader = standIn().requests().at(-1)!.headers['x-amzn-trace-id'];
  expect(traceHeader).toBe(`Root=${segment.trace_id};Parent=${String(id)};Sampled=1`);
  expect(typeof requestId).toBe('string');
  return { subsegment: { ...rest, aws: awsRest, exceptions, closed: subsegment.end_time !== undefined }, traceHeader: typeof traceHeader };
}

const sdkSqs = () => AWSXRay.captureAWSv3Client(new SQSClient({ region: standIn().region, endpoint: standIn().url, credentials: standIn().credentials, maxAttempts: 1 }));

describe('a signed call’s subsegment, as X-Ray records an SDK client’s', () => {
  it('an answered call: its name, namespace, X-Ray’s aws record (operation, region, queue, counts), status', async () => {
    const input = { QueueUrl: QUEUE, Entries: [{ Id: '0', MessageBody: '{"eventId":"evt_1"}' }] };
    const bySdk = await traced(() => sdkSqs().send(new SendMessageBatchCommand(input)));
    const ours = await traced(() => signedCall(SQS, 'SendMessageBatch', input));
    expect(ours).toEqual(bySdk);
    expect(ours.subsegment).toMatchObject({ name: 'SQS', namespace: 'aws', aws: { operation: 'SendMessageBatch', region: 'us-east-1', queue_url: QUEUE, message_count: 1, successful_count: 1 }, http: { response: { status: 200, content_length: expect.any(Number) } } });

    const receive = { QueueUrl: QUEUE, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 };
    expect(await traced(() => signedCall(SQS, 'ReceiveMessage', receive))).toEqual(await traced(() => sdkSqs().send(new ReceiveMessageCommand(receive))));
  });

  it('a refused call: the same error and throttle flags, and the error recorded', async () => {
    const input = { QueueUrl: QUEUE, Entries: [{ Id: '0', MessageBody: '{}' }] };
    standIn().failNext('AmazonSQS.SendMessageBatch', 1, { status: 400, code: 'ThrottlingException' });
    const bySdk = await traced(() => sdkSqs().send(new SendMessageBatchCommand(input)));
    standIn().failNext('AmazonSQS.SendMessageBatch', 1, { status: 400, code: 'ThrottlingException' });
    const ours = await traced(() => signedCall(SQS, 'SendMessageBatch', input, { maxAttempts: 1 }));
    expect(ours.subsegment).toMatchObject({ throttle: true, error: true, http: { response: { status: 400 } }, aws: { operation: 'SendMessageBatch', retries: 1 } });
    // The error as X-Ray records it: its type, marked remote (the service refused).
    expect(ours.subsegment.exceptions).toEqual([expect.objectContaining({ type: 'ThrottlingException', remote: true })]);
    expect(ours).toEqual(bySdk);
  });
});
