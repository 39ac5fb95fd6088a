import { describe, expect, it } from 'vitest';
import { LocalStateMachines, type LocalStateMachineHandlers } from '../../local/local-state-machines';

/**
 * The deployed lifecycle and fleet definitions (local/conversation-state-machines.json, checked
 * against the synthesized stack in test/infra) executed by aws-local-stepfunctions, with recording
 * handlers in place of the Lambda functions.
 */
describe('local state machines run the deployed definitions', () => {
  function recording(overrides: Partial<LocalStateMachineHandlers> = {}) {
    const seen: Array<{ fn: string; payload: Record<string, unknown> }> = [];
    const handlers: LocalStateMachineHandlers = {
      conversationTask: async (payload) => {
        seen.push({ fn: 'task', payload: payload as Record<string, unknown> });
        return {};
      },
      fleetPlan: async (payload) => {
        seen.push({ fn: 'plan', payload: payload as Record<string, unknown> });
        return { run: false, active: 0, shards: [] };
      },
      poller: async (payload) => {
        seen.push({ fn: 'poller', payload: payload as Record<string, unknown> });
        return {};
      },
      ...overrides,
    };
    return { seen, handlers };
  }
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(check()).toBe(true);
  };

  it('lifecycle: start, then waits on the task token (no step runs while it waits), then the transcript', async () => {
    const { seen, handlers } = recording();
    const machines = new LocalStateMachines(handlers);
    await machines.startLifecycle('acme-cv_1', { accountId: 'acme', conversationId: 'cv_1' });
    await until(() => seen.some((s) => s.payload.step === 'await-end'));
    const token = seen.find((s) => s.payload.step === 'await-end')!.payload.taskToken as string;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.map((s) => s.payload.step)).toEqual(['start', 'await-end']);
    expect(machines.list('lifecycle')[0]!.status).toBe('running');

    await machines.sendTaskSuccess(token, { reason: 'agent' });
    await machines.idle();
    expect(seen.map((s) => s.payload.step)).toEqual(['start', 'await-end', 'transcript']);
    expect(seen[2]!.payload.input).toMatchObject({ accountId: 'acme', conversationId: 'cv_1', end: { reason: 'agent' } });
    expect(machines.list('lifecycle')[0]!.status).toBe('succeeded');
    await expect(machines.sendTaskSuccess(token, {})).rejects.toThrow(/not found/);
    // Starting the same conversation again is a no-op, as an execution name is in Step Functions.
    await machines.startLifecycle('acme-cv_1', { accountId: 'acme', conversationId: 'cv_1' });
    expect(machines.list('lifecycle')).toHaveLength(1);
  });

  it('lifecycle: a step that keeps failing marks the conversation failed', async () => {
    const { seen, handlers } = recording({
      conversationTask: async (payload) => {
        const step = (payload as { step: string }).step;
        seen.push({ fn: 'task', payload: payload as Record<string, unknown> });
        if (step === 'start') throw new Error('start broke');
        return {};
      },
    });
    const machines = new LocalStateMachines(handlers);
    await machines.startLifecycle('acme-cv_2', { accountId: 'acme', conversationId: 'cv_2' });
    await machines.idle();
    expect(seen.map((s) => s.payload.step)).toEqual(['start', 'mark-failed']);
    expect(machines.list('lifecycle')[0]!.status).toBe('failed');
  });

  it('fleet: plans, maps one poller per shard, plans again, and stops when the plan says so; a surge runs one poller', async () => {
    let rounds = 0;
    const { seen, handlers } = recording({
      fleetPlan: async (payload) => {
        seen.push({ fn: 'plan', payload: payload as Record<string, unknown> });
        rounds++;
        return rounds === 1 ? { run: true, active: 3, shards: [0, 1].map((shard) => ({ shard, shards: 2, endsAt: 1 })) } : { run: false, active: 0, shards: [] };
      },
    });
    const machines = new LocalStateMachines(handlers);
    await machines.startFleet({ startedBy: 'test' });
    await machines.idle();
    expect(seen.map((s) => s.fn)).toEqual(['plan', 'poller', 'poller', 'plan']);
    expect(seen.filter((s) => s.fn === 'poller').map((s) => s.payload.shard).sort()).toEqual([0, 1]);
    expect(seen[0]!.payload).toMatchObject({ round: 1, executionId: expect.stringContaining('poller-fleet') });
    expect(seen[3]!.payload).toMatchObject({ round: 2 });

    await machines.startFleet({ surge: { shard: 0, shards: 1, endsAt: 5 } });
    await machines.idle();
    expect(seen.at(-1)).toEqual({ fn: 'poller', payload: { shard: 0, shards: 1, endsAt: 5 } });
  });
});
