import { createServer, type Server } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { problems } from '../../shared/api/problem';
import { route } from '../../shared/api/route';
import { defineConnector } from '../../shared/connections/connector';
import { addConnector } from '../../shared/connections/registry';
import { createPlatformClient } from '../../shared/http/platform-client';
import { PlatformError } from '../../shared/http/platform-error';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import { dataObjectList, SyncFrequency, SyncMethod } from '../../shared/sync/sync-settings';
import type { TestGateway } from '../support/local-runtime';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * The registry seam: a fifth connector, defined here in the test as a connector folder would
 * define it, added to the registry as its one line would add it. With no other change, the core
 * offers it everywhere: the connector list, the OpenAPI document, Connect Account (validated by
 * its form), Test Connection (its remedy), sync settings, Sync now (the sync job pages its
 * platform over HTTP and stores the records), the schedules' dispatcher, its own route, and its
 * platform's webhooks (received at its address by the one receiver function, applied by the worker).
 */

/** A tiny helpdesk platform on loopback: `GET /tickets?after=<id>` pages two tickets at a time; `GET /tickets/<id>` reads one. */
const TICKETS = Array.from({ length: 5 }, (_, i) => ({ id: `t${i + 1}`, subject: `Ticket ${i + 1}` }));
let platform: Server;
let platformUrl: string;
let platformCalls = 0;
/** What the connector's scheduled work and event reaction did (capabilities the core reaches through the registry). */
const digests: string[] = [];
const reactedTo: string[] = [];

const TicketsSettings = z.strictObject({
  dataObjects: z._default(dataObjectList(['tickets'] as const), ['tickets']),
  frequency: z._default(SyncFrequency, 'daily'),
  method: z._default(SyncMethod, 'api'),
});

const helpdeskClient = (apiKey: string) =>
  createPlatformClient({ baseUrl: platformUrl, platform: 'helpdesk', auth: { kind: 'bearer', token: apiKey }, rateBudget: unlimitedRateBudget, allowInsecure: true, retry: { maxAttempts: 1 } });

/** A ticket, as the helpdesk's API and its webhooks carry it. */
const Ticket = z.object({ id: z.string(), subject: z.string() });
const TOKEN_HEADER = 'x-helpdesk-token';
const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

const helpdesk = defineConnector<z.infer<typeof TicketsSettings>>({
  name: 'helpdesk',
  platform: 'helpdesk platform',
  connection: {
    methods: ['api_key'],
    input: z.strictObject({ apiKey: z.string().regex(/^hd_[a-z0-9]{8,}$/, 'Helpdesk keys begin with hd_.'), webhookToken: z.string().min(16).optional() }),
    split: (input: { apiKey: string; webhookToken?: string }) => ({
      config: {},
      credentials: { apiKey: input.apiKey, ...(input.webhookToken ? { webhookToken: input.webhookToken } : {}) },
      warnings: [],
    }),
  },
  // Deliveries of `{id, type: 'ticket.updated', at, ticket}` carrying the connection's webhook token in a header.
  webhooks: {
    path: '/webhooks/helpdesk',
    proof: 'the webhook token in its header, compared in constant time',
    secretFields: ['webhookToken'],
    precheck: (request) => (request.headers[TOKEN_HEADER] ? undefined : problems.unauthorized('The delivery carries no helpdesk token.')),
    verify: (request, credentials) =>
      credentials.webhookToken && sameText(String(request.headers[TOKEN_HEADER]), credentials.webhookToken) ? undefined : problems.unauthorized('The helpdesk token does not match.'),
    readEnvelope: (body) => {
      const event = body as { id?: unknown; type?: unknown };
      return typeof event.id === 'string' && typeof event.type === 'string'
        ? { ok: true, eventId: event.id, eventType: event.type, payload: body as Record<string, unknown> }
        : { ok: false, errors: [{ path: 'id', message: 'an event has an id and a type' }] };
    },
    forQueue: (payload) => payload,
    effects: (payload) => {
      if (payload.type !== 'ticket.updated') return { kind: 'ignored', reason: `${String(payload.type)} changes no ticket` };
      const ticket = Ticket.parse(payload.ticket);
      const at = Number(payload.at);
      return { kind: 'apply', occurredAt: at, changes: [{ object: 'tickets', id: ticket.id, record: { id: ticket.id, fields: ticket }, version: at }], references: [] };
    },
    settings: (syncSettings) => ({ ...TicketsSettings.parse(syncSettings), keeps: () => true }),
    versionAt: (epochMs) => Math.floor(epochMs / 1000),
    fetcher: (client) => async (_object, id) => {
      const { body } = await client.request({ method: 'GET', path: `/tickets/${encodeURIComponent(id)}`, schema: Ticket });
      return { found: true, record: { id: body.id, fields: body } };
    },
    subscribeTo: ['ticket.updated'],
    readiness: (connection) => ({ ready: connection.webhookSecret !== undefined, notes: [] }),
  },
  settings: TicketsSettings,
  client: ({ credentials }) => helpdeskClient(credentials.apiKey ?? ''),
  testConnection: ({ credentials }) => helpdeskClient(credentials.apiKey ?? '').request({ method: 'GET', path: '/tickets' }),
  problem: (error) => ({
    health: error instanceof PlatformError && error.kind === 'auth' ? 'needs_reconnect' : 'degraded',
    reason: error instanceof Error ? error.message : String(error),
    remedy: 'Create a new helpdesk key.',
  }),
  sync: {
    objects: ['tickets'],
    source: (_object, client) => ({
      async fetchPage(_window, cursor) {
        const after = typeof cursor?.after === 'string' ? cursor.after : '';
        const { body } = await client.request({ method: 'GET', path: '/tickets', query: after ? { after } : {}, schema: z.object({ tickets: z.array(z.object({ id: z.string(), subject: z.string() })), more: z.boolean() }) });
        const last = body.tickets.at(-1)?.id;
        return {
          records: body.tickets.map((ticket) => ({ id: ticket.id, fields: ticket })),
          deletedIds: [],
          ...(body.more && last ? { next: { after: last } } : {}),
        };
      },
    }),
  },
  scheduled: {
    jobsFor: (settings, frequency) => (settings.frequency === frequency ? ['digest'] : []),
    owns: (object) => object === 'digest',
    run: async (job) => {
      digests.push(`${job.accountId}:${job.trigger}`);
      return { more: false };
    },
  },
  reactions: {
    'customer.created': async (event) => {
      reactedTo.push(`${event.accountId}:${event.id}`);
    },
  },
  routes: [
    route({
      method: 'GET',
      path: '/api/v1/playbook/helpdesk/greeting',
      operationId: 'helpdeskGreeting',
      summary: 'A helpdesk operation of its own',
      access: 'public',
      params: z.object({}),
      response: { status: 200, description: 'A greeting', schema: z.object({ hello: z.string() }) },
      handle: async () => ({ hello: 'from the helpdesk connector' }),
    }),
  ],
});

describe('a fifth connector: a folder and one registry line', () => {
  let gateway: TestGateway;
  let token: string;
  const key = `hd_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;

  beforeAll(async () => {
    platform = createServer((req, res) => {
      platformCalls += 1;
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.headers.authorization !== `Bearer ${key}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad key"}');
        return;
      }
      const one = /^\/tickets\/(.+)$/.exec(url.pathname);
      if (one) {
        const ticket = TICKETS.find((candidate) => candidate.id === decodeURIComponent(one[1]!));
        res.writeHead(ticket ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(ticket ?? { error: 'no such ticket' }));
        return;
      }
      const start = TICKETS.findIndex((ticket) => ticket.id === url.searchParams.get('after')) + 1;
      const page = TICKETS.slice(start, start + 2);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ tickets: page, more: start + 2 < TICKETS.length }));
    });
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
    platformUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;

    // The registry line. The gateway's modules are loaded after it, as in a build that has it.
    addConnector(helpdesk);
    const { startTestGateway } = await import('../support/local-runtime');
    gateway = await startTestGateway();
    await gateway.enableAccount('acme');
    token = await gateway.userToken('acme');
  });
  afterAll(async () => {
    await gateway?.stop();
    await new Promise((resolve) => platform?.close(resolve));
  });

  it('is listed with its form, settings and capabilities, and described in the OpenAPI document', async () => {
    const listed = (await (await gateway.call('GET', '/api/v1/connectors', { token })).json()) as { connectors: Array<{ name: string; capabilities: unknown }> };
    expect(listed.connectors.map((connector) => connector.name)).toContain('helpdesk');
    expect(listed.connectors.find((connector) => connector.name === 'helpdesk')?.capabilities).toEqual({
      sync: { objects: ['tickets'] },
      webhooks: { path: '/webhooks/helpdesk', events: ['ticket.updated'] },
      authorizationCode: false,
      revokesOnDisconnect: false,
    });
    const document = await (await gateway.call('GET', '/api/v1/openapi.json')).text();
    expect(document).toContain('^hd_[a-z0-9]{8,}$');
    expect(document).toContain('/api/v1/playbook/helpdesk/greeting');
  });

  it('refuses a bad form with its own message, and changes nothing', async () => {
    const response = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk', { token, body: { apiKey: 'nope' } });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Helpdesk keys begin with hd_.');
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'helpdesk')).toBeUndefined();
  });

  it('connects, tests, saves settings, syncs its records and serves its own route', async () => {
    const connected = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk', { token, body: { apiKey: key } });
    expect(connected.status).toBe(200);
    const answer = await connected.text();
    expect(answer).not.toContain(key);
    // Its test passed, so its first sync started: its records are read before anything else here.
    expect(JSON.parse(answer)).toMatchObject({ health: { state: 'healthy' }, firstSync: { enqueued: 1 } });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect((await store.listRecords(gateway.runtime.local.gateway.table, recordsAt('acme', 'helpdesk', 'tickets'), { limit: 10 })).records).toHaveLength(TICKETS.length);

    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/helpdesk/test', { token })).json()) as { ok: boolean };
    expect(tested.ok).toBe(true);

    const saved = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk/sync-settings', { token, body: { dataObjects: ['tickets'], frequency: 'hourly', method: 'api' } });
    expect(saved.status).toBe(200);
    const refused = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk/sync-settings', { token, body: { dataObjects: ['invoices'] } });
    expect(refused.status).toBe(400);

    const callsBefore = platformCalls;
    expect((await gateway.call('POST', '/api/v1/accounts/acme/connections/helpdesk/syncs', { token, body: {} })).status).toBe(202);
    await gateway.runtime.local.queues.syncJobs.idle();
    const records = await store.listRecords(gateway.runtime.local.gateway.table, recordsAt('acme', 'helpdesk', 'tickets'), { limit: 10 });
    expect(records.records.map((record) => record.id).sort()).toEqual(TICKETS.map((ticket) => ticket.id));
    expect(platformCalls - callsBefore).toBe(3);

    // The hourly schedule's dispatcher finds it through the registry as well: its sync, and its other scheduled work.
    expect(await gateway.runtime.scheduler.fire('hourly')).toMatchObject({ enqueued: 2 });
    await gateway.runtime.local.queues.syncJobs.idle();
    expect(digests).toEqual(['acme:hourly']);

    // The publishing path runs its reaction to another connector's event type.
    await gateway.runtime.local.gateway.events.publish([
      { schemaVersion: '1', id: 'evt-reaction', type: 'customer.created', accountId: 'acme', source: 'payment', occurredAt: new Date().toISOString(), data: {} },
    ]);
    expect(reactedTo).toEqual(['acme:evt-reaction']);

    const greeting = await gateway.call('GET', '/api/v1/playbook/helpdesk/greeting');
    expect(await greeting.json()).toEqual({ hello: 'from the helpdesk connector' });
  });

  it("receives its platform's webhooks at its own address, through the one receiver function, and applies them once", async () => {
    const webhookToken = crypto.randomUUID();
    const reconnected = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk?test=false', { token, body: { apiKey: key, webhookToken } });
    expect(reconnected.status).toBe(200);
    const both = await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk/sync-settings', { token, body: { dataObjects: ['tickets'], frequency: 'daily', method: 'both' } });
    expect(both.status).toBe(200);
    // The dashboard's list of addresses to enter on each platform has it.
    const listed = (await (await gateway.call('GET', '/api/v1/accounts/acme/webhooks', { token })).json()) as { webhooks: Array<{ connector: string; url: string }> };
    const address = listed.webhooks.find((endpoint) => endpoint.connector === 'helpdesk')?.url;
    expect(address).toBe(`${gateway.url}/webhooks/helpdesk?account=acme`);

    // The ticket changes on the platform, which says so.
    TICKETS[1]!.subject = 'Ticket 2, answered';
    const event = { id: 'hev_1', type: 'ticket.updated', at: Math.floor(Date.now() / 1000), ticket: TICKETS[1] };
    const deliver = (withToken: string) => fetch(address!, { method: 'POST', headers: { 'content-type': 'application/json', 'x-helpdesk-token': withToken }, body: JSON.stringify(event) });
    expect((await deliver('not-the-token-at-all')).status).toBe(401);
    expect((await deliver(webhookToken)).status).toBe(200);
    expect((await deliver(webhookToken)).status).toBe(200); // the platform's retry: enqueued again, applied once
    await gateway.runtime.local.queues.webhookEvents.idle();

    const stored = await store.getRecord(gateway.runtime.local.gateway.table, recordsAt('acme', 'helpdesk', 'tickets'), 't2');
    expect(stored?.body).toEqual({ id: 't2', subject: 'Ticket 2, answered' });
    expect(await store.getWebhookEventMark(gateway.runtime.local.gateway.table, 'acme', 'helpdesk', 'hev_1')).toMatchObject({ state: 'applied', attempts: 1 });
  });

  it('tests with its own remedy when the platform refuses the key', async () => {
    await store.deleteConnection(gateway.runtime.local.gateway.table, 'acme', 'helpdesk');
    await gateway.call('PUT', '/api/v1/accounts/acme/connections/helpdesk', { token, body: { apiKey: 'hd_wrongwrongwrong' } });
    const tested = (await (await gateway.call('POST', '/api/v1/accounts/acme/connections/helpdesk/test', { token })).json()) as { ok: boolean; health: { state: string; remedy: string } };
    expect(tested).toMatchObject({ ok: false, health: { state: 'needs_reconnect', remedy: 'Create a new helpdesk key.' } });
  });
});
