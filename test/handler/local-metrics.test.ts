import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as pollerFleetPlan } from '../../functions/poller-fleet-plan';
import { handler as poller } from '../../functions/poller';
import type { LocalMetric } from '../../local/local-metrics';
import { generatedKey } from '../support/local-runtime';
import { startWebhookWorld, type WebhookWorld } from '../webhooks/support';

/**
 * The gateway's metrics as a developer (and the dashboard) sees them: the handlers' EMF output read
 * back by the local runtime and served on GET /local/metrics, after real work through the local
 * gateway: webhooks verified and refused, events published, a sync run with its records and a
 * platform 429 retried, engagement events that could not be sent, and the conversation gauges.
 */
let world: WebhookWorld;
let secret: string;
const stripe = new Stripe(generatedKey('sk_test_'));

beforeAll(async () => {
  world = await startWebhookWorld();
  secret = (await world.connectPayment('acme', { method: 'both' }))!;
});
afterAll(() => world.stop());

async function metrics(): Promise<LocalMetric[]> {
  const response = await fetch(`${world.gateway.url}/local/metrics`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { namespace: string; metrics: LocalMetric[] };
  expect(body.namespace).toBe('IntegrationGateway');
  return body.metrics;
}
const sum = (all: LocalMetric[], name: string, dimensions: Record<string, string> = {}) =>
  all.filter((m) => m.name === name && Object.entries(dimensions).every(([k, v]) => m.dimensions[k] === v)).reduce((total, m) => total + m.sum, 0);

describe('GET /local/metrics', () => {
  it('counts webhooks verified and refused (by reason), and the events they published', async () => {
    const before = await metrics();
    const { events } = world.payment.createCustomer({ email: 'metrics@example.com' });
    const body = JSON.stringify(events[0]);
    const post = (headers: Record<string, string>) =>
      fetch(world.paymentUrl('acme'), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await post({ 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }) })).status).toBe(200);
    expect((await post({ 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: generatedKey('whsec_') }) })).status).toBe(400);
    expect((await post({ 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(Date.now() / 1000) - 3600 }) })).status).toBe(400);
    expect((await fetch(world.paymentUrl('nobody'), { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, body })).status).toBe(404);
    await world.settle();

    const after = await metrics();
    expect(sum(after, 'WebhooksVerified', { connector: 'payment' }) - sum(before, 'WebhooksVerified', { connector: 'payment' })).toBe(1);
    for (const reason of ['signature', 'stale', 'account']) {
      expect(sum(after, 'WebhooksRefused', { connector: 'payment', reason }) - sum(before, 'WebhooksRefused', { connector: 'payment', reason }), reason).toBe(1);
    }
    expect(sum(after, 'EventsPublished', { connector: 'payment' })).toBeGreaterThan(sum(before, 'EventsPublished', { connector: 'payment' }));
    // Dimensions are the catalogue's, never an account.
    for (const metric of after) {
      expect(Object.keys(metric.dimensions).every((name) => ['service', 'connector', 'object', 'reason'].includes(name)), JSON.stringify(metric)).toBe(true);
      expect(JSON.stringify(metric)).not.toContain('acme');
    }
  });

  it('counts a sync run, its records by connector and object, and a platform 429 retried', async () => {
    world.payment.seedCustomers(30);
    world.payment.faults.inject({ fault: { kind: 'status', status: 429 }, times: 1 });
    const token = await world.gateway.userToken('acme');
    const started = await world.gateway.call('POST', '/api/v1/accounts/acme/connections/payment/syncs', { token, body: { objects: ['customers'], full: true } });
    expect(started.status).toBeLessThan(300);
    await world.gateway.runtime.local.queues.syncJobs.idle();

    const after = await metrics();
    expect(sum(after, 'SyncRuns', { connector: 'payment' })).toBe(1);
    expect(sum(after, 'SyncFailures', { connector: 'payment' })).toBe(0);
    expect(sum(after, 'RecordsSynced', { connector: 'payment', object: 'customers' })).toBeGreaterThanOrEqual(30);
    expect(sum(after, 'PlatformThrottles', { connector: 'payment' })).toBe(1);
    expect(sum(after, 'PlatformRetries', { connector: 'payment' })).toBe(1);
  });

  it('counts engagement events that could not be sent (no data connection: retried, then dead-lettered)', async () => {
    const queue = world.gateway.runtime.local.queues.ingestion;
    await queue.send([
      { accountId: 'acme', event: { event_id: 'e1', customer_email: 'ann@example.com', event_type: 'qualified', event_timestamp: '2026-11-22T10:00:00Z', conversation_id: 'c1', channel: 'web' } },
    ]);
    await queue.idle();
    const after = await metrics();
    expect(sum(after, 'IngestionRecordsFailed')).toBe(5); // five receives, then the dead-letter queue
    expect(sum(after, 'IngestionRecordsAccepted')).toBe(0);
    expect(queue.deadLetters).toHaveLength(1);
  });

  it('sends no conversation gauge while there is nothing to report (an idle stack pays for no series)', async () => {
    await pollerFleetPlan({ executionId: 'local:fleet:metrics', round: 1 });
    await poller({ shard: 0, shards: 1, endsAt: Date.now() + 200 });
    const after = await metrics();
    expect(after.filter((m) => m.name === 'LiveConversations' || m.name === 'PollsOpen')).toEqual([]);
  });
});
