import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDataGateway, startDataSandbox, type DataGateway, type DataSandbox } from '../test/data/support';
import { dataClient } from '../shared/data/client';
import { ingestionSchemaDocument } from '../shared/data/ingestion-schema';
import { profileByEmail } from '../shared/data/query';
import { unlimitedRateBudget } from '../shared/http/rate-budget';
import { setLogSink } from '../shared/log/logger';
import type { EngagementEvent } from '../shared/queues/messages';
import type { Figures } from './results-file';
import { percentile, round } from './statistics';

/**
 * The data connector's figures, measured over real HTTP against the CRM simulator:
 * - ingestion of 10,000 engagement events through the playbook API and the ingestion queue
 *   (requests, largest payload, losses), then the same with 1% records the platform refuses;
 * - Hourly mode: 10,000 events held, the gateway restarted before the send, the hourly schedule;
 * - token calls for 1,000 queries over 10 simulated minutes;
 * - Real-Time Personalization profile reads through the local front, cached and uncached, with
 *   the simulator answering at once and at 300 ms.
 */

const CONNECTOR = 'integration_gateway';
const OBJECT = 'EngagementEvent';
const INGEST_PATH = `POST /api/v1/ingest/sources/${CONNECTOR}/${OBJECT}`;
const EVENTS = 10_000;
const PER_REQUEST = 500;


function events(n: number, prefix: string, invalidEvery?: number): EngagementEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    event_id: `${prefix}-${i}`,
    customer_email: `person${i % 400}@example.com`,
    event_type: 'message_sent',
    event_timestamp: new Date(Date.UTC(2030, 0, 1) + i * 1000).toISOString(),
    conversation_id: `conv-${Math.floor(i / 5)}`,
    // The data stream maps channel to a 40-character field: a longer one is refused by the platform.
    channel: invalidEvery && i % invalidEvery === invalidEvery - 1 ? 'x'.repeat(60) : 'chat',
  }));
}

async function sendAll(d: DataGateway, batch: EngagementEvent[]): Promise<void> {
  for (let start = 0; start < batch.length; start += PER_REQUEST) {
    const response = await d.gateway.call('POST', '/api/v1/playbook/engagement-events', { token: d.key, body: { events: batch.slice(start, start + PER_REQUEST) } });
    if (response.status !== 202) throw new Error(`engagement events answered ${response.status}`);
  }
}

function arrived(sandbox: DataSandbox, prefix: string): { ids: Set<string>; records: number } {
  const records = sandbox.sim.data.ingested(CONNECTOR, OBJECT).filter((r) => String(r.event_id).startsWith(`${prefix}-`));
  return { ids: new Set(records.map((r) => String(r.event_id))), records: records.length };
}

async function benchIngestion(figures: Figures, notes: string[]): Promise<void> {
  const sandbox = await startDataSandbox();
  const schema = ingestionSchemaDocument(OBJECT).components.schemas[OBJECT];
  sandbox.sim.data.registerIngestionSchema(CONNECTOR, OBJECT, Object.keys(schema?.properties ?? {}), { maxLengths: { channel: 40 } });
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-data-'));
  let d = await startDataGateway({ existing: sandbox, dataDir });
  const requests = () => sandbox.sim.requests.get(INGEST_PATH) ?? 0;
  try {
    // Real-time, 10,000 valid events, simulator answering at once and at 300 ms.
    await d.connect({ frequency: 'real_time' });
    for (const [suffix, latency] of [['', 0], ['_300ms', 300]] as const) {
      sandbox.sim.setLatency(latency);
      const before = requests();
      const started = performance.now();
      const prefix = `valid${suffix}`;
      await sendAll(d, events(EVENTS, prefix));
      await d.gateway.runtime.local.queues.ingestion.idle();
      const seconds = (performance.now() - started) / 1000;
      const got = arrived(sandbox, prefix);
      figures[`ingest.requests_per_10k${suffix}`] = requests() - before;
      figures[`ingest.valid_lost${suffix}`] = EVENTS - got.ids.size;
      figures[`ingest.duplicates${suffix}`] = got.records - got.ids.size;
      figures[`ingest.seconds_per_10k${suffix}`] = round(seconds, 1);
    }
    sandbox.sim.setLatency(0);
    figures['ingest.max_payload_kb'] = round(sandbox.sim.data.largestIngestionBytes / 1024, 1);

    // 1% the platform refuses.
    {
      const batch = events(EVENTS, 'mixed', 100);
      const invalid = batch.filter((e) => e.channel.length > 40).length;
      const deadBefore = d.gateway.runtime.local.queues.ingestion.deadLetters.length;
      const before = requests();
      await sendAll(d, batch);
      await d.gateway.runtime.local.queues.ingestion.idle();
      const got = arrived(sandbox, 'mixed');
      figures['ingest.invalid_count'] = invalid;
      figures['ingest.invalid_dead_lettered'] = d.gateway.runtime.local.queues.ingestion.deadLetters.length - deadBefore;
      figures['ingest.invalid_valid_lost'] = EVENTS - invalid - got.ids.size;
      figures['ingest.invalid_requests_per_10k'] = requests() - before;
    }

    // Hourly: accepted and held, the gateway restarted, then the hourly schedule sends.
    {
      await d.connect({ frequency: 'hourly' });
      const before = requests();
      await sendAll(d, events(EVENTS, 'hourly'));
      await d.gateway.runtime.local.queues.ingestion.idle();
      const sentBeforeSchedule = arrived(sandbox, 'hourly').records;
      await d.gateway.stop();
      d = await startDataGateway({ existing: sandbox, dataDir });
      const started = performance.now();
      await d.gateway.runtime.scheduler.fire('hourly');
      await d.gateway.runtime.local.queues.syncJobs.idle();
      const got = arrived(sandbox, 'hourly');
      figures['ingest.hourly.sent_before_schedule'] = sentBeforeSchedule;
      figures['ingest.hourly.requests_per_10k'] = requests() - before;
      figures['ingest.hourly.lost'] = EVENTS - got.ids.size;
      figures['ingest.hourly.duplicates'] = got.records - got.ids.size;
      figures['ingest.hourly.send_seconds'] = round((performance.now() - started) / 1000, 1);
    }
    notes.push(
      `Ingestion: ${EVENTS} events posted to /api/v1/playbook/engagement-events (${PER_REQUEST} a request), through the in-process ingestion queue (batches of 50, the deployed worker) to the CRM simulator over HTTP; requests counted at the simulator. ` +
        '`_300ms`: the simulator answers every call 300 ms late. Mixed run: 1 event in 100 has a channel longer than the data stream\'s 40-character field, so the platform refuses it by index; the worker resends the rest without it and the refused one is retried until the queue dead-letters it (5 receives). ' +
        'Hourly: the events are held in the table (dynalite on disk), the local runtime is stopped and started again on the same files, then the hourly schedule fires.',
    );
  } finally {
    await d.stop();
    await sandbox.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchTokens(figures: Figures, notes: string[]): Promise<void> {
  let clock = Date.UTC(2030, 0, 1);
  const sandbox = await startDataSandbox({ simulator: { now: () => clock } });
  try {
    const people = sandbox.sim.data.seedUnifiedIndividuals(50);
    const session = dataClient({ env: sandbox.env, accountId: sandbox.accountId, config: sandbox.config, credentials: sandbox.credentials, rateBudget: unlimitedRateBudget, now: () => clock });
    const before = sandbox.tokenRequests();
    const QUERIES = 1_000;
    for (let i = 0; i < QUERIES; i += 1) {
      await profileByEmail(session, people[i % people.length]!.Email);
      clock += (10 * 60 * 1000) / QUERIES;
    }
    const after = sandbox.tokenRequests();
    figures['token.calls_per_1000_queries'] = after.oauth2 - before.oauth2 + (after.exchange - before.exchange);
    figures['token.jwt_bearer_calls_per_1000_queries'] = after.oauth2 - before.oauth2;
    figures['token.exchange_calls_per_1000_queries'] = after.exchange - before.exchange;
    notes.push('Tokens: 1,000 profile queries through one data client over 10 simulated minutes (the simulator and the client share the clock): identity sign-ins (JWT bearer) plus a360 exchanges. Tokens are cached per connection and renewed before they expire.');
  } finally {
    await sandbox.stop();
  }
}

async function benchProfileReads(figures: Figures, notes: string[]): Promise<void> {
  const d = await startDataGateway();
  try {
    const people = d.sandbox.sim.data.seedUnifiedIndividuals(500);
    await d.connect({});
    const read = async (email: string, maxAge: number) => {
      const started = performance.now();
      const response = await d.gateway.call('GET', `/api/v1/playbook/profiles/${encodeURIComponent(email)}?maxAgeSeconds=${maxAge}`, { token: d.key });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`profile read answered ${response.status}`);
      return performance.now() - started;
    };
    for (const [suffix, latency, count] of [['', 0, 500], ['_300ms', 300, 60]] as const) {
      d.sandbox.sim.setLatency(latency);
      // Warm: the token, and each profile once into the cache.
      for (let i = 0; i < count; i += 1) await read(people[i]!.Email, 300);
      const queriesBefore = d.queries();
      const cached: number[] = [];
      for (let i = 0; i < count; i += 1) cached.push(await read(people[i]!.Email, 300));
      const cachedQueries = d.queries() - queriesBefore;
      const uncached: number[] = [];
      for (let i = 0; i < count; i += 1) uncached.push(await read(people[i]!.Email, 0));
      for (const [kind, times] of [['cached', cached], ['uncached', uncached]] as const) {
        times.sort((a, b) => a - b);
        figures[`data.profile_read_ms_p50.${kind}${suffix}`] = round(percentile(times, 50));
        figures[`data.profile_read_ms_p99.${kind}${suffix}`] = round(percentile(times, 99));
      }
      figures[`data.profile_cached_reads_platform_queries${suffix}`] = cachedQueries;
    }
    notes.push(
      'Profile reads: GET /api/v1/playbook/profiles/{email} through the local HTTP front with an API key; `cached`: within maxAgeSeconds (no platform call), `uncached`: maxAgeSeconds=0 (one SQL query each). `_300ms`: the simulator answers 300 ms late (60 reads per kind).',
    );
  } finally {
    await d.stop();
  }
}

export async function benchData(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const figures: Figures = {};
  const notes: string[] = [];
  try {
    await benchIngestion(figures, notes);
    await benchTokens(figures, notes);
    await benchProfileReads(figures, notes);
  } finally {
    setLogSink(restoreLogs);
  }
  return { figures, notes };
}
