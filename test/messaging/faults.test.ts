import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Gateway } from '../../shared/gateway';
import { log } from '../../shared/log/logger';
import { plannedPerPoller } from '../../shared/messaging/fleet';
import { accountSpread, PollerRun, preferredShard } from '../../shared/messaging/poller';
import { CLAIMED_ONE_BY_ONE } from '../../shared/store/items';
import type { DataKeySource } from '../../shared/vault/data-key-source';
import { Vault } from '../../shared/vault/vault';
import { runAs } from '../../local/iam/enforcement';
import { platformIdOf, startMessagingSandbox, type MessagingSandbox } from './support';
import * as store from '../../shared/store/store';
import type { Table } from '../../shared/store/table-access';
import { tableWith } from '../support/store-seam';

// Some of the store's calls replaced for one run's table (test/support/store-seam.ts).
vi.mock('../../shared/store/store', async (original) => (await import('../support/store-seam')).storeSeam(await original()));

/** A sandbox with no fleet: the test runs the poller runs itself, so which run holds what is certain. */
async function startSandboxWithoutFleet(): Promise<MessagingSandbox> {
  const sandbox = await startMessagingSandbox();
  sandbox.gateway.runtime.local.gateway.stateMachines.startFleet = async () => undefined;
  return sandbox;
}

/**
 * Faults against the simulator over real HTTP: dropped connections and 503 mid-poll, a 401
 * mid-conversation, a poller killed mid-run, two pollers on one shard, a lease renewal that fails.
 * In every case: no message lost, none delivered or published twice, never two polls on one
 * conversation (the simulator's 409 count stays 0).
 */
describe('conversation faults', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startMessagingSandbox();
  });
  afterAll(() => sandbox?.stop());

  async function start(): Promise<{ id: string; platformId: string }> {
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'outbound' });
    expect(started.status).toBe(201);
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('its first poll', () => sandbox.crm.messaging.isPolling(platformId));
    return { id, platformId };
  }

  /** Texts the conversation's message.received events carry, in publish order. */
  const received = (id: string) =>
    sandbox
      .events('message.received')
      .filter((e) => (e.data.conversation as { id: string }).id === id)
      .map((e) => (e.data.message as { text?: string; sequence: number }));

  function expectOnceInOrder(id: string, platformId: string): void {
    const delivered = received(id).map((m) => m.sequence);
    const platformSide = sandbox.crm.messaging.transcript(platformId).filter((entry) => entry.role !== 'EndUser').length;
    expect(delivered).toEqual(Array.from({ length: platformSide }, (_, i) => i + 1));
  }

  it('503s and dropped connections mid-poll reconnect with backoff and lose nothing', async () => {
    const { id, platformId } = await start();
    const path = `/v58.0/conversations/${platformId}/messages`;
    sandbox.crm.faults.inject({ fault: { kind: 'status', status: 503 }, times: 2, pathPrefix: path, method: 'GET' });
    sandbox.crm.faults.inject({ fault: { kind: 'drop' }, times: 2, pathPrefix: path, method: 'GET' });
    // The open poll answers; the next four attempts meet the faults; messages arrive meanwhile.
    sandbox.crm.messaging.agentJoins(platformId, 'Ann');
    for (let i = 1; i <= 2; i++) sandbox.crm.messaging.agentSays(platformId, `message ${i}`);
    await sandbox.until('the faults served', () => (sandbox.crm.faults.served.get('status') ?? 0) >= 2 && (sandbox.crm.faults.served.get('drop') ?? 0) >= 2, 20_000);
    for (let i = 3; i <= 5; i++) sandbox.crm.messaging.agentSays(platformId, `message ${i}`);
    await sandbox.until('all five', () => received(id).filter((m) => m.text?.startsWith('message ')).length === 5, 20_000);
    expectOnceInOrder(id, platformId);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });

  it('a 401 mid-conversation ends it as expired and tells the playbook to restart it', async () => {
    const { id, platformId } = await start();
    sandbox.crm.messaging.expireSessionToken(platformId);
    sandbox.crm.messaging.agentSays(platformId, 'wakes the poll');
    await sandbox.until('expired', () => sandbox.events('conversation.expired').some((e) => (e.data.conversation as { id: string }).id === id));
    const expired = sandbox.events('conversation.expired').find((e) => (e.data.conversation as { id: string }).id === id)!;
    expect(expired.data.remedy).toMatch(/restart the conversation/);
    expect(sandbox.events('conversation.ended').find((e) => (e.data.conversation as { id: string }).id === id)?.data).toMatchObject({ reason: 'session_expired' });
    const send = await sandbox.playbook('POST', `/api/v1/playbook/conversations/${id}/messages`, { text: 'anyone?' });
    expect(send.status).toBe(409);
    expect(send.body.remedy).toMatch(/restart the conversation/);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });

  it('a poller killed mid-run: another is started, claims after the leases lapse, and delivers each message once', async () => {
    const conversations = [await start(), await start(), await start()];
    const machines = sandbox.gateway.runtime.local.stateMachines;
    const victim = machines.pollers().find((run) => run.holding > 0)!;
    expect(victim).toBeDefined();
    victim.kill();
    // Messages arrive while nobody polls; the fleet's Retry starts another run for the shard.
    for (const { platformId } of conversations) sandbox.crm.messaging.agentSays(platformId, 'during the gap');
    await sandbox.until('a new run holding them', () => machines.pollers().some((run) => run !== victim && run.holding >= 3), 20_000);
    for (const { platformId } of conversations) sandbox.crm.messaging.agentSays(platformId, 'after the handover');
    for (const { id } of conversations) await sandbox.until('delivered', () => received(id).filter((m) => m.text === 'after the handover').length === 1);
    for (const { id, platformId } of conversations) expectOnceInOrder(id, platformId);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });

  it('two pollers started for the same shard never poll one conversation twice', async () => {
    const { id, platformId } = await start();
    const gateway = sandbox.gateway.runtime.local.gateway;
    const endsAt = Date.now() + 3_000;
    const twins = [new PollerRun({ gateway, log, shard: 0, shards: 1, endsAt }), new PollerRun({ gateway, log, shard: 0, shards: 1, endsAt })];
    const runs = twins.map((run) => run.run());
    for (let i = 0; i < 5; i++) {
      sandbox.crm.messaging.agentSays(platformId, `twin ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await Promise.all(runs);
    await sandbox.until('all five', () => received(id).filter((m) => m.text?.startsWith('twin ')).length === 5);
    expectOnceInOrder(id, platformId);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
    expect(twins.every((run) => run.stats.conflicts === 0)).toBe(true);
  });
});

describe('a lease renewal that fails', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('the poller stops polling before its leases lapse; another takes over without a double poll, and nothing is lost', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // A run whose heartbeats fail once it holds the conversation (the table refuses its writes).
    let failBeats = false;
    const table = tableWith(gateway.table, {
      beatPollerRun: async (_table, ...args) => {
        if (failBeats) throw new Error('ProvisionedThroughputExceededException');
        return store.beatPollerRun(gateway.table, ...args);
      },
    });
    const failing = new PollerRun({ gateway: { ...gateway, table, env: { ...gateway.env, POLLER_IDLE_SECONDS: 60 } }, log, shard: 0, shards: 1, endsAt: Date.now() + 20_000 });
    const done = failing.run().catch(() => undefined);
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('held by the failing run', () => failing.stats.claimed === 1);
    sandbox.crm.messaging.agentSays(platformId, 'before the fence');
    await sandbox.until('delivered before the fence', () => sandbox.events('message.received').length >= 1);
    const notices = sandbox.gateway.runtime.local.pollerNotices;
    const toldBefore = notices.told;
    failBeats = true;
    await sandbox.until('fenced', () => failing.stats.fenced, 10_000);
    await done;
    expect(failing.stats.released).toBe(1);
    // The running fleet is told at once, rather than finding it at its next listing.
    expect(notices.told).toBe(toldBefore + 1);
    expect(sandbox.crm.messaging.isPolling(platformId)).toBe(false);

    sandbox.crm.messaging.agentSays(platformId, 'after the fence');
    const next = new PollerRun({ gateway, log, shard: 0, shards: 1, endsAt: Date.now() + 3_000 });
    const nextDone = next.run();
    const texts = () => sandbox.events('message.received').map((e) => (e.data.message as { text?: string; sequence: number }));
    await sandbox.until('delivered by the next run', () => texts().some((m) => m.text === 'after the fence'), 10_000);
    await nextDone;
    const sequences = texts().map((m) => m.sequence);
    expect(sequences).toEqual([...new Set(sequences)].sort((a, b) => a - b));
    expect(texts().filter((m) => m.text === 'before the fence')).toHaveLength(1);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('a handover while the platform notices a closed poll late', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('the next run waits the handover grace before its first poll: without it the platform answers 409, with it never', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // The platform counts a closed poll open for 2 s; the patient runs wait 3. Wide margins both ways,
    // so a loaded machine (a CI run beside the browser tests) neither misses the hasty run's conflict nor makes a patient one's.
    sandbox.crm.messaging.setCloseNoticeLag(2_000);
    // A patient run waits its grace before its first poll, then has 1.5 s more: a loaded machine still adopts within it.
    const round = async (graceSeconds: number) => {
      const run = new PollerRun({ gateway: { ...gateway, env: { ...gateway.env, POLLER_HANDOVER_GRACE_SECONDS: graceSeconds } }, log, shard: 0, shards: 1, endsAt: Date.now() + graceSeconds * 1_000 + 1_500 });
      await run.run();
      return run.stats;
    };
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    expect((await round(3)).claimed).toBe(1);
    // Handed over with its poll aborted (the next run of the slot adopts it); the platform still counts that poll open for 2 s.
    const hasty = await round(0);
    expect(hasty.adopted).toBe(1);
    expect(hasty.conflicts).toBeGreaterThan(0);
    const conflictsBefore = sandbox.crm.messaging.pollStats().conflicts;
    expect(conflictsBefore).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++) {
      const patient = await round(3);
      expect(patient.adopted).toBe(1);
      expect(patient.conflicts).toBe(0);
      expect(Math.min(...patient.handoverGapsMs)).toBeGreaterThanOrEqual(3_000);
    }
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(conflictsBefore);
    sandbox.crm.messaging.agentSays(platformId, 'after the handovers');
    // A patient run delivers what arrived meanwhile.
    const next = new PollerRun({ gateway: { ...gateway, env: { ...gateway.env, POLLER_HANDOVER_GRACE_SECONDS: 3 } }, log, shard: 0, shards: 1, endsAt: Date.now() + 6_000 });
    const nextDone = next.run();
    await sandbox.until('delivered', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'after the handovers'), 10_000);
    await nextDone;
    const sequences = sandbox.events('message.received').filter((e) => (e.data.conversation as { id: string }).id === id).map((e) => (e.data.message as { sequence: number }).sequence);
    expect(sequences).toEqual([...new Set(sequences)].sort((a, b) => a - b));
    expect(sandbox.events('message.received').filter((e) => (e.data.message as { text?: string }).text === 'after the handovers')).toHaveLength(1);
  });
});

describe('a run ending at its round\'s end', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('hands every conversation over with one write for the run, not a release each; the next run takes them after the grace and delivers each message once', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    const started = await Promise.all(Array.from({ length: 3 }, () => sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })));
    const ids = started.map((answer) => answer.body.id as string);
    const platformIds = await Promise.all(ids.map((id) => platformIdOf(sandbox, id)));
    const writes = { releases: 0, marks: 0 };
    const table = tableWith(gateway.table, {
      releaseConversationLease: async (_table, ...args) => {
        writes.releases++;
        return store.releaseConversationLease(gateway.table, ...args);
      },
      markPollerRunEnded: async (_table, ...args) => {
        writes.marks++;
        return store.markPollerRunEnded(gateway.table, ...args);
      },
    });
    const ending = new PollerRun({ gateway: { ...gateway, table }, log, shard: 0, shards: 1, endsAt: Date.now() + 1_500 });
    await ending.run();
    expect(ending.stats.claimed).toBe(3);
    expect(ending.stats.handedOver).toBe(3);
    expect(writes).toEqual({ releases: 0, marks: 1 });
    // Every lease still names the ended run; its heartbeat item says when it ended.
    const runs = await store.listPollerRuns(gateway.table);
    expect(runs.find((run) => run.runId === ending.id)?.endedAt).toBeGreaterThan(0);
    const owners = new Map((await store.listLiveConversations(gateway.table)).map((live) => [live.conversationId, live.leaseOwner]));
    expect(ids.map((id) => owners.get(id))).toEqual(ids.map(() => ending.id));

    for (const platformId of platformIds) sandbox.crm.messaging.agentSays(platformId, 'between the runs');
    const next = new PollerRun({ gateway, log, shard: 0, shards: 1, endsAt: Date.now() + 2_500 });
    const nextDone = next.run();
    const said = (id: string) => sandbox.events('message.received').filter((e) => (e.data.conversation as { id: string }).id === id && (e.data.message as { text?: string }).text === 'between the runs');
    for (const id of ids) await sandbox.until('delivered', () => said(id).length === 1, 10_000);
    await nextDone;
    // Taken over from the mark: no poll before the grace had passed since the run ended, none twice.
    expect(next.stats.handoverGapsMs).toHaveLength(3);
    expect(Math.min(...next.stats.handoverGapsMs)).toBeGreaterThanOrEqual(1_000);
    for (const id of ids) expect(said(id)).toHaveLength(1);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
    // Nothing is held under the ended run any more: its heartbeat item is gone.
    expect((await store.listPollerRuns(gateway.table)).some((run) => run.runId === ending.id)).toBe(false);
  });
});

describe('adopting an ended run whole', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  /** Production-like lease timing, so an ended run's leases stay well inside their hard expiry through the test. */
  const withLongLeases = (gateway: Gateway, table: Table = gateway.table): Gateway => ({
    ...gateway,
    table,
    env: { ...gateway.env, POLLER_LEASE_SECONDS: 20, POLLER_HEARTBEAT_SECONDS: 1, POLLER_IDLE_SECONDS: 30, POLLER_HANDOVER_GRACE_SECONDS: 1 },
  });
  const said = (id: string, text: string) => sandbox.events('message.received').filter((e) => (e.data.conversation as { id: string }).id === id && (e.data.message as { text?: string }).text === text);

  async function endedRunHolding(count: number): Promise<{ ids: string[]; platformIds: string[]; ended: PollerRun }> {
    const gateway = sandbox.gateway.runtime.local.gateway;
    const started = await Promise.all(Array.from({ length: count }, () => sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })));
    const ids = started.map((answer) => answer.body.id as string);
    const platformIds = await Promise.all(ids.map((id) => platformIdOf(sandbox, id)));
    const ended = new PollerRun({ gateway: withLongLeases(gateway), log, shard: 0, shards: 1, endsAt: Date.now() + 1_500 });
    await ended.run();
    // With what it took of the test before's runs.
    expect(ended.stats.handedOver).toBeGreaterThanOrEqual(count);
    return { ids, platformIds, ended };
  }

  it('the next run of the slot takes it with one write and polls before any lease is renamed; a second run of the slot gets nothing; each message is delivered once', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    const { ids, platformIds, ended } = await endedRunHolding(4);
    for (const platformId of platformIds) sandbox.crm.messaging.agentSays(platformId, 'while adopted');
    // Lease writes held back for 3 s: a first poll waiting on one would open only after them.
    const writes = { adoptions: [] as boolean[], leaseWritesDone: 0 };
    const table = tableWith(gateway.table, {
      adoptPollerRun: async (_table, ...args) => {
        const adopted = await store.adoptPollerRun(gateway.table, ...args);
        writes.adoptions.push(adopted);
        return adopted;
      },
      claimConversationLease: async (_table, ...args) => {
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const claimed = await store.claimConversationLease(gateway.table, ...args);
        writes.leaseWritesDone++;
        return claimed;
      },
    });
    const runs = [0, 1].map(() => new PollerRun({ gateway: withLongLeases(gateway, table), log, shard: 0, shards: 1, endsAt: Date.now() + 5_000 }));
    const done = runs.map((run) => run.run());
    // First polls open (each answers at once with the message said meanwhile, which then waits for its rename).
    await sandbox.until('every conversation polled', () => runs.some((run) => run.stats.handoverGapsMs.length === 4), 10_000);
    // Polling already, with no lease written: the adoption was the one write, and one run won it.
    expect(writes.leaseWritesDone).toBe(0);
    expect(writes.adoptions.filter(Boolean)).toHaveLength(1);
    const adopter = runs.find((run) => run.stats.adoptedRuns === 1)!;
    expect(adopter.stats.adopted).toBe(4);
    expect(runs.find((run) => run !== adopter)!.holding).toBe(0);
    // Nothing acknowledged under the old name: the messages wait for the renames, then go out once.
    for (const id of ids) await sandbox.until('delivered', () => said(id, 'while adopted').length === 1, 10_000);
    expect(writes.leaseWritesDone).toBeGreaterThanOrEqual(4);
    const owners = (await store.listLiveConversations(gateway.table)).filter((live) => ids.includes(live.conversationId)).map((live) => live.leaseOwner);
    expect(owners).toEqual(ids.map(() => adopter.id));
    await Promise.all(done);
    for (const id of ids) expect(said(id, 'while adopted')).toHaveLength(1);
    expect(Math.min(...adopter.stats.handoverGapsMs)).toBeGreaterThanOrEqual(1_000);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
    // Nothing names the ended run any more: its heartbeat item is gone.
    await sandbox.until('the ended run forgotten', async () => !(await store.listPollerRuns(gateway.table)).some((run) => run.runId === ended.id), 5_000);
  });

  it('an adopter killed before it renamed anything: its conversations are claimed once its heartbeat lapses, never polled twice, nothing lost', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    const { ids, platformIds, ended } = await endedRunHolding(3);
    // Its renames never land: every lease still names the run it adopted when it dies.
    const stuck = tableWith(gateway.table, { claimConversationLease: () => new Promise(() => {}) });
    const fastLapse = (table: Table): Gateway => ({ ...withLongLeases(gateway, table), env: { ...withLongLeases(gateway).env, POLLER_LEASE_SECONDS: 2, POLLER_HEARTBEAT_SECONDS: 0.5 } });
    const adopter = new PollerRun({ gateway: fastLapse(stuck), log, shard: 0, shards: 1, endsAt: Date.now() + 30_000 });
    const adopterDone = adopter.run().catch((error: unknown) => error);
    await sandbox.until('polling under the adoption', () => adopter.stats.adopted >= 3 && platformIds.every((platformId) => sandbox.crm.messaging.isPolling(platformId)), 10_000);
    adopter.kill();
    await adopterDone;
    const live = (await store.listLiveConversations(gateway.table)).filter((conversation) => ids.includes(conversation.conversationId));
    expect(live.map((conversation) => conversation.leaseOwner)).toEqual(ids.map(() => ended.id));
    for (const platformId of platformIds) sandbox.crm.messaging.agentSays(platformId, 'after the adopter died');
    // Another slot's run: the leases name the ended run, whose adopter is alive until its heartbeat lapses.
    const next = new PollerRun({ gateway: fastLapse(gateway.table), log, shard: 1, shards: 2, endsAt: Date.now() + 6_000 });
    const nextDone = next.run();
    for (const id of ids) await sandbox.until('delivered', () => said(id, 'after the adopter died').length === 1, 10_000);
    // Claimed one by one from the dead adopter (with what it held of the test before's runs): only an ended run is adopted.
    expect(next.stats.claimed).toBeGreaterThanOrEqual(3);
    const owners = (await store.listLiveConversations(gateway.table)).filter((conversation) => ids.includes(conversation.conversationId)).map((conversation) => conversation.leaseOwner);
    expect(owners).toEqual(ids.map(() => next.id));
    await nextDone;
    for (const id of ids) expect(said(id, 'after the adopter died')).toHaveLength(1);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('an adopted lease not renamed in time', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('stops being polled a fence margin before its hard expiry and is given back; then claimed as a lease of its own, each message once', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // 2 s leases, a 0.5 s heartbeat: an ended run's leases expire 2 s after its end, so an adopter
    // must have renamed them by 1.5 s after it.
    const env = { ...gateway.env, POLLER_LEASE_SECONDS: 2, POLLER_HEARTBEAT_SECONDS: 0.5, POLLER_IDLE_SECONDS: 30, POLLER_HANDOVER_GRACE_SECONDS: 1 };
    const started = await Promise.all(Array.from({ length: 2 }, () => sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })));
    const ids = started.map((answer) => answer.body.id as string);
    const platformIds = await Promise.all(ids.map((id) => platformIdOf(sandbox, id)));
    const ended = new PollerRun({ gateway: { ...gateway, env }, log, shard: 0, shards: 1, endsAt: Date.now() + 1_500 });
    await ended.run();
    // Its renames never land (a claim naming the run it adopted from); other claims do.
    const table = tableWith(gateway.table, {
      claimConversationLease: (_table, accountId, conversationId, claim) => (claim.lapsedOwner ? new Promise(() => {}) : store.claimConversationLease(gateway.table, accountId, conversationId, claim)),
    });
    const adopter = new PollerRun({ gateway: { ...gateway, env, table }, log, shard: 0, shards: 1, endsAt: Date.now() + 6_000 });
    const done = adopter.run();
    // Given back (released, and told), then claimed again: by its next look or from the notice, whichever comes first.
    await sandbox.until('given back at the deadline, and taken again as its own', () => adopter.stats.released === 2 && adopter.stats.claimed === 2, 5_000);
    expect(adopter.stats.adopted).toBe(2);
    const owners = (await store.listLiveConversations(gateway.table)).filter((live) => ids.includes(live.conversationId)).map((live) => live.leaseOwner);
    expect(owners).toEqual(ids.map(() => adopter.id));
    for (const platformId of platformIds) sandbox.crm.messaging.agentSays(platformId, 'after the deadline');
    const said = (id: string) => sandbox.events('message.received').filter((e) => (e.data.conversation as { id: string }).id === id && (e.data.message as { text?: string }).text === 'after the deadline');
    for (const id of ids) await sandbox.until('delivered', () => said(id).length === 1, 5_000);
    await done;
    for (const id of ids) expect(said(id)).toHaveLength(1);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('an ended run its own slot has no room to adopt', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('the run that marks it to be claimed one by one tells the running fleet of other slots\' conversations in it, rather than leaving them to those slots\' next look', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // Capacity 3, planned at 2 a poller; the other slot's run looks only once (a 30 s period).
    const env = { ...gateway.env, POLLER_CAPACITY: 3, POLLER_LEASE_SECONDS: 120, POLLER_HEARTBEAT_SECONDS: 30, POLLER_IDLE_SECONDS: 30, POLLER_HANDOVER_GRACE_SECONDS: 1 };
    for (let i = 0; i < 4; i++) expect((await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })).status).toBe(201);
    const notices = sandbox.gateway.runtime.local.pollerNotices;
    await notices.receive({ max: notices.depth, waitMs: 0, signal: new AbortController().signal });
    const listed = await store.listLiveConversations(gateway.table);
    const slotOf = (live: (typeof listed)[number]) => preferredShard(live.accountId, live.conversationId, 2, accountSpread(listed.length, plannedPerPoller(3), 2));
    // Two runs of one slot ended holding two each (the slot's predecessor and a surge run); the
    // second holds one the other slot prefers.
    const otherSlot = slotOf(listed[0]!);
    const ownSlot = 1 - otherSlot;
    const surgeHeld = [listed[0]!, listed[1]!];
    const predecessorHeld = [listed[2]!, listed[3]!];
    const now = Date.now();
    const endAs = async (runId: string, lives: typeof listed, endedAt: number) => {
      for (const live of lives) expect(await store.claimConversationLease(gateway.table, live.accountId, live.conversationId, { owner: runId, now, expiresAt: now + 120_000 })).toBeDefined();
      await store.markPollerRunEnded(gateway.table, runId, endedAt, { shard: ownSlot, held: lives.length });
    };
    await endAs('run-predecessor', predecessorHeld, now - 20);
    await endAs('run-surge', surgeHeld, now - 10);
    const other = new PollerRun({ gateway: { ...gateway, env }, log, shard: otherSlot, shards: 2, endsAt: Date.now() + 6_000 });
    const otherDone = other.run();
    await sandbox.until('the other slot looked', async () => (await store.listPollerRuns(gateway.table)).some((run) => run.runId === other.id));
    const own = new PollerRun({ gateway: { ...gateway, env }, log, shard: ownSlot, shards: 2, endsAt: Date.now() + 5_000 });
    const ownDone = own.run();
    // Well before the other slot's next look (30 s): it takes its own from the notice.
    await sandbox.until('every conversation held', () => own.holding + other.holding === 4, 5_000);
    expect(own.stats.adoptedRuns).toBe(1);
    expect(other.stats.claimedOnNotice).toBeGreaterThanOrEqual(1);
    expect((await store.getPollerRun(gateway.table, 'run-surge'))?.adoptedBy).toBe(CLAIMED_ONE_BY_ONE);
    await Promise.all([ownDone, otherDone]);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('session tokens at a handover', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('a run taking over an account\'s conversations unwraps their shared session-token key once, not once per conversation', async () => {
    const local = sandbox.gateway.runtime.local;
    for (let i = 0; i < 5; i++) expect((await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })).status).toBe(201);
    // The next run is another Lambda: its own vault, nothing cached, every unwrap a KMS Decrypt.
    let decrypts = 0;
    const kms: DataKeySource = {
      keyId: local.keySource.keyId,
      generateDataKey: (context) => local.keySource.generateDataKey(context),
      decryptDataKey: (encrypted, context) => {
        decrypts++;
        return local.keySource.decryptDataKey(encrypted, context);
      },
    };
    const vault = new Vault({ keySource: kms, cacheTtlSeconds: 300 });
    const run = new PollerRun({ gateway: { ...local.gateway, vault }, log, shard: 0, shards: 1, endsAt: Date.now() + 1_500 });
    const stats = await run.run();
    expect(stats.claimed).toBe(5);
    expect(stats.polls).toBeGreaterThanOrEqual(5);
    // Started before the run began (no poller ran): their first polls count as across rounds.
    expect(stats.firstPollAcrossRoundsMs).toHaveLength(5);
    expect(stats.firstPollMs).toHaveLength(0);
    // All five session tokens under the account's shared key; the instance address is kept with each
    // conversation, so the connection's credentials stay sealed (and the identity platform is not asked).
    expect(decrypts).toBe(1);
  });
  it('a run full before it took every conversation it prefers tells the running fleet of the rest', async () => {
    const local = sandbox.gateway.runtime.local;
    const listed = await store.listLiveConversations(local.gateway.table);
    expect(listed).toHaveLength(5);
    const slotOf = (live: (typeof listed)[number]) => preferredShard(live.accountId, live.conversationId, 2, accountSpread(listed.length, plannedPerPoller(2), 2));
    const crowded = [0, 1].find((slot) => listed.filter((live) => slotOf(live) === slot).length >= 3)!;
    // The test before ended holding all five (slot 0 of 1), too many for either run to adopt whole:
    // slot 0's run claims them one by one at once, slot 1's after a heartbeat period (it stays up that long).
    const withCapacity = (capacity: number) => ({ ...local.gateway, env: { ...local.gateway.env, POLLER_CAPACITY: capacity, POLLER_IDLE_SECONDS: 5 } });
    const full = new PollerRun({ gateway: withCapacity(2), log, shard: crowded, shards: 2, endsAt: Date.now() + 4_000 });
    // As the poller function: its notices to the fleet are judged and recorded by local IAM (docs/permissions.md).
    const fullDone = runAs('poller', () => full.run());
    await sandbox.until('the crowded slot full', () => full.holding === 2);
    // The roomy run lists once only (its next look would be a heartbeat period later): the crowded
    // slot's rest can reach it only as the notices the full run gave.
    // With room for its own (at most two) and the crowded slot's rest.
    const roomyGateway = { ...withCapacity(3), env: { ...withCapacity(3).env, POLLER_HEARTBEAT_SECONDS: 30, POLLER_LEASE_SECONDS: 120 } };
    const roomy = new PollerRun({ gateway: roomyGateway, log, shard: 1 - crowded, shards: 2, endsAt: Date.now() + 3_000 });
    const roomyDone = runAs('poller', () => roomy.run());
    await sandbox.until('every conversation held', () => full.holding + roomy.holding === 5, 10_000);
    // The roomy run took its own at its first look, and the crowded slot's rest from the notices (up to
    // its capacity), though the leases still name the run of the test before, which ended holding them.
    expect(roomy.stats.claimedOnNotice).toBeGreaterThanOrEqual(1);
    await Promise.all([fullDone, roomyDone]);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('a burst of new conversations', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  /** A table whose single reads of conversations and lease claims are slowed and counted in flight, and (with `unlisted`) no listing. */
  function watchedTable(gateway: Gateway, options: { unlisted?: boolean } = {}) {
    const inFlight = { claims: { now: 0, max: 0 }, reads: { now: 0, max: 0 } };
    const slowed =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>, delayMs: number, count: { now: number; max: number }) =>
      async (...args: A): Promise<R> => {
        count.max = Math.max(count.max, ++count.now);
        try {
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          return await call(...args);
        } finally {
          count.now--;
        }
      };
    const table = tableWith(gateway.table, {
      claimConversationLease: slowed(store.claimConversationLease, 50, inFlight.claims),
      getConversation: slowed(store.getConversation, 200, inFlight.reads),
      // Not listed yet (as when the run listed just before they started): only the notices bring them.
      ...(options.unlisted ? { listLiveConversations: async () => [] } : {}),
    });
    return { table, inFlight };
  }

  async function startInbound(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
      expect(started.status).toBe(201);
      ids.push(started.body.id as string);
    }
    return ids;
  }

  it('a run claims a batch of notices side by side, and asks for a surge poller as it fills, before any notice finds it full', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    // Told while no poller ran: the next receive takes them as one batch.
    const ids = await startInbound(4);
    expect(sandbox.gateway.runtime.local.pollerNotices.depth).toBe(4);
    const { table, inFlight } = watchedTable(gateway, { unlisted: true });
    let surges = 0;
    const env = { ...gateway.env, POLLER_CAPACITY: 4, POLLER_IDLE_SECONDS: 60 };
    const run = new PollerRun({ gateway: { ...gateway, env, table }, log, shard: 0, shards: 1, endsAt: Date.now() + 3_000, requestSurge: async () => void surges++ });
    const done = run.run();
    await sandbox.until('all four polled', async () => (await Promise.all(ids.map(async (id) => sandbox.crm.messaging.isPolling(await platformIdOf(sandbox, id))))).every(Boolean), 10_000);
    expect(run.stats.claimedOnNotice).toBe(4);
    // One claim's wait for the batch, not four in a row.
    expect(inFlight.claims.max).toBe(4);
    // Full with the batch (room 0, under the headroom of 1 at capacity 4), though nothing was given back: a surge is asked for now.
    expect(surges).toBe(1);
    await done;
  });

  it('a run taking over many conversations reads them in one batched request, not one each', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    await startInbound(20);
    // Taken by its first look, as at a round change (nothing comes through the notices).
    const notices = sandbox.gateway.runtime.local.pollerNotices;
    await notices.receive({ max: notices.depth, waitMs: 0, signal: new AbortController().signal });
    const { table, inFlight } = watchedTable(gateway);
    let batchedReads = 0;
    const counted = tableWith(table, { getConversations: (_table, ...args) => (batchedReads++, store.getConversations(gateway.table, ...args)) });
    const run = new PollerRun({ gateway: { ...gateway, env: { ...gateway.env, POLLER_IDLE_SECONDS: 60 }, table: counted }, log, shard: 0, shards: 1, endsAt: Date.now() + 3_000 });
    const done = run.run();
    // With the first test's four, adopted whole from the run that held them.
    await sandbox.until('all held', () => run.holding === 24, 10_000);
    await sandbox.until('all polled', () => run.stats.polls >= 24, 10_000);
    expect(batchedReads).toBe(1);
    expect(inFlight.reads.max).toBe(0);
    expect(run.stats.adopted).toBe(4);
    expect((await done).claimedOnNotice).toBe(0);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
  });
});

describe('listing the live conversations', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startSandboxWithoutFleet();
  });
  afterAll(() => sandbox?.stop());

  it('a run lists them at its start and when a run\'s heartbeat lapsed, not every period; it takes a killed run\'s conversations', async () => {
    const gateway = sandbox.gateway.runtime.local.gateway;
    const listings = new Map<string, number>();
    const counting = (runName: string) =>
      tableWith(gateway.table, {
        listLiveConversations: () => {
          listings.set(runName, (listings.get(runName) ?? 0) + 1);
          return store.listLiveConversations(gateway.table);
        },
      });
    // A listing every 60 s at most, besides the first and lapses; periods of a second.
    const env = { ...gateway.env, POLLER_SWEEP_SECONDS: 60, POLLER_IDLE_SECONDS: 60, POLLER_HEARTBEAT_SECONDS: 0.1, POLLER_LEASE_SECONDS: 0.5 };
    const victim = new PollerRun({ gateway: { ...gateway, env, table: counting('victim') }, log, shard: 0, shards: 1, endsAt: Date.now() + 30_000 });
    const victimDone = victim.run().catch(() => undefined);
    const started = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    const id = started.body.id as string;
    const platformId = await platformIdOf(sandbox, id);
    await sandbox.until('held by the first run', () => victim.holding === 1);
    const heir = new PollerRun({ gateway: { ...gateway, env, table: counting('heir') }, log, shard: 0, shards: 1, endsAt: Date.now() + 30_000 });
    const heirDone = heir.run();
    // Several periods pass: the heir listed once (its start), the victim once too.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(listings.get('heir')).toBe(1);
    expect(listings.get('victim')).toBe(1);
    expect(heir.holding).toBe(0);
    victim.kill();
    await victimDone;
    sandbox.crm.messaging.agentSays(platformId, 'while nobody polls');
    // The victim's heartbeat lapses: the heir lists again and takes the conversation over.
    await sandbox.until('taken over', () => heir.holding === 1, 10_000);
    await sandbox.until('delivered', () => sandbox.events('message.received').some((e) => (e.data.message as { text?: string }).text === 'while nobody polls'), 10_000);
    expect(listings.get('heir')).toBeLessThanOrEqual(3);
    expect(sandbox.crm.messaging.pollStats().conflicts).toBe(0);
    heir.kill();
    await heirDone.catch(() => undefined);
  });
});

describe('settings and the transcript field', () => {
  let sandbox: MessagingSandbox;
  beforeAll(async () => {
    sandbox = await startMessagingSandbox({ settings: { direction: 'inbound', maxConcurrentConversations: 1, messageTypes: ['text'] } });
  });
  afterAll(() => sandbox?.stop());

  it('refuses starts against the direction setting and beyond the cap, sending nothing', async () => {
    const outbound = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'outbound' });
    expect(outbound).toMatchObject({ status: 409, body: { type: 'urn:integration-gateway:problem:not-allowed-by-settings' } });
    expect(outbound.body.remedy).toMatch(/Conversation direction/);
    expect((await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })).status).toBe(201);
    const second = await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' });
    expect(second).toMatchObject({ status: 429, body: { type: 'urn:integration-gateway:problem:concurrent-conversations' } });
    expect(sandbox.crm.messaging.conversationIds()).toHaveLength(1);
  });

  it('keeps and publishes only the message types chosen; a missing transcript field is reported with the remedy and the transcript stays readable', async () => {
    const [conversation] = (await store.listConversations(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId)).conversations;
    const id = conversation!.conversationId;
    const platformId = await platformIdOf(sandbox, id);
    sandbox.crm.messaging.removeSessionField('Transcript__c');
    sandbox.crm.messaging.agentJoins(platformId, 'Ann');
    sandbox.crm.messaging.fileTransfer(platformId, 'Requested');
    sandbox.crm.messaging.agentSays(platformId, 'text only');
    sandbox.crm.messaging.endConversation(platformId);
    await sandbox.until('transcript', () => sandbox.events('transcript.stored').length === 1);
    // Lifecycle events are published whatever the message types; messages only of the chosen types.
    expect(sandbox.events('agent.joined')).toHaveLength(1);
    expect(sandbox.events('message.received').map((e) => (e.data.message as { type: string }).type)).toEqual(['text']);
    const stored = sandbox.events('transcript.stored')[0]!;
    expect(stored.data).toMatchObject({ writtenToSession: false, field: 'Transcript__c', remedy: expect.stringMatching(/Configure transcript field mapping/) });
    const transcript = await sandbox.playbook('GET', `/api/v1/playbook/conversations/${id}/transcript`);
    expect(transcript.body).toMatchObject({ stored: true, outcome: { state: 'field_missing' } });
    expect(transcript.body.text).toMatch(/text only/);
    expect(transcript.body.text).not.toMatch(/file transfer|Requested|agent joined/);
    const connection = await sandbox.gateway.call('GET', `/api/v1/accounts/${sandbox.accountId}/connections/messaging`, { token: sandbox.userToken });
    expect(((await connection.json()) as { health: { remedy?: string } }).health.remedy).toMatch(/Configure transcript field mapping/);
    // The conversation's slot is free again.
    expect((await sandbox.playbook('POST', '/api/v1/playbook/conversations', { direction: 'inbound' })).status).toBe(201);
  });
});

describe('Test Connection', () => {
  it('reports a missing Messaging User license, an unapproved user and a healthy connection with their remedies', async () => {
    for (const [options, remedy] of [
      [{ license: false }, /Messaging User permission set license/],
      [{ approved: false }, /Admin approved users are pre-authorized/],
      [{}, undefined],
    ] as const) {
      const sandbox = await startMessagingSandbox(options);
      try {
        const answer = await sandbox.gateway.call('POST', `/api/v1/accounts/${sandbox.accountId}/connections/messaging/test`, { token: sandbox.userToken });
        const body = (await answer.json()) as { ok?: boolean; remedy?: string; health?: { state: string; remedy?: string } };
        const text = JSON.stringify(body);
        if (remedy) expect(text).toMatch(remedy);
        else expect(text).toMatch(/healthy/);
        // Test Connection never starts a conversation.
        expect(sandbox.crm.messaging.conversationIds()).toHaveLength(0);
      } finally {
        await sandbox.stop();
      }
    }
  });
});
