import { PutEventsCommand, EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SendTaskSuccessCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import { invocationTraceHeader } from '../../shared/aws/signed-call';
import { EventBridgePublisher } from '../../shared/events/event-bridge-publisher';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import { SqsPollerNotices } from '../../shared/workflows/poller-notices';
import { StepFunctionsStateMachines } from '../../shared/workflows/state-machines';
import { useAwsStandIn } from '../support/use-aws-stand-in';

/**
 * The event bus, the state machines and the poller-notice queue as signed calls (no SDK client in
 * any Lambda function; shared/aws/signed-call.ts), held to the SDK: for the same input the SDK's
 * client and ours send the same target, content type and body to the loopback stand-in, and what the
 * stand-in answers as the services document it reads the same.
 */
const standIn = useAwsStandIn();
const sdk = <T>(Client: new (config: object) => T): T => new Client({ region: standIn().region, endpoint: standIn().url, credentials: standIn().credentials, maxAttempts: 1 });

function lastRequest() {
  const request = standIn().requests().at(-1)!;
  return { target: request.target, contentType: request.contentType, body: request.body };
}

const NOTICES = 'https://sqs.us-east-1.amazonaws.com/111122223333/poller-notices';
const LIFECYCLE = 'arn:aws:states:us-east-1:111122223333:stateMachine:conversation-lifecycle';
const FLEET = 'arn:aws:states:us-east-1:111122223333:stateMachine:poller-fleet';

const event = (id: string): GatewayEvent => ({
  schemaVersion: '1',
  id,
  type: 'subscription.created',
  accountId: 'acct-signed',
  source: 'billing',
  occurredAt: '2026-11-28T10:15:30.250Z',
  data: { platformEventId: id, subscription: { id: 'sub_1' } },
});

describe('EventBridge PutEvents', () => {
  it('sends what the SDK sends for the same entries (the time as epoch seconds, awsJson 1.1)', async () => {
    await new EventBridgePublisher('integration-gateway').publish([event('evt_1')]);
    const ours = lastRequest();
    const entry = (ours.body as { Entries: Array<Record<string, unknown>> }).Entries[0]!;
    await sdk(EventBridgeClient).send(new PutEventsCommand({ Entries: [{ ...entry, Time: new Date('2026-11-28T10:15:30.250Z') }] }));
    expect(lastRequest()).toEqual(ours);
    expect(ours).toMatchObject({ target: 'AWSEvents.PutEvents', contentType: 'application/x-amz-json-1.1' });
    expect(entry).toMatchObject({ EventBusName: 'integration-gateway', Source: 'integration-gateway.billing', DetailType: 'subscription.created', Time: 1795860930.25 });
    expect(JSON.parse(String(entry.Detail))).toEqual(event('evt_1'));
  });

  it('sends 25 events as three calls of at most 10, and an entry the bus refuses fails the publish', async () => {
    await new EventBridgePublisher('integration-gateway').publish(Array.from({ length: 25 }, (_, i) => event(`evt_${i}`)));
    expect(standIn().calls('AWSEvents.PutEvents')).toBe(3);
    expect(standIn().events()).toHaveLength(25);

    // An entry the bus refuses (PutEventsResultEntry's ErrorCode) fails the publish: the worker's
    // message is tried again, and consumers dedupe on the event's id.
    standIn().failEntries(1, 'ThrottlingException');
    await expect(new EventBridgePublisher('integration-gateway').publish([event('evt_a'), event('evt_b')])).rejects.toThrow('EventBridge refused 1 of 2 event(s)');
  });
});

describe('Step Functions', () => {
  it('StartExecution and SendTaskSuccess: the SDK’s request (awsJson 1.0)', async () => {
    const machines = new StepFunctionsStateMachines({ lifecycle: LIFECYCLE, fleet: FLEET });
    await machines.startLifecycle('conv-1', { conversationId: 'conv-1' });
    const ours = lastRequest();
    await sdk(SFNClient).send(new StartExecutionCommand({ stateMachineArn: LIFECYCLE, name: 'conv-1', input: '{"conversationId":"conv-1"}' }));
    expect(lastRequest()).toEqual(ours);
    expect(ours).toMatchObject({ target: 'AWSStepFunctions.StartExecution', contentType: 'application/x-amz-json-1.0' });

    await machines.sendTaskSuccess('token-1', { ok: true });
    const answered = lastRequest();
    await sdk(SFNClient).send(new SendTaskSuccessCommand({ taskToken: 'token-1', output: '{"ok":true}' }));
    expect(lastRequest()).toEqual(answered);
    expect(standIn().taskAnswers()).toEqual([
      { taskToken: 'token-1', output: '{"ok":true}' },
      { taskToken: 'token-1', output: '{"ok":true}' },
    ]);
  });

  it('a lifecycle started again for the same conversation is a no-op, even with another input', async () => {
    const machines = new StepFunctionsStateMachines({ lifecycle: LIFECYCLE, fleet: FLEET });
    await machines.startLifecycle('conv-2', { conversationId: 'conv-2' });
    await machines.startLifecycle('conv-2', { conversationId: 'conv-2', again: true });
    await machines.startFleet({ shards: 1 });
    expect(standIn().executions().map((execution) => execution.name)).toEqual(['conv-2', expect.any(String)]);
    // A refusal that is not ExecutionAlreadyExists propagates, read by its code as the SDK reads it.
    standIn().failNext('AWSStepFunctions.StartExecution', 1, { status: 400, code: 'StateMachineDoesNotExist' });
    await expect(machines.startLifecycle('conv-3', {})).rejects.toMatchObject({ name: 'StateMachineDoesNotExist' });
    await expect(new StepFunctionsStateMachines({}).startFleet({})).rejects.toThrow('POLLER_FLEET_STATE_MACHINE_ARN is not set');
  });
});

describe('the poller-notice queue (SQS)', () => {
  it('SendMessage and ReceiveMessage: the SDK’s requests', async () => {
    const notices = new SqsPollerNotices(NOTICES);
    await notices.tell({ accountId: 'acct', conversationId: 'conv-1', at: 1 });
    const ours = lastRequest();
    await sdk(SQSClient).send(new SendMessageCommand({ QueueUrl: NOTICES, MessageBody: '{"accountId":"acct","conversationId":"conv-1","at":1}' }));
    expect(lastRequest()).toEqual(ours);

    await notices.receive({ max: 10, waitMs: 0, signal: new AbortController().signal });
    const receive = lastRequest();
    await sdk(SQSClient).send(new ReceiveMessageCommand({ QueueUrl: NOTICES, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    expect(lastRequest()).toEqual(receive);
  });

  it('a notice told is received once; done deletes it, giveBack lets the next receive have it; a malformed one is dropped', async () => {
    const notices = new SqsPollerNotices(NOTICES);
    const signal = new AbortController().signal;
    await notices.tell({ accountId: 'acct', conversationId: 'conv-1', at: 1 });
    await notices.tell({ accountId: 'acct', conversationId: 'conv-2', at: 2 });
    await sdk(SQSClient).send(new SendMessageCommand({ QueueUrl: NOTICES, MessageBody: 'not a notice' }));

    const first = await notices.receive({ max: 10, waitMs: 0, signal });
    expect(first.map((received) => received.notice.conversationId)).toEqual(['conv-1', 'conv-2']);
    expect(standIn().queued(NOTICES)).toBe(2);
    expect(await notices.receive({ max: 10, waitMs: 0, signal })).toEqual([]);
    await first[0]!.done();
    await first[1]!.giveBack();
    const again = await notices.receive({ max: 10, waitMs: 0, signal });
    expect(again.map((received) => received.notice.conversationId)).toEqual(['conv-2']);
    await again[0]!.done();
    expect(standIn().queued(NOTICES)).toBe(0);
  });

  it('a long poll waits for a notice, and one its poller abandons answers empty at once', async () => {
    const notices = new SqsPollerNotices(NOTICES);
    const waiting = notices.receive({ max: 1, waitMs: 5_000, signal: new AbortController().signal });
    setTimeout(() => void notices.tell({ accountId: 'acct', conversationId: 'conv-late', at: 3 }), 50);
    expect((await waiting).map((received) => received.notice.conversationId)).toEqual(['conv-late']);

    const stop = new AbortController();
    const abandoned = notices.receive({ max: 1, waitMs: 20_000, signal: stop.signal });
    setTimeout(() => stop.abort(), 50);
    expect(await abandoned).toEqual([]);
    // Cut, not waited out: the stand-in saw its caller leave before its 20 s wait ended. And not retried.
    await vi.waitFor(() => expect(standIn().abandoned('AmazonSQS.ReceiveMessage')).toBe(1));
    expect(standIn().calls('AmazonSQS.ReceiveMessage')).toBe(2);
  });
});

describe('the invocation’s trace header', () => {
  it('in Lambda, every call carries the invocation’s trace id, as the SDK’s recursion detection sends it', async () => {
    const traceId = 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:1';
    const saved = { name: process.env.AWS_LAMBDA_FUNCTION_NAME, trace: process.env._X_AMZN_TRACE_ID };
    Object.assign(process.env, { AWS_LAMBDA_FUNCTION_NAME: 'webhook-receiver', _X_AMZN_TRACE_ID: traceId });
    try {
      await new SqsPollerNotices(NOTICES).tell({ accountId: 'acct', conversationId: 'conv-1', at: 1 });
      const ours = standIn().requests().at(-1)!.headers['x-amzn-trace-id'];
      await sdk(SQSClient).send(new SendMessageCommand({ QueueUrl: NOTICES, MessageBody: '{}' }));
      const bySdk = standIn().requests().at(-1)!.headers['x-amzn-trace-id'];
      expect(ours).toBe(traceId);
      expect(bySdk).toBe(traceId);
    } finally {
      for (const [name, value] of [['AWS_LAMBDA_FUNCTION_NAME', saved.name], ['_X_AMZN_TRACE_ID', saved.trace]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('where the runtime keeps the invocation in its invoke store, its trace id and W3C trace context go, as the SDK sends them', async () => {
    const saved = process.env.AWS_LAMBDA_FUNCTION_NAME;
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'poller';
    // The runtime's protocol (@aws/lambda-invoke-store): the store on globalThis.awslambda, run per invocation.
    const { InvokeStore } = await import('@aws/lambda-invoke-store');
    const store = await InvokeStore.getInstanceAsync();
    const context = {
      [Symbol.for('_AWS_LAMBDA_X_RAY_TRACE_ID')]: 'Root=1-6789abcd-0123456789abcdef01234567;Parent=1122334455667788;Sampled=1',
      [Symbol.for('_AWS_LAMBDA_TRACEPARENT')]: '00-6789abcd0123456789abcdef01234567-1122334455667788-01',
      [Symbol.for('_AWS_LAMBDA_TRACESTATE')]: 'vendor=value',
    };
    // The W3C headers signed (the SDK adds them before its signer runs), the X-Ray one not.
    const signedHeaders = (request: { headers: Record<string, unknown> }) => /SignedHeaders=([^,]+)/.exec(String(request.headers.authorization))?.[1]?.split(';').filter((name) => /trace|baggage/.test(name));
    const traced = (request: { headers: Record<string, unknown> }) => ({ trace: request.headers['x-amzn-trace-id'], traceparent: request.headers.traceparent, tracestate: request.headers.tracestate, signed: signedHeaders(request) });
    try {
      await store.run(context, async () => {
        await new SqsPollerNotices(NOTICES).tell({ accountId: 'acct', conversationId: 'conv-1', at: 1 });
        const ours = traced(standIn().requests().at(-1)!);
        await sdk(SQSClient).send(new SendMessageCommand({ QueueUrl: NOTICES, MessageBody: '{}' }));
        expect(ours).toEqual(traced(standIn().requests().at(-1)!));
        expect(ours.traceparent).toBe(context[Symbol.for('_AWS_LAMBDA_TRACEPARENT')]);
        expect(ours.signed).toEqual(['traceparent', 'tracestate']);
      });
      // Baggage goes with the traceparent whether or not a tracestate does, as the SDK sends it.
      const { [Symbol.for('_AWS_LAMBDA_TRACESTATE')]: _tracestate, ...withoutState } = context;
      await store.run({ ...withoutState, [Symbol.for('_AWS_LAMBDA_BAGGAGE')]: 'userId=alice' }, async () => {
        await new SqsPollerNotices(NOTICES).tell({ accountId: 'acct', conversationId: 'conv-2', at: 2 });
        const ours = { ...traced(standIn().requests().at(-1)!), baggage: standIn().requests().at(-1)!.headers.baggage };
        await sdk(SQSClient).send(new SendMessageCommand({ QueueUrl: NOTICES, MessageBody: '{}' }));
        expect(ours).toEqual({ ...traced(standIn().requests().at(-1)!), baggage: standIn().requests().at(-1)!.headers.baggage });
        expect(ours.baggage).toBe('userId=alice');
      });
    } finally {
      // The runtime replaces the context at the next invocation; here, an empty one.
      store.run({}, () => undefined);
      if (saved === undefined) delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      else process.env.AWS_LAMBDA_FUNCTION_NAME = saved;
    }
  });

  it('outside Lambda, none', () => {
    expect(invocationTraceHeader({ _X_AMZN_TRACE_ID: 'Root=1-1-1' })).toBeUndefined();
    expect(invocationTraceHeader({ AWS_LAMBDA_FUNCTION_NAME: 'api', _X_AMZN_TRACE_ID: 'Root=1-2-3' })).toBe('Root=1-2-3');
  });
});
