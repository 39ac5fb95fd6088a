import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestionSchemaDocument } from '../../shared/data/ingestion-schema';
import { HELD_EVENTS_JOB, heldEventJobs } from '../../shared/data/delivery';
import { DataSyncSettings } from '../../shared/data/settings';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import type { EngagementEvent } from '../../shared/queues/messages';
import { startDataGateway, startDataSandbox, type DataGateway, type DataSandbox } from './support';

/**
 * The Sync frequency setting over HTTP against the data platform simulator: Real-time sends at
 * once; Hourly and Daily hold events in the table (on disk here) and the schedules send them, in
 * order, in requests of at most 50, also after the gateway restarted between acceptance and send.
 */

const CONNECTOR = 'integration_gateway';
const OBJECT = 'EngagementEvent';
const INGEST_PATH = `/api/v1/ingest/sources/${CONNECTOR}/${OBJECT}`;

/** n events for `people` persons, interleaved (person = i % people), each person's numbered in order. */
function events(n: number, people: number, prefix: string, fields: (i: number) => Partial<EngagementEvent> = () => ({})): EngagementEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    event_id: `${prefix}-${i}`,
    customer_email: `person${i % people}@example.com`,
    event_type: `step_${Math.floor(i / people)}`,
    event_timestamp: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString(),
    conversation_id: '',
    channel: 'chat',
    ...fields(i),
  }));
}

describe('held events: which schedule sends them (pure)', () => {
  it('asks for a send only on the schedule of the connection’s frequency', () => {
    const hourly = DataSyncSettings.parse({ frequency: 'hourly' });
    expect(heldEventJobs(hourly, 'hourly')).toEqual([HELD_EVENTS_JOB]);
    expect(heldEventJobs(hourly, 'daily')).toEqual([]);
    expect(heldEventJobs(DataSyncSettings.parse({ frequency: 'daily' }), 'daily')).toEqual([HELD_EVENTS_JOB]);
    expect(heldEventJobs(DataSyncSettings.parse({}), 'hourly')).toEqual([]);
  });
});

describe('the frequency setting, end to end', () => {
  let sandbox: DataSandbox;
  let dataDir: string;
  let d: DataGateway;
  const ingested = () => sandbox.sim.data.ingested(CONNECTOR, OBJECT);
  const ingestRequests = () => sandbox.sim.requests.get(`POST ${INGEST_PATH}`) ?? 0;
  const send = async (batch: EngagementEvent[]) => {
    const response = await d.gateway.call('POST', '/api/v1/playbook/engagement-events', { token: d.key, body: { events: batch } });
    expect(response.status).toBe(202);
    return (await response.json()) as { accepted: number; delivery: string };
  };
  const deliveries = async () => {
    const response = await d.gateway.call('GET', `/api/v1/accounts/${d.accountId}/connections/data/deliveries`, { token: await d.userToken() });
    expect(response.status).toBe(200);
    return (await response.json()) as { frequency: string; heldNow: number; hours: Array<Record<string, number>> };
  };
  const fire = async (frequency: 'hourly' | 'daily' | 'weekly') => {
    await d.gateway.runtime.scheduler.fire(frequency);
    await d.gateway.runtime.local.queues.syncJobs.idle();
    await d.gateway.runtime.local.queues.ingestion.idle();
  };
  /** Each person's event ids, in the order the platform received them. */
  const orderPerPerson = (records: Array<Record<string, unknown>>) => {
    const byPerson = new Map<string, string[]>();
    for (const record of records) {
      const email = String(record.customer_email);
      byPerson.set(email, [...(byPerson.get(email) ?? []), String(record.event_id)]);
    }
    return byPerson;
  };

  beforeAll(async () => {
    sandbox = await startDataSandbox();
    const schema = ingestionSchemaDocument(OBJECT).components.schemas[OBJECT];
    sandbox.sim.data.registerIngestionSchema(CONNECTOR, OBJECT, Object.keys(schema?.properties ?? {}), { maxLengths: { channel: 20 } });
    dataDir = mkdtempSync(join(tmpdir(), 'gateway-frequency-'));
    d = await startDataGateway({ existing: sandbox, dataDir });
  });
  afterAll(async () => {
    await d?.stop();
    await sandbox?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('Hourly: holds accepted events, survives a restart before the send, and the hourly schedule sends them in order, 50 a request', async () => {
    await d.connect({ frequency: 'hourly' });
    const accepted = events(120, 3, 'h');
    expect(await send(accepted.slice(0, 70))).toEqual({ accepted: 70, delivery: 'hourly' });
    await send(accepted.slice(70));
    await d.gateway.runtime.local.queues.ingestion.idle();
    expect(ingested()).toHaveLength(0);
    expect((await deliveries()).heldNow).toBe(120);

    // The gateway stops between acceptance and the send; it starts again on the same table.
    await d.gateway.stop();
    d = await startDataGateway({ existing: sandbox, dataDir });

    const before = ingestRequests();
    await fire('daily');
    await fire('weekly');
    expect(ingested()).toHaveLength(0);

    await fire('hourly');
    expect(ingestRequests() - before).toBe(3);
    expect(ingested().map((r) => r.event_id)).toEqual(accepted.map((e) => e.event_id));
    for (const [, ids] of orderPerPerson(ingested())) expect(ids).toEqual([...ids].sort((a, b) => Number(a.split('-')[1]) - Number(b.split('-')[1])));
    const after = await deliveries();
    expect(after.heldNow).toBe(0);
    const totals = after.hours.reduce<Record<string, number>>((sum, hour) => {
      for (const [name, value] of Object.entries(hour)) if (typeof value === 'number') sum[name] = (sum[name] ?? 0) + value;
      return sum;
    }, {});
    expect(totals).toMatchObject({ accepted: 120, held: 120, sent: 120 });

    // Nothing is sent twice by the next schedule.
    await fire('hourly');
    expect(ingested()).toHaveLength(120);
  });

  it('Daily: a failing platform loses nothing: the events stay held, in order, and go out when it recovers', async () => {
    await d.connect({ frequency: 'daily' });
    const start = ingested().length;
    const accepted = events(60, 2, 'd');
    await send(accepted);
    await fire('hourly');
    expect(ingested()).toHaveLength(start);

    // Every attempt of the first request fails (the client's retries, then the job's).
    sandbox.sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 1000, pathPrefix: INGEST_PATH });
    const jobsBefore = d.gateway.runtime.local.queues.syncJobs.deadLetters.length;
    await fire('daily');
    sandbox.sim.faults.clear();
    expect(ingested()).toHaveLength(start);
    expect((await deliveries()).heldNow).toBe(60);
    // The job failed until the queue gave up on it: it is in the dead-letter list (alarmed in AWS).
    expect(d.gateway.runtime.local.queues.syncJobs.deadLetters.length).toBe(jobsBefore + 1);

    await fire('daily');
    expect(ingested().slice(start).map((r) => r.event_id)).toEqual(accepted.map((e) => e.event_id));
    expect((await deliveries()).heldNow).toBe(0);
  }, 60_000);

  it('a held record the platform refuses goes the dead-letter way; the others are sent in order', async () => {
    await d.connect({ frequency: 'hourly' });
    const start = ingested().length;
    const accepted = events(30, 3, 'r', (i) => (i === 10 ? { channel: 'a channel name far too long for the stream' } : {}));
    await send(accepted);
    const deadBefore = d.gateway.runtime.local.queues.ingestion.deadLetters.length;
    await fire('hourly');
    expect(ingested().slice(start).map((r) => r.event_id)).toEqual(accepted.filter((_, i) => i !== 10).map((e) => e.event_id));
    expect(d.gateway.runtime.local.queues.ingestion.deadLetters.length).toBe(deadBefore + 1);
    expect((await deliveries()).heldNow).toBe(0);
  });

  it('switching from Hourly to Real-time sends what was held at once, and new events go as they come', async () => {
    await d.connect({ frequency: 'hourly' });
    const start = ingested().length;
    await send(events(5, 1, 'switch'));
    const response = await d.gateway.call('PUT', `/api/v1/accounts/${d.accountId}/connections/data/sync-settings`, { token: await d.userToken(), body: { frequency: 'real_time' } });
    expect(response.status).toBe(200);
    await d.gateway.runtime.local.queues.syncJobs.idle();
    expect(ingested().slice(start).map((r) => r.event_id)).toEqual(['switch-0', 'switch-1', 'switch-2', 'switch-3', 'switch-4']);

    expect(await send(events(2, 1, 'now'))).toEqual({ accepted: 2, delivery: 'real_time' });
    await d.gateway.runtime.local.queues.ingestion.idle();
    expect(ingested().slice(start + 5).map((r) => r.event_id)).toEqual(['now-0', 'now-1']);
  });

  it('Qualification and Nurture writes go as engagement events of the declared schema', async () => {
    await d.connect({});
    const start = ingested().length;
    const at = '2030-02-01T10:00:00Z';
    const response = await d.gateway.call('POST', '/api/v1/playbook/data/writes', {
      token: d.key,
      body: {
        writes: [
          { kind: 'qualification', id: 'q1', email: 'ann@example.com', status: 'qualified', at, conversationId: 'c1', channel: 'chat' },
          { kind: 'conversation_outcome', id: 'o1', email: 'ann@example.com', outcome: 'booked_meeting', at, conversationId: 'c1' },
          { kind: 'lead_score', id: 's1', email: 'ann@example.com', score: 87, at },
        ],
      },
    });
    expect(response.status).toBe(202);
    await d.gateway.runtime.local.queues.ingestion.idle();
    expect(ingested().slice(start)).toEqual([
      { event_id: 'qualification:q1', customer_email: 'ann@example.com', event_type: 'qualification.qualified', event_timestamp: '2030-02-01T10:00:00.000Z', conversation_id: 'c1', channel: 'chat' },
      { event_id: 'conversation_outcome:o1', customer_email: 'ann@example.com', event_type: 'conversation_outcome.booked_meeting', event_timestamp: '2030-02-01T10:00:00.000Z', conversation_id: 'c1', channel: '' },
      { event_id: 'lead_score:s1', customer_email: 'ann@example.com', event_type: 'lead_score.87', event_timestamp: '2030-02-01T10:00:00.000Z', conversation_id: '', channel: '' },
    ]);
    // The ingestion worker counted them as sent, for the dashboard.
    const sent = (await deliveries()).hours.reduce((sum, hour) => sum + (hour.sent ?? 0), 0);
    expect(sent).toBe(ingested().length);
    const bad = await d.gateway.call('POST', '/api/v1/playbook/data/writes', { token: d.key, body: { writes: [{ kind: 'lead_score', id: 's2', email: 'ann@example.com', score: 101, at }] } });
    expect(bad.status).toBe(400);
  });

  it('conversation.ended, published by the gateway, becomes an engagement event when the setting is on', async () => {
    const publish = (event: Partial<GatewayEvent> & { data: Record<string, unknown> }) =>
      d.gateway.runtime.local.gateway.events.publish([
        { schemaVersion: '1', id: `evt-${Math.random().toString(36).slice(2)}`, type: 'conversation.ended', accountId: d.accountId, source: 'messaging', occurredAt: '2030-03-01T12:00:00.000Z', ...event },
      ]);
    const start = ingested().length;
    await d.connect({});
    await publish({ data: { conversationId: 'conv-off', endedAt: '2030-03-01T12:00:00Z', endUserEmail: 'bo@example.com' } });
    await d.gateway.runtime.local.queues.ingestion.idle();
    expect(ingested()).toHaveLength(start);

    await d.connect({ conversationEndedEvents: true });
    await publish({ data: { conversationId: 'conv-1', endedAt: '2030-03-01T12:05:00Z', endUserEmail: 'bo@example.com' } });
    // Published twice (a retried worker): one record id, which the platform upserts.
    await publish({ data: { conversationId: 'conv-1', endedAt: '2030-03-01T12:05:00Z', endUserEmail: 'bo@example.com' } });
    await publish({ data: { conversationId: 'conv-no-email', endedAt: '2030-03-01T12:06:00Z' } });
    await publish({ type: 'message.received', data: { conversationId: 'conv-1', endUserEmail: 'bo@example.com' } });
    await d.gateway.runtime.local.queues.ingestion.idle();
    const made = ingested().slice(start);
    expect(new Set(made.map((r) => r.event_id))).toEqual(new Set(['conversation_ended:conv-1']));
    expect(made[0]).toEqual({
      event_id: 'conversation_ended:conv-1',
      customer_email: 'bo@example.com',
      event_type: 'conversation_ended',
      event_timestamp: '2030-03-01T12:05:00.000Z',
      conversation_id: 'conv-1',
      channel: 'messaging',
    });
    // The events are on the bus as published.
    expect(d.gateway.runtime.local.bus.recent(d.accountId).filter((e) => e.type === 'conversation.ended').length).toBeGreaterThanOrEqual(4);

    // With Hourly, it is held like any engagement event.
    await d.connect({ conversationEndedEvents: true, frequency: 'hourly' });
    await publish({ data: { conversationId: 'conv-2', endUserEmail: 'bo@example.com' } });
    expect((await deliveries()).heldNow).toBe(1);
    await fire('hourly');
    expect(ingested().at(-1)).toMatchObject({ event_id: 'conversation_ended:conv-2', event_timestamp: '2030-03-01T12:00:00.000Z' });
  });
});
