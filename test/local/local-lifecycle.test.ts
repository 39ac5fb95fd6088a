import { describe, expect, it } from 'vitest';
import { LocalConversationLifecycle, type LifecycleStep } from '../../local/local-lifecycle';

/** The local lifecycle follows the state machine's paths (lib/conversations.ts) with the same payloads. */
describe('local conversation lifecycle', () => {
  function recorder(failOn?: LifecycleStep['step']) {
    const seen: LifecycleStep[] = [];
    const task = async (event: LifecycleStep) => {
      seen.push(structuredClone(event));
      if (event.step === failOn) throw new Error(`${event.step} broke`);
    };
    return { seen, task };
  }

  it('start → waits on a task token while the conversation lives → transcript, with the end in $.end', async () => {
    const { seen, task } = recorder();
    const lifecycle = new LocalConversationLifecycle(task);
    const id = lifecycle.start({ accountId: 'acme', conversationId: 'c1' });
    while (!seen.some((e) => e.step === 'await-end')) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(lifecycle.describe(id)).toMatchObject({ status: 'running', steps: ['start', 'await-end'] });

    const token = (seen[1] as { taskToken: string }).taskToken;
    lifecycle.sendTaskSuccess(token, { reason: 'customer left' });
    expect(await lifecycle.finished(id)).toMatchObject({ status: 'succeeded', steps: ['start', 'await-end', 'transcript'] });
    expect(seen[2]).toEqual({ step: 'transcript', input: { accountId: 'acme', conversationId: 'c1', end: { reason: 'customer left' } } });
    // A token is single use, as in Step Functions.
    expect(() => lifecycle.sendTaskSuccess(token, {})).toThrow(/not found/);
  });

  it('a failing step, or a task failure sent back, marks the conversation failed', async () => {
    const broken = recorder('start');
    const first = new LocalConversationLifecycle(broken.task);
    expect(await first.finished(first.start({ conversationId: 'c2' }))).toMatchObject({ status: 'failed', steps: ['start', 'mark-failed'], error: 'start broke' });
    expect(broken.seen[1]).toMatchObject({ step: 'mark-failed', input: { error: { Cause: 'start broke' } } });

    const ok = recorder();
    const second = new LocalConversationLifecycle(ok.task);
    const id = second.start({ conversationId: 'c3' });
    while (!ok.seen.some((e) => e.step === 'await-end')) await new Promise((resolve) => setTimeout(resolve, 1));
    second.sendTaskFailure((ok.seen[1] as { taskToken: string }).taskToken, 'SessionExpired', 'the session token expired');
    expect(await second.finished(id)).toMatchObject({ status: 'failed', steps: ['start', 'await-end', 'mark-failed'], error: 'the session token expired' });
  });

  it('a conversation silent for the whole Active timeout still gets its transcript', async () => {
    const { seen, task } = recorder();
    const lifecycle = new LocalConversationLifecycle(task, 20);
    const result = await lifecycle.finished(lifecycle.start({ conversationId: 'c4' }));
    expect(result).toMatchObject({ status: 'succeeded', steps: ['start', 'await-end', 'transcript'] });
    expect(seen[2]).toMatchObject({ input: { end: { Error: 'States.Timeout' } } });
  });
});
