import { DataSyncSettings } from '../../shared/data/settings';
import type { SQSEvent } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataClient } from '../../shared/data/client';
import {
  ingestBatch,
  ingestSqsBatch,
  payloadBytes,
  planRequests,
  toIngestionRecord,
  verdictFor,
  type IngestionItem,
  type IngestionTarget,
} from '../../shared/data/ingestion';
import { ENGAGEMENT_EVENT_FIELDS, ingestionSchemaDocument } from '../../shared/data/ingestion-schema';
import type { PlatformClient, PlatformRequest } from '../../shared/http/platform-client';
import { PlatformError } from '../../shared/http/platform-error';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import type { EngagementEvent } from '../../shared/queues/messages';
import type { TestGateway } from '../support/local-runtime';
import { startDataSandbox, type DataSandbox } from './support';
import * as store from '../../shared/store/store';

const CONNECTOR = 'integration_gateway';

function engagementEvent(i: number, fields: Partial<EngagementEvent> = {}): EngagementEvent {
  return {
    event_id: `evt-${i}`,
    customer_email: `person${i}@example.com`,
    event_type: 'message_sent',
    event_timestamp: '2030-01-02T03:04:05+02:00',
    conversation_id: `conv-${i}`,
    channel: 'chat',
    ...fields,
  };
}

function items(count: number, accountId: string, options: { receiveCount?: number; from?: number; fields?: Partial<EngagementEvent> } = {}): IngestionItem[] {
  const from = options.from ?? 0;
  return Array.from({ length: count }, (_, n) => ({
    messageId: `msg-${accountId}-${from + n}`,
    receiveCount: options.receiveCount ?? 1,
    message: { accountId, event: engagementEvent(from + n, options.fields) },
  }));
}

function platformError(status: number, platformMessage?: string): PlatformError {
  return new PlatformError({
    platform: 'data',
    kind: status === 429 ? 'rate_limited' : status >= 500 ? 'unavailable' : status === 401 ? 'auth' : 'invalid_request',
    status,
    platformMessage,
    attempts: 1,
    method: 'POST',
    path: '/api/v1/ingest/sources/x/y',
    retryable: status === 429 || status >= 500,
  });
}

describe('ingestion planning (pure)', () => {
  it('makes every schema field present, blank when unknown, with the timestamp in UTC', () => {
    const record = toIngestionRecord(engagementEvent(1, { conversation_id: '', channel: '' }));
    expect(Object.keys(record).sort()).toEqual([...ENGAGEMENT_EVENT_FIELDS].sort());
    expect(record).toMatchObject({ conversation_id: '', channel: '', event_timestamp: '2030-01-02T01:04:05.000Z' });
  });

  it('plans 120 records as requests of 50, 50 and 20, in order', () => {
    const records = Array.from({ length: 120 }, (_, i) => ({ i, bytes: 200 }));
    const plan = planRequests(records);
    expect(plan.map((r) => r.length)).toEqual([50, 50, 20]);
    expect(plan.flat().map((r) => r.i)).toEqual(records.map((r) => r.i));
  });

  it('never plans a request over the record or byte limit, and keeps every record once (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 5_000 }), { maxLength: 300 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 5_100, max: 60_000 }),
        (sizes, maxRecords, maxBytes) => {
          const records = sizes.map((bytes, i) => ({ i, bytes }));
          const plan = planRequests(records, { maxRecords, maxBytes });
          expect(plan.flat().map((r) => r.i)).toEqual(records.map((r) => r.i));
          for (const request of plan) {
            expect(request.length).toBeGreaterThan(0);
            expect(request.length).toBeLessThanOrEqual(maxRecords);
            expect(payloadBytes(request)).toBeLessThanOrEqual(maxBytes);
          }
        },
      ),
    );
  });

  it('measures the payload exactly as JSON.stringify writes it', () => {
    const records = [toIngestionRecord(engagementEvent(1)), toIngestionRecord(engagementEvent(2, { channel: 'é\u0001"' }))];
    const measured = payloadBytes(records.map((r) => ({ bytes: Buffer.byteLength(JSON.stringify(r)) })));
    expect(measured).toBe(Buffer.byteLength(JSON.stringify({ data: records })));
  });

  it('maps failures to retry, refuse-one-record or split', () => {
    expect(verdictFor(platformError(429), 50)).toMatchObject({ kind: 'retry', stopAccount: true });
    expect(verdictFor(platformError(503), 50)).toMatchObject({ kind: 'retry', stopAccount: false });
    expect(verdictFor(platformError(401), 50)).toMatchObject({ kind: 'retry', stopAccount: true });
    expect(verdictFor(platformError(400, "record 7 is missing required field 'channel' of a/b"), 50)).toMatchObject({
      kind: 'refuse-record',
      index: 7,
      reason: expect.stringContaining('field channel'),
    });
    // An index outside the request cannot be trusted: split instead.
    expect(verdictFor(platformError(400, 'record 70 is bad'), 50)).toMatchObject({ kind: 'split' });
    expect(verdictFor(platformError(400, 'bad request'), 50)).toMatchObject({ kind: 'split' });
    expect(verdictFor(platformError(413), 50)).toMatchObject({ kind: 'split' });
    // Accepted with a body that could not be read (a proxy page, a cut connection): sent, not resent.
    const unreadable202 = new PlatformError({ platform: 'data', kind: 'invalid_response', status: 202, attempts: 1, method: 'POST', path: '/api/v1/ingest/sources/x/y', retryable: false });
    expect(verdictFor(unreadable202, 50)).toEqual({ kind: 'sent' });
    const unreadable502 = new PlatformError({ platform: 'data', kind: 'invalid_response', status: 502, attempts: 1, method: 'POST', path: '/api/v1/ingest/sources/x/y', retryable: false });
    expect(verdictFor(unreadable502, 50)).toMatchObject({ kind: 'retry' });
    expect(verdictFor(new Error('boom'), 50)).toMatchObject({ kind: 'retry' });
  });
});

describe('ingestion schema document', () => {
  it('is an OpenAPI 3.0.3 document with the object and its typed fields', () => {
    const doc = ingestionSchemaDocument('EngagementEvent');
    expect(doc.openapi).toBe('3.0.3');
    const schema = doc.components.schemas.EngagementEvent;
    expect(Object.keys(schema?.properties ?? {})).toEqual([...ENGAGEMENT_EVENT_FIELDS]);
    expect(schema?.properties.customer_email).toEqual({ type: 'string', format: 'email' });
    expect(schema?.properties.event_timestamp).toEqual({ type: 'string', format: 'date-time' });
    expect(schema?.properties.channel).toEqual({ type: 'string' });
    expect(() => ingestionSchemaDocument('bad name; drop')).toThrow();
  });
});

describe('ingestion over HTTP against the data platform simulator', () => {
  let sandbox: DataSandbox;
  let session: Pick<PlatformClient, 'request'>;
  let objectCounter = 0;

  beforeAll(async () => {
    sandbox = await startDataSandbox();
    session = dataClient({
      env: sandbox.env,
      accountId: sandbox.accountId,
      config: sandbox.config,
      credentials: sandbox.credentials,
      rateBudget: unlimitedRateBudget,
      // One attempt: the worker's retries are SQS's.
      retry: { maxAttempts: 1 },
    });
  });
  afterAll(async () => sandbox.stop());

  /** A fresh ingestion object per test (its schema registered), so counts never mix. */
  function freshTarget(wrap?: (inner: Pick<PlatformClient, 'request'>) => Pick<PlatformClient, 'request'>): IngestionTarget {
    objectCounter += 1;
    const object = `EngagementEvent${objectCounter}`;
    const schema = ingestionSchemaDocument(object).components.schemas[object];
    sandbox.sim.data.registerIngestionSchema(CONNECTOR, object, Object.keys(schema?.properties ?? {}));
    return { session: wrap ? wrap(session) : session, connector: CONNECTOR, object };
  }
  const requestsTo = (target: IngestionTarget) => sandbox.sim.requests.get(`POST /api/v1/ingest/sources/${CONNECTOR}/${target.object}`) ?? 0;
  const ingestedIds = (target: IngestionTarget) => sandbox.sim.data.ingested(CONNECTOR, target.object).map((r) => r.event_id);

  it('sends 120 messages as 3 requests of at most 50, each record once with every field', async () => {
    const target = freshTarget();
    const outcomes = await ingestBatch(items(120, 'acme'), { targetFor: async () => target });
    expect(outcomes.filter((o) => o.result === 'sent')).toHaveLength(120);
    expect(requestsTo(target)).toBe(3);
    const ingested = sandbox.sim.data.ingested(CONNECTOR, target.object);
    expect(ingested.map((r) => r.event_id)).toEqual(Array.from({ length: 120 }, (_, i) => `evt-${i}`));
    for (const record of ingested) {
      expect(Object.keys(record).sort()).toEqual([...ENGAGEMENT_EVENT_FIELDS].sort());
      expect(record.event_timestamp).toBe('2030-01-02T01:04:05.000Z');
    }
  });

  it('splits a batch whose payload would pass 200 KB', async () => {
    const target = freshTarget();
    // Control characters are escaped to 6 bytes each in JSON: about 6 KB per record, 300 KB for 50.
    const wide = '\u0001'.repeat(255);
    const batch = items(50, 'acme', { fields: { event_type: wide, conversation_id: wide, channel: wide } });
    const sizes: number[] = [];
    const measuring: IngestionTarget = {
      ...target,
      session: {
        request: <T>(request: PlatformRequest<T>) => {
          sizes.push(Buffer.byteLength(JSON.stringify(request.body)));
          return session.request(request);
        },
      },
    };
    const outcomes = await ingestBatch(batch, { targetFor: async () => measuring });
    expect(outcomes.every((o) => o.result === 'sent')).toBe(true);
    expect(requestsTo(target)).toBe(2);
    expect(sizes.every((size) => size < 200 * 1024)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(200 * 1024);
    expect(ingestedIds(target)).toHaveLength(50);
  });

  it('isolates a record the platform refuses by index: only it fails; the rest are sent once', async () => {
    // The record of evt-7 goes out without its channel: the simulator refuses the request naming it.
    const target = freshTarget((inner) => ({
      request: <T>(request: PlatformRequest<T>) => {
        const body = request.body as { data: Array<Record<string, string>> };
        const data = body.data.map((record) => (record.event_id === 'evt-7' ? Object.fromEntries(Object.entries(record).filter(([k]) => k !== 'channel')) : record));
        return inner.request({ ...request, body: { data } });
      },
    }));
    const batch = [...items(20, 'acme'), ...items(1, 'acme', { from: 7, receiveCount: 5 }).map((i) => ({ ...i, messageId: 'dup-of-7' }))];
    const outcomes = await ingestBatch(batch, { targetFor: async () => target });

    const failed = outcomes.filter((o) => o.result !== 'sent');
    expect(failed.map((o) => o.messageId).sort()).toEqual(['dup-of-7', 'msg-acme-7']);
    // The marker: the message on its last receive is the one the dead-letter queue takes.
    expect(failed.find((o) => o.messageId === 'msg-acme-7')).toMatchObject({ result: 'rejected', deadLetter: false });
    expect(failed.find((o) => o.messageId === 'dup-of-7')).toMatchObject({ result: 'rejected', deadLetter: true });
    expect(requestsTo(target)).toBe(2);
    const ingested = ingestedIds(target);
    expect(ingested).toHaveLength(19);
    expect(new Set(ingested).size).toBe(19);
    expect(ingested).not.toContain('evt-7');
  });

  it('splits in halves to find a refused record the platform does not name, within a bound', async () => {
    const target = freshTarget();
    let calls = 0;
    const anonymous: IngestionTarget = {
      ...target,
      session: {
        request: <T>(request: PlatformRequest<T>) => {
          calls += 1;
          const body = request.body as { data: Array<Record<string, string>> };
          if (body.data.some((r) => r.event_id === 'evt-33')) return Promise.reject(platformError(400, 'invalid record'));
          return session.request(request);
        },
      },
    };
    const outcomes = await ingestBatch(items(50, 'acme'), { targetFor: async () => anonymous });
    expect(outcomes.filter((o) => o.result !== 'sent')).toEqual([expect.objectContaining({ messageId: 'msg-acme-33', result: 'rejected' })]);
    expect(calls).toBeLessThanOrEqual(1 + 16);
    const ingested = ingestedIds(target);
    expect(ingested).toHaveLength(49);
    expect(new Set(ingested).size).toBe(49);

    // With no budget for extra requests, nothing is refused on a guess: the request is retried later.
    const noBudget = await ingestBatch(items(10, 'acme', { from: 30 }), { targetFor: async () => anonymous, maxIsolationRequests: 0 });
    expect(noBudget.every((o) => o.result === 'retry')).toBe(true);
  });

  it('fails the messages of a request answered 429, and sends nothing more for that account', async () => {
    const target = freshTarget();
    sandbox.sim.faults.inject({ fault: { kind: 'status', status: 429 }, times: 1, pathPrefix: `/api/v1/ingest/sources/${CONNECTOR}/${target.object}` });
    const outcomes = await ingestBatch(items(120, 'acme'), { targetFor: async () => target });
    expect(outcomes.filter((o) => o.result === 'retry')).toHaveLength(120);
    expect(requestsTo(target)).toBe(1);
    expect(ingestedIds(target)).toHaveLength(0);
  });

  it('fails only the request answered 503; the other requests go through', async () => {
    const target = freshTarget();
    sandbox.sim.faults.inject({ fault: { kind: 'status', status: 503 }, times: 1, pathPrefix: `/api/v1/ingest/sources/${CONNECTOR}/${target.object}` });
    const outcomes = await ingestBatch(items(120, 'acme'), { targetFor: async () => target });
    const retried = outcomes.filter((o) => o.result === 'retry').map((o) => o.messageId);
    expect(retried).toEqual(Array.from({ length: 50 }, (_, i) => `msg-acme-${i}`));
    expect(requestsTo(target)).toBe(3);
    expect(ingestedIds(target)).toEqual(Array.from({ length: 70 }, (_, i) => `evt-${50 + i}`));
  });

  it('answers an SQS batch of several accounts with exactly the failed message ids', async () => {
    const target = freshTarget();
    const batch = [...items(3, 'acme'), ...items(2, 'no-data'), ...items(1, 'acme').map((i) => ({ ...i, messageId: 'acme-duplicate' }))];
    const records = batch.map((i) => ({ messageId: i.messageId, body: JSON.stringify(i.message), attributes: { ApproximateReceiveCount: '2' } }));
    records.push({ messageId: 'unreadable', body: '{"accountId":"acme"}', attributes: { ApproximateReceiveCount: '1' } });
    const event = { Records: records } as unknown as SQSEvent;

    const response = await ingestSqsBatch(event, { targetFor: async (accountId) => (accountId === 'acme' ? target : undefined) });
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['msg-no-data-0', 'msg-no-data-1', 'unreadable']);
    // The duplicate of evt-0 is acknowledged, and evt-0 was sent once.
    expect(ingestedIds(target)).toEqual(['evt-0', 'evt-1', 'evt-2']);
    expect(requestsTo(target)).toBe(1);
  });
});

describe('data routes over HTTP (local gateway)', () => {
  let gateway: TestGateway;
  let key: string;
  const queued: unknown[] = [];

  beforeAll(async () => {
    const { startTestGateway } = await import('../support/local-runtime');
    gateway = await startTestGateway();
    // Capture what reaches the ingestion queue instead of running the worker.
    gateway.runtime.local.queues.ingestion.setConsumer(async (event) => {
      queued.push(...event.Records.map((r) => JSON.parse(r.body) as unknown));
      return { batchItemFailures: [] };
    });
    await gateway.enableAccount('acme');
    const response = await gateway.call('POST', '/api/v1/accounts/acme/api-keys', { token: await gateway.userToken('acme'), body: { name: 'playbook' } });
    expect(response.status).toBe(201);
    key = ((await response.json()) as { key: string }).key;
    await connectData({});
  });

  /** A data connection as Connect Account stores it (the events route checks its settings, not its key). */
  async function connectData(syncSettings: Record<string, unknown>): Promise<void> {
    const { table, vault } = gateway.runtime.local.gateway;
    const existing = await store.getConnection(table, 'acme', 'data');
    const at = new Date().toISOString();
    await store.putConnection(table, {
      accountId: 'acme',
      connector: 'data',
      config: { clientId: 'client', username: 'integration@acme', loginUrl: 'production', apiRegion: 'US' },
      credentials: existing?.credentials ?? (await vault.seal({ accountId: 'acme', connector: 'data' }, { privateKey: 'not used by this route' })),
      maskedSecrets: {},
      syncSettings: DataSyncSettings.parse(syncSettings),
      health: { state: 'unknown' },
      createdAt: at,
      updatedAt: at,
      version: existing?.version ?? 0,
    });
  }

  it('refuses events the data connection is not set to write (409, with the setting to change), and queues nothing', async () => {
    queued.length = 0;
    await connectData({ direction: 'read' });
    const response = await gateway.call('POST', '/api/v1/playbook/engagement-events', { token: key, body: { events: [engagementEvent(0)] } });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { remedy: string }).remedy).toMatch(/Sync direction/);
    await connectData({});
    await gateway.runtime.local.queues.ingestion.idle();
    expect(queued).toHaveLength(0);
  });
  afterAll(async () => gateway?.stop());

  it('queues valid engagement events for the key\'s account and answers 202', async () => {
    queued.length = 0;
    const events = Array.from({ length: 3 }, (_, i) => engagementEvent(i));
    const response = await gateway.call('POST', '/api/v1/playbook/engagement-events', { token: key, body: { events } });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: 3, delivery: 'real_time' });
    await gateway.runtime.local.queues.ingestion.idle();
    expect(queued).toEqual(events.map((event) => ({ accountId: 'acme', event })));
  });

  it('refuses a bad event naming its index and field, and queues nothing', async () => {
    queued.length = 0;
    const events = [engagementEvent(0), engagementEvent(1, { customer_email: 'not-an-email' }), engagementEvent(2)];
    const response = await gateway.call('POST', '/api/v1/playbook/engagement-events', { token: key, body: { events } });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { errors: Array<{ path: string }> };
    expect(problem.errors.map((e) => e.path)).toEqual(['events.1.customer_email']);
    expect(JSON.stringify(problem)).not.toContain('not-an-email');
    const empty = await gateway.call('POST', '/api/v1/playbook/engagement-events', { token: key, body: { events: [] } });
    expect(empty.status).toBe(400);
    const anonymous = await gateway.call('POST', '/api/v1/playbook/engagement-events', { body: { events: [engagementEvent(0)] } });
    expect(anonymous.status).toBe(401);
    await gateway.runtime.local.queues.ingestion.idle();
    expect(queued).toHaveLength(0);
  });

  it('gives a signed-in user the ingestion schema to upload, and hides other accounts', async () => {
    const response = await gateway.call('GET', '/api/v1/accounts/acme/connections/data/ingestion-schema', { token: await gateway.userToken('acme') });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(ingestionSchemaDocument('EngagementEvent'));
    const other = await gateway.call('GET', '/api/v1/accounts/other/connections/data/ingestion-schema', { token: await gateway.userToken('acme') });
    expect(other.status).toBe(404);
  });

  it('a stored connection whose key cannot be used asks for a reconnect (no 500); without a connection: 404', async () => {
    const unusable = await gateway.call('GET', `/api/v1/playbook/profiles/${encodeURIComponent('a@b.example')}`, { token: key });
    expect(unusable.status).toBe(409);
    expect(((await unusable.json()) as { remedy: string }).remedy).toMatch(/Reconnect/);
    await store.deleteConnection(gateway.runtime.local.gateway.table, 'acme', 'data');
    const response = await gateway.call('GET', `/api/v1/playbook/profiles/${encodeURIComponent('a@b.example')}`, { token: key });
    expect(response.status).toBe(404);
  });
});
