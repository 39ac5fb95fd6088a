import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iamEnforcement, runAs } from '../../local/iam/enforcement';
import { guardStateMachines } from '../../local/iam/guarded-services';
import { startLocalGateway, type LocalGateway } from '../../local/local-gateway';
import { LocalStateMachines, type LocalStateMachineHandlers } from '../../local/local-state-machines';
import type { Gateway } from '../../shared/gateway';
import { log } from '../../shared/log/logger';
import { runLifecycleStep, type LifecycleStep } from '../../shared/messaging/lifecycle';
import { applyEvents } from '../../shared/messaging/message-application';
import { PollerRun } from '../../shared/messaging/poller';
import { requestSurge } from '../../shared/messaging/poller-run';
import { MessagingSettings } from '../../shared/messaging/settings';
import { conversation } from '../store/fixtures';
import { generatedKey } from '../support/local-runtime';
import { storeConnection } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * Turns no end-to-end test takes, run as the function whose code takes them (the lifecycle steps
 * as functions/conversation-task.ts runs them, a poller run's own calls as functions/poller.ts
 * makes them), so that local IAM judges and records their AWS calls: `npm run bench -- iam` counts
 * a grant as used only when a run made the call (docs/permissions.md).
 */
let local: LocalGateway;
beforeAll(async () => {
  local = await startLocalGateway({ retryDelayMs: 50 });
});
afterAll(() => local?.stop());

/** A state machine stand-in that records its task calls (the lifecycle's and the fleet plan's), guarded as the runtime's is. */
function recordingMachines(on: () => LocalGateway = () => local) {
  const seen: Array<{ fn: string; payload: Record<string, unknown> }> = [];
  const record = (fn: string) => async (payload: unknown) => (seen.push({ fn, payload: payload as Record<string, unknown> }), {});
  const handlers: LocalStateMachineHandlers = {
    conversationTask: record('task'),
    fleetPlan: async (payload) => (seen.push({ fn: 'plan', payload: payload as Record<string, unknown> }), { run: false, active: 0, shards: [] }),
    poller: record('poller'),
  };
  const machines = new LocalStateMachines(handlers);
  return { seen, machines, gateway: { ...on().gateway, stateMachines: guardStateMachines(machines) } satisfies Gateway };
}

const step = (gateway: Gateway, event: LifecycleStep) => runAs('conversation-task', () => runLifecycleStep(gateway, event, log));
const until = async (check: () => boolean) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
};

/** A live conversation (its item and its lease item, held by `leaseOwner`) with the end user's email, as a start stores it. */
async function liveConversation(accountId: string, conversationId: string, leaseOwner?: string): Promise<void> {
  await store.putConversation(local.gateway.table, conversation(accountId, conversationId, { state: 'active', endUserEmail: 'ann@example.com' }));
  await store.putLiveConversation(local.gateway.table, { accountId, conversationId, ack: -1, startedAt: Date.now(), ...(leaseOwner ? { leaseOwner, leaseExpiresAt: Date.now() + 60_000 } : {}) });
}

/** A data connection whose settings turn conversation.ended into an engagement event, sent at once or held. */
async function dataConnection(accountId: string, frequency: 'real_time' | 'hourly'): Promise<void> {
  await storeConnection(local.gateway, {
    accountId,
    connector: 'data',
    credentials: { privateKey: generatedKey('key-') },
    syncSettings: { frequency, conversationEndedEvents: true },
  });
}

describe('lifecycle turns no end-to-end test takes, judged and recorded as conversation-task', () => {
  it('a step that failed for good ends a live conversation: its lease item deleted, conversation.ended queued as an engagement event (Real-time)', async () => {
    await dataConnection('acct-rt', 'real_time');
    await liveConversation('acct-rt', 'conv-failed');
    const before = { checked: iamEnforcement.checked, queued: local.queues.ingestion.depth };
    await step(local.gateway, { step: 'mark-failed', input: { accountId: 'acct-rt', conversationId: 'conv-failed', error: 'Transcript failed' } });
    expect((await store.getConversation(local.gateway.table, 'acct-rt', 'conv-failed'))?.state).toBe('failed');
    expect(await store.getLiveConversation(local.gateway.table, 'acct-rt', 'conv-failed')).toBeUndefined();
    expect(local.queues.ingestion.depth).toBe(before.queued + 1);
    expect(iamEnforcement.checked).toBeGreaterThan(before.checked);
  });

  it('the same with Hourly: the engagement event is held in the table', async () => {
    await dataConnection('acct-hourly', 'hourly');
    await liveConversation('acct-hourly', 'conv-failed');
    await step(local.gateway, { step: 'mark-failed', input: { accountId: 'acct-hourly', conversationId: 'conv-failed' } });
    expect((await store.getConversation(local.gateway.table, 'acct-hourly', 'conv-failed'))?.state).toBe('failed');
    expect(await store.countHeldEvents(local.gateway.table, 'acct-hourly', 'data')).toBe(1);
  });

  it('the start step of a live conversation whose fleet is not running starts the poller fleet', async () => {
    const { seen, gateway } = recordingMachines();
    await liveConversation('acct-fleet', 'conv-start');
    expect(await store.getFleetLease(local.gateway.table)).toBeUndefined();
    await step(gateway, { step: 'start', input: { accountId: 'acct-fleet', conversationId: 'conv-start' } });
    await until(() => seen.some((s) => s.fn === 'plan'));
  });

  it('a conversation that ended before its lifecycle waited: the await-end step answers its own task token at once', async () => {
    const { seen, machines, gateway } = recordingMachines();
    await store.putConversation(local.gateway.table, conversation('acct-short', 'conv-short', { state: 'ended', endReason: 'agent' }));
    await machines.startLifecycle('acct-short-conv-short', { accountId: 'acct-short', conversationId: 'conv-short' });
    await until(() => seen.some((s) => s.payload.step === 'await-end'));
    const token = seen.find((s) => s.payload.step === 'await-end')!.payload.taskToken as string;
    await step(gateway, { step: 'await-end', taskToken: token, input: { accountId: 'acct-short', conversationId: 'conv-short' } });
    await until(() => seen.some((s) => s.payload.step === 'transcript'));
    expect(seen.find((s) => s.payload.step === 'transcript')!.payload.input).toMatchObject({ end: { reason: 'agent' } });
    await machines.idle();
  });
});

describe('poller turns no end-to-end test takes, judged and recorded as the poller', () => {
  /** The platform's answer that the chat ended, as a transport reads it. */
  const endedAnswer = { events: [{ direction: 'inbound' as const, sentAt: new Date().toISOString(), type: 'system' as const, sender: 'system', lifecycle: 'ended' as const, endedBy: 'agent' as const, details: {} }], position: { sequence: 0 } };
  const applyEnded = async (accountId: string, conversationId: string) => {
    const context = { gateway: local.gateway, log, runId: 'run-p', settings: MessagingSettings.parse({}), guard: () => {}, stats: { delivered: 0 } };
    const current = (await store.getConversation(local.gateway.table, accountId, conversationId))!;
    return runAs('poller', () => applyEvents(context, current, -1, endedAnswer));
  };

  it('the platform ends a conversation the run holds: conversation.ended queued as an engagement event (Real-time), or held (Hourly)', async () => {
    await dataConnection('acct-poll-rt', 'real_time');
    await liveConversation('acct-poll-rt', 'conv-ended', 'run-p');
    const queued = local.queues.ingestion.depth;
    await expect(applyEnded('acct-poll-rt', 'conv-ended')).resolves.toBe('ended');
    expect((await store.getConversation(local.gateway.table, 'acct-poll-rt', 'conv-ended'))?.state).toBe('ended');
    expect(await store.getLiveConversation(local.gateway.table, 'acct-poll-rt', 'conv-ended')).toBeUndefined();
    expect(local.queues.ingestion.depth).toBe(queued + 1);

    await dataConnection('acct-poll-hourly', 'hourly');
    await liveConversation('acct-poll-hourly', 'conv-ended', 'run-p');
    await expect(applyEnded('acct-poll-hourly', 'conv-ended')).resolves.toBe('ended');
    expect(await store.countHeldEvents(local.gateway.table, 'acct-poll-hourly', 'data')).toBe(1);
  });

  it('a run with no room gives a notice back for a poller with room (visibility 0), and asks for a surge poller', async () => {
    // A gateway of its own: no live conversation of the other tests for this run to list.
    const own = await startLocalGateway();
    try {
      const { seen, gateway } = recordingMachines(() => own);
      const pollerGateway = { ...gateway, env: { ...gateway.env, POLLER_CAPACITY: 1, POLLER_IDLE_SECONDS: 60 } };
      let givenBack = 0;
      const notices = pollerGateway.pollerNotices;
      pollerGateway.pollerNotices = {
        tell: (notice) => notices.tell(notice),
        receive: async (options) => (await notices.receive(options)).map((item) => ({ ...item, giveBack: async () => (givenBack++, item.giveBack()) })),
      };
      // Two new conversations told to the fleet (no longer stored: each notice is spent once taken).
      await runAs('api', async () => {
        await own.gateway.pollerNotices.tell({ accountId: 'acct-full', conversationId: 'conv-1', at: Date.now() });
        await own.gateway.pollerNotices.tell({ accountId: 'acct-full', conversationId: 'conv-2', at: Date.now() });
      });
      const run = new PollerRun({ gateway: pollerGateway, log, shard: 0, shards: 1, endsAt: Date.now() + 1_500, requestSurge: () => requestSurge(pollerGateway) });
      await runAs('poller', () => run.run());
      expect(givenBack).toBeGreaterThanOrEqual(1);
      expect(own.pollerNotices.depth).toBe(0);
      // The fleet definition runs a surge as one poller, without a plan.
      await until(() => seen.some((s) => s.fn === 'poller'));
    } finally {
      await own.stop();
    }
  });
});
