import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../local/local-runtime';
import { startBillingSimulator, type BillingSimulator } from '../../sandbox/billing-simulator';
import type { ConnectionView } from '../../shared/connections/connection-view';
import { forgetRateBudgets } from '../../shared/http/rate-budget';
import { SYNC_RETRY } from '../../shared/sync/sync-retry';
import type { SyncStatus } from '../../shared/sync/sync-status';
import { generatedKey } from '../support/local-runtime';

const MINUTE = 60_000;

/**
 * A sync that meets an outage, end to end: the local runtime (the same sync-job and dispatcher
 * handlers as AWS, the in-process sync queue), the billing simulator answering 503, and a clock
 * the test moves. The job leaves the queue after each failure; the retry schedule brings it back
 * when its next try has come; past the 12-hour horizon it lands in the dead-letter queue.
 */
describe('sync retries over hours', () => {
  let sim: BillingSimulator;
  let runtime: LocalRuntime;
  let token: string;
  let clockOffset = 0;
  const now = () => Date.now() + clockOffset;

  beforeAll(async () => {
    sim = await startBillingSimulator({ seed: 13 });
    sim.setRateLimit(undefined);
    sim.addSite('acme-test').seedCustomers(40);
    const apiKey = generatedKey('test_');
    sim.addApiKey('acme-test', apiKey, { type: 'read-only' });
    runtime = await startLocalRuntime({
      port: 0,
      schedules: false,
      retryDelayMs: 10,
      now,
      env: { BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true', PLATFORM_TIMEOUT_MS: '500' },
    });
    const operator = await runtime.local.signIn.issue({ operator: true });
    await call('PUT', '/api/v1/accounts/acme', operator, { name: 'Acme', integrationsEnabled: true });
    token = await runtime.local.signIn.issue({ accountId: 'acme' });
    // Connected without its test, so no first sync runs: the syncs these tests start are the first to read the records.
    expect((await call('PUT', '/api/v1/accounts/acme/connections/billing?test=false', token, { siteName: 'acme-test', apiKey, environment: 'test' })).status).toBe(200);
    const tested = await call('POST', '/api/v1/accounts/acme/connections/billing/test', token);
    expect(((await tested.json()) as { health: ConnectionView['health'] }).health.state).toBe('healthy');
  });
  afterAll(async () => {
    await runtime?.stop();
    await sim?.stop();
  });

  function call(method: string, path: string, bearer: string, body?: unknown): Promise<Response> {
    return fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }
  const queue = () => runtime.local.queues.syncJobs;
  const customers = async () => ((await (await call('GET', '/api/v1/accounts/acme/connections/billing/syncs', token)).json()) as { syncs: SyncStatus[] }).syncs.find((s) => s.object === 'customers')!;
  /** The retry schedule fires (as EventBridge Scheduler does every 5 minutes); the jobs it enqueues run. */
  async function retryScheduleFires(): Promise<number> {
    const { enqueued } = (await (await fetch(`${runtime.url}/local/schedules/retries`, { method: 'POST' })).json()) as { enqueued: number };
    await queue().idle();
    return enqueued;
  }
  /** A 503 whose Retry-After is too long to sleep through: the client gives up at once, retryably. */
  const outage = () => sim.faults.inject({ fault: { kind: 'status', status: 503, retryAfterSeconds: 3600 }, times: 1_000, pathPrefix: '/sites/acme-test/api/v2/customers' });

  it('a failed sync leaves the queue and says when its next try is; the schedule retries it with growing delays, then dead-letters it', async () => {
    outage();
    const calls = () => sim.requests.get('GET /sites/acme-test/api/v2/customers') ?? 0;
    const callsBefore = calls();
    const started = await call('POST', '/api/v1/accounts/acme/connections/billing/syncs', token, { objects: ['customers'] });
    expect(started.status).toBe(202);
    await queue().idle();

    let status = await customers();
    expect(status).toMatchObject({ state: 'retrying', failedAttempts: 1, lastError: { message: expect.stringMatching(/temporary|503|unavailable/i) } });
    const firstFailure = Date.parse(status.retryingSince!);
    expect(Math.abs(firstFailure - now())).toBeLessThan(MINUTE);
    expect(Date.parse(status.nextAttemptAt!) - firstFailure).toBe(5 * MINUTE);
    // Not on the queue, not dead-lettered: nothing holds up the connection's other jobs.
    expect(queue().depth).toBe(0);
    expect(queue().deadLetters).toHaveLength(0);
    const connection = (await (await call('GET', '/api/v1/accounts/acme/connections/billing', token)).json()) as ConnectionView;
    expect(connection.health.state).toBe('degraded');

    // Before its time, the schedule finds nothing to retry.
    expect(await retryScheduleFires()).toBe(0);

    const waits: number[] = [];
    let tries = 0;
    while (status.state === 'retrying') {
      const previous = Date.parse(status.nextAttemptAt!);
      clockOffset += previous - now() + 1_000;
      expect(await retryScheduleFires()).toBe(1);
      tries += 1;
      const next = await customers();
      expect(next.failedAttempts).toBe(status.failedAttempts! + 1);
      if (next.nextAttemptAt) waits.push(Math.round((Date.parse(next.nextAttemptAt) - previous) / MINUTE));
      status = next;
    }
    expect(waits).toEqual([10, 20, 40, 80, 160, 180, 180]);
    expect(tries).toBe(8);
    expect(status).toMatchObject({ state: 'dead_lettered', failedAttempts: 9, retryingSince: new Date(firstFailure).toISOString() });
    expect(Date.parse(status.deadLetteredAt!) - firstFailure).toBeGreaterThan(11 * 60 * MINUTE);
    expect(Date.parse(status.deadLetteredAt!) - firstFailure).toBeLessThanOrEqual(SYNC_RETRY.horizonMs + 10 * MINUTE);
    // The job is in the dead-letter queue (alarmed in AWS), and no more tries are scheduled.
    expect(queue().deadLetters).toHaveLength(1);
    expect(JSON.parse(queue().deadLetters[0]!.body)).toMatchObject({ accountId: 'acme', connector: 'billing', object: 'customers', trigger: 'retry' });
    // Given back at once, its redeliveries failed without calling the platform: one call per try.
    expect(queue().deadLetters[0]!.receiveCount).toBe(5);
    expect(calls() - callsBefore).toBe(1 + tries);
    clockOffset += 6 * 60 * MINUTE;
    expect(await retryScheduleFires()).toBe(0);
  });

  it('after the fix, the replayed job syncs and the retries are over', async () => {
    sim.faults.clear();
    forgetRateBudgets();
    expect(queue().redrive()).toBe(1);
    await queue().idle();
    const status = await customers();
    expect(status).toMatchObject({ state: 'idle', counts: { created: 40 } });
    expect(status.nextAttemptAt).toBeUndefined();
    expect(status.failedAttempts).toBeUndefined();
    expect(((await (await call('GET', '/api/v1/accounts/acme/connections/billing', token)).json()) as ConnectionView).health.state).toBe('healthy');
  });

  it('a platform that recovers mid-series: the next try syncs; duplicate retry jobs are skipped', async () => {
    outage();
    await call('POST', '/api/v1/accounts/acme/connections/billing/syncs', token, { objects: ['customers'] });
    await queue().idle();
    const failed = await customers();
    expect(failed).toMatchObject({ state: 'retrying', failedAttempts: 1 });
    sim.faults.clear();
    clockOffset += Date.parse(failed.nextAttemptAt!) - now() + 1_000;
    const before = sim.requests.get('GET /sites/acme-test/api/v2/customers') ?? 0;
    // The schedule fires twice before the first job ran (a slow queue): the second job finds nothing due.
    await fetch(`${runtime.url}/local/schedules/retries`, { method: 'POST' });
    expect(await retryScheduleFires()).toBe(1);
    expect(await customers()).toMatchObject({ state: 'idle' });
    expect((sim.requests.get('GET /sites/acme-test/api/v2/customers') ?? 0) - before).toBe(1);
    expect(queue().deadLetters).toHaveLength(0);
  });
});
