import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UnifiedIndividual } from '../../sandbox/data-simulator';
import { DataSyncSettings } from '../../shared/data/settings';
import { storeConnection } from '../support/stored-connection';
import { startDataGateway, type DataGateway } from './support';

/**
 * The playbooks' data reads end to end: HTTP into the local gateway, SQL over HTTP to the data
 * platform simulator, answers back. Every refusal is checked to have sent the platform nothing.
 */

const ORDERS = {
  name: 'Order__dlm',
  columns: [
    { name: 'order_id', type: 'text' },
    { name: 'email', type: 'text' },
    { name: 'status', type: 'text' },
    { name: 'amount', type: 'number' },
  ],
  keyColumn: 'order_id',
  emailColumn: 'email',
};

describe('data reads for playbooks, over HTTP against the data platform simulator', () => {
  let d: DataGateway;
  let people: UnifiedIndividual[];
  const call = (method: string, path: string, body?: unknown) => d.gateway.call(method, path, { token: d.key, ...(body !== undefined ? { body } : {}) });
  const post = async (path: string, body: unknown) => {
    const response = await call('POST', path, body);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const get = async (path: string) => {
    const response = await call('GET', path);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    d = await startDataGateway({ sandbox: { simulator: { queryBatchSize: 20 } } });
    people = d.sandbox.sim.data.seedUnifiedIndividuals(30);
    d.sandbox.sim.data.seedEngagement(people.slice(0, 3), 6);
    d.sandbox.sim.data.defineObject(
      { name: 'Order__dlm', columns: [{ name: 'order_id', type: 'VARCHAR' }, { name: 'email', type: 'VARCHAR' }, { name: 'status', type: 'VARCHAR' }, { name: 'amount', type: 'DECIMAL' }, { name: 'secret_note', type: 'VARCHAR' }] },
      [
        { order_id: 'o1', email: people[0]!.Email, status: 'paid', amount: 10, secret_note: 'x' },
        { order_id: 'o2', email: people[0]!.Email, status: 'paid', amount: 30, secret_note: 'x' },
        { order_id: 'o3', email: people[1]!.Email, status: 'refunded', amount: 5, secret_note: 'x' },
      ],
    );
    await d.connect({ dataModelObjects: ['unified_individual', 'engagement', 'custom'], customObjects: [ORDERS] });
  });
  afterAll(async () => d?.stop());

  describe('Activation: records, filtered and paged', () => {
    it('pages through every profile with a signed cursor, each once, in key order', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const { status, body } = await post('/api/v1/playbook/data/records', { limit: 7, ...(cursor ? { cursor } : {}) });
        expect(status).toBe(200);
        const records = body.records as Array<Record<string, string>>;
        expect(records.length).toBeLessThanOrEqual(7);
        seen.push(...records.map((r) => r.IndividualId!));
        cursor = body.nextCursor as string | undefined;
        pages += 1;
      } while (cursor && pages < 10);
      expect(pages).toBe(5);
      expect(seen).toEqual(people.map((p) => p.IndividualId).sort());
    });

    it('filters on allow-listed columns with the supported operators', async () => {
      const ada = await post('/api/v1/playbook/data/records', { columns: ['Email', 'FirstName'], filters: [{ column: 'FirstName', op: 'eq', value: 'Ada' }] });
      expect(ada.status).toBe(200);
      const expected = people.filter((p) => p.FirstName === 'Ada').map((p) => ({ Email: p.Email, FirstName: 'Ada' }));
      expect(new Set((ada.body.records as unknown[]).map((r) => JSON.stringify(r)))).toEqual(new Set(expected.map((r) => JSON.stringify(r))));

      const two = [people[3]!.Email, people[4]!.Email];
      const listed = await post('/api/v1/playbook/data/records', { columns: ['Email'], filters: [{ column: 'Email', op: 'in', value: two }, { column: 'FirstName', op: 'ne', value: 'nobody' }] });
      expect((listed.body.records as Array<{ Email: string }>).map((r) => r.Email).sort()).toEqual([...two].sort());
      expect(d.sandbox.sim.data.sqlReceived.at(-1)).toMatch(/WHERE Email IN \('.+', '.+'\) AND FirstName <> 'nobody' ORDER BY IndividualId ASC LIMIT 101$/);
    });

    it('refuses a cursor that was altered, belongs to another query, or to another account: nothing reaches the platform', async () => {
      const first = await post('/api/v1/playbook/data/records', { limit: 5 });
      const cursor = first.body.nextCursor as string;
      const [payload, signature] = cursor.split('.');
      const forged = Buffer.from(Buffer.from(payload!, 'base64url').toString('utf8').replace(/"k":"[^"]+"/, '"k":"0"')).toString('base64url');

      // Another account's cursor: a second account with its own connection to the same platform.
      const otherAccount = `${d.accountId}-b`;
      await d.gateway.enableAccount(otherAccount);
      await storeConnection(d.gateway.runtime.local.gateway, { accountId: otherAccount, connector: 'data', credentials: d.sandbox.credentials, config: d.sandbox.config, syncSettings: DataSyncSettings.parse({}) });
      const keyResponse = await d.gateway.call('POST', `/api/v1/accounts/${otherAccount}/api-keys`, { token: await d.gateway.userToken(otherAccount), body: { name: 'other' } });
      const otherKey = ((await keyResponse.json()) as { key: string }).key;
      const theirs = await d.gateway.call('POST', '/api/v1/playbook/data/records', { token: otherKey, body: { limit: 5 } });
      const theirCursor = ((await theirs.json()) as { nextCursor: string }).nextCursor;
      expect(theirCursor).toBeDefined();

      const before = d.queries();
      for (const bad of [`${forged}.${signature}`, `${payload}.${signature!.slice(0, -2)}AA`, 'not-a-cursor', theirCursor]) {
        const refused = await post('/api/v1/playbook/data/records', { limit: 5, cursor: bad });
        expect(refused.status).toBe(400);
        expect(JSON.stringify(refused.body.errors)).toMatch(/cursor/);
      }
      const otherQuery = await post('/api/v1/playbook/data/records', { limit: 5, cursor, filters: [{ column: 'FirstName', op: 'eq', value: 'Ada' }] });
      expect(otherQuery.status).toBe(400);
      expect(d.queries()).toBe(before);
    });
  });

  describe('Qualification: one person’s engagement history', () => {
    it('answers the person’s events, newest first, within the limit and since a time', async () => {
      const email = people[1]!.Email;
      const { status, body } = await get(`/api/v1/playbook/data/engagement/${encodeURIComponent(email)}?limit=4`);
      expect(status).toBe(200);
      const events = body.events as Array<{ event_timestamp: string; event_id: string }>;
      expect(events).toHaveLength(4);
      expect(body.truncated).toBe(true);
      const times = events.map((e) => e.event_timestamp);
      expect(times).toEqual([...times].sort().reverse());
      expect(events.every((e) => e.event_id.startsWith(`seed-${people[1]!.IndividualId}`))).toBe(true);

      const since = await get(`/api/v1/playbook/data/engagement/${encodeURIComponent(email)}?since=2030-01-01T04:00:00Z`);
      expect((since.body.events as unknown[]).length).toBe(2);
      const nobody = await get(`/api/v1/playbook/data/engagement/${encodeURIComponent('nobody@example.com')}`);
      expect(nobody.body).toMatchObject({ events: [], truncated: false });
    });
  });

  describe('Lead Scoring: aggregates', () => {
    it('counts, grouped by an allow-listed column', async () => {
      const { status, body } = await post('/api/v1/playbook/data/aggregates', {
        function: 'count',
        filters: [{ column: 'customer_email', op: 'eq', value: people[0]!.Email }],
        groupBy: ['event_type'],
      });
      expect(status).toBe(200);
      const groups = body.groups as Array<{ key: { event_type: string }; value: number }>;
      expect(groups.reduce((sum, g) => sum + g.value, 0)).toBe(6);
      expect(new Set(groups.map((g) => g.key.event_type)).size).toBe(groups.length);
      const all = await post('/api/v1/playbook/data/aggregates', { function: 'count' });
      expect(all.body.groups).toEqual([{ key: {}, value: 18 }]);
    });

    it('sums and averages a declared number column of a custom object', async () => {
      const sum = await post('/api/v1/playbook/data/aggregates', { object: 'Order__dlm', function: 'sum', column: 'amount', filters: [{ column: 'status', op: 'eq', value: 'paid' }] });
      expect(sum.body.groups).toEqual([{ key: {}, value: 40 }]);
      const avg = await post('/api/v1/playbook/data/aggregates', { object: 'Order__dlm', function: 'avg', column: 'amount', groupBy: ['email'] });
      const byEmail = Object.fromEntries((avg.body.groups as Array<{ key: { email: string }; value: number }>).map((g) => [g.key.email, g.value]));
      expect(byEmail).toEqual({ [people[0]!.Email]: 20, [people[1]!.Email]: 5 });
      const big = await post('/api/v1/playbook/data/aggregates', { object: 'Order__dlm', function: 'count', filters: [{ column: 'amount', op: 'gte', value: 10 }] });
      expect(big.body.groups).toEqual([{ key: {}, value: 2 }]);
    });
  });

  describe('Real-Time Personalization: one profile from a short cache, its age stated', () => {
    it('reads the platform once, then answers from the cache with its age; maxAgeSeconds=0 reads again', async () => {
      const person = people[5]!;
      const path = `/api/v1/playbook/profiles/${encodeURIComponent(person.Email)}`;
      const before = d.queries();
      const first = await get(path);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ individualId: person.IndividualId, email: person.Email, freshness: { source: 'platform', ageSeconds: 0 } });
      const second = await get(path);
      expect(second.body).toMatchObject({ individualId: person.IndividualId, freshness: { source: 'cache', fetchedAt: (first.body.freshness as { fetchedAt: string }).fetchedAt } });
      expect(d.queries() - before).toBe(1);
      const fresh = await get(`${path}?maxAgeSeconds=0`);
      expect(fresh.body).toMatchObject({ freshness: { source: 'platform' } });
      expect(d.queries() - before).toBe(2);
      expect((await get(`${path}?maxAgeSeconds=301`)).status).toBe(400);
    });
  });

  describe('custom objects: only declared objects and columns', () => {
    it('reads the declared columns of a declared object, and refuses an undeclared column even though the platform has it', async () => {
      const orders = await post('/api/v1/playbook/data/records', { object: 'Order__dlm', filters: [{ column: 'email', op: 'eq', value: people[0]!.Email }] });
      expect(orders.status).toBe(200);
      expect(orders.body.records).toEqual([
        { order_id: 'o1', email: people[0]!.Email, status: 'paid', amount: 10 },
        { order_id: 'o2', email: people[0]!.Email, status: 'paid', amount: 30 },
      ]);
      const before = d.queries();
      const secret = await post('/api/v1/playbook/data/records', { object: 'Order__dlm', columns: ['secret_note'] });
      expect(secret.status).toBe(400);
      expect(d.queries()).toBe(before);
    });

    it('refuses a declared object when Custom DMOs are not selected, and bad declarations', async () => {
      await d.connect({ dataModelObjects: ['unified_individual', 'engagement'], customObjects: [ORDERS] });
      try {
        const before = d.queries();
        const refused = await post('/api/v1/playbook/data/records', { object: 'Order__dlm' });
        expect(refused.status).toBe(400);
        expect(JSON.stringify(refused.body.errors)).toMatch(/unknown or unselected data model object/);
        expect(d.queries()).toBe(before);
      } finally {
        await d.connect({ dataModelObjects: ['unified_individual', 'engagement', 'custom'], customObjects: [ORDERS] });
      }
      const token = await d.userToken();
      const settingsPath = `/api/v1/accounts/${d.accountId}/connections/data/sync-settings`;
      for (const customObjects of [
        [{ ...ORDERS, name: 'Order__dlm; DROP' }],
        [{ ...ORDERS, columns: [{ name: "amount'", type: 'number' }] }],
        [{ ...ORDERS, keyColumn: 'missing' }],
        [{ ...ORDERS, name: 'UnifiedIndividual__dlm' }],
      ]) {
        const response = await d.gateway.call('PUT', settingsPath, { token, body: { dataModelObjects: ['custom'], customObjects } });
        expect(response.status).toBe(400);
      }
    });
  });

  describe('bad input is refused with a clear problem before anything reaches the platform', () => {
    const cases: Array<[string, string, unknown]> = [
      ['unknown object', '/api/v1/playbook/data/records', { object: 'Account' }],
      ['unknown column', '/api/v1/playbook/data/records', { columns: ['Password'] }],
      ['unknown filter column', '/api/v1/playbook/data/records', { filters: [{ column: 'Phone', op: 'eq', value: '1' }] }],
      ['a control character', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'eq', value: 'O\u0007Brien' }] }],
      ['a NUL in a list', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'in', value: ['a', 'x\u0000y'] }] }],
      ['a lone surrogate', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'eq', value: 'O\ud800Brien' }] }],
      ['an unsupported operator', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'like', value: 'a%' }] }],
      ['an operator as SQL', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: '= 1 OR 1', value: 'a' }] }],
      ['a column as SQL', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName = 1 OR 1', op: 'eq', value: 'a' }] }],
      ['a limit over the maximum', '/api/v1/playbook/data/records', { limit: 1001 }],
      ['a number for a text column', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'eq', value: 1 }] }],
      ['in without a list', '/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'in', value: 'a' }] }],
      ['SUM of a text column', '/api/v1/playbook/data/aggregates', { object: 'Order__dlm', function: 'sum', column: 'status' }],
      ['COUNT with a column', '/api/v1/playbook/data/aggregates', { function: 'count', column: 'event_type' }],
      ['GROUP BY an unknown column', '/api/v1/playbook/data/aggregates', { function: 'count', groupBy: ['Password'] }],
      ['too many groups', '/api/v1/playbook/data/aggregates', { function: 'count', limit: 1001 }],
    ];
    it.each(cases)('%s', async (_name, path, body) => {
      const before = d.queries();
      const { status, body: problem } = await post(path, body);
      expect(status).toBe(400);
      expect(problem.type).toMatch(/^urn:integration-gateway:problem:/);
      expect((problem.errors as unknown[]).length).toBeGreaterThan(0);
      expect(d.queries()).toBe(before);
    });

    it('refuses what a literal cannot carry in the path and query, naming the field', async () => {
      const before = d.queries();
      for (const [path, field] of [
        [`/api/v1/playbook/profiles/${encodeURIComponent('o\u0007brien@example.com')}`, 'email'],
        [`/api/v1/playbook/data/engagement/${encodeURIComponent('o\u0000brien@example.com')}`, 'email'],
        [`/api/v1/playbook/data/engagement/${encodeURIComponent(people[0]!.Email)}?limit=501`, 'limit'],
        [`/api/v1/playbook/data/engagement/${encodeURIComponent(people[0]!.Email)}?eventType=${encodeURIComponent('x\ny')}`, 'eventType'],
      ] as const) {
        const refused = await get(path);
        expect(refused.status).toBe(400);
        expect((refused.body.errors as Array<{ path: string }>).map((e) => e.path).join(' ')).toContain(field);
      }
      expect(d.queries()).toBe(before);
    });

    it('answers 409 naming the setting when the connection is not set to read', async () => {
      await d.connect({ direction: 'write' });
      try {
        const before = d.queries();
        const refused = await post('/api/v1/playbook/data/records', {});
        expect(refused.status).toBe(409);
        expect(refused.body.remedy).toMatch(/Sync direction/);
        await d.connect({ operation: 'ingest' });
        for (const read of [post('/api/v1/playbook/data/records', {}), get(`/api/v1/playbook/profiles/${encodeURIComponent(people[0]!.Email)}`)]) {
          const ingestOnly = await read;
          expect(ingestOnly.status).toBe(409);
          expect(ingestOnly.body.remedy).toMatch(/Data operation to Query or Both/);
        }
        await d.connect({ dataModelObjects: ['unified_individual'] });
        const noEngagement = await get(`/api/v1/playbook/data/engagement/${encodeURIComponent(people[0]!.Email)}`);
        expect(noEngagement.status).toBe(409);
        expect(noEngagement.body.remedy).toMatch(/Engagement/);
        expect(d.queries()).toBe(before);
      } finally {
        await d.connect({ dataModelObjects: ['unified_individual', 'engagement', 'custom'], customObjects: [ORDERS] });
      }
    });
  });

  describe("apostrophes and real addresses: quoted exactly, read, never SQL", () => {
    const apostrophes = [
      { IndividualId: 'apos-1', FirstName: 'Miles', LastName: "O'Brien", Email: "o'brien@example.test" },
      { IndividualId: 'apos-2', FirstName: 'Dina', LastName: "D'Angelo", Email: "d'angelo+vip@example.com" },
      { IndividualId: 'apos-3', FirstName: 'José', LastName: 'Núñez', Email: 'josé@example.com' },
      { IndividualId: 'apos-4', FirstName: 'Aoife', LastName: 'O\u2019Connor', Email: 'o\u2019connor@example.com' },
      { IndividualId: 'apos-5', FirstName: 'Back', LastName: 'Slash\\', Email: 'back\\slash@example.com' },
    ];
    beforeAll(() => {
      d.sandbox.sim.data.addUnifiedIndividuals(apostrophes);
      d.sandbox.sim.data.seedEngagement([apostrophes[0]!], 3);
    });

    it.each(apostrophes)('reads the profile of $Email', async (person) => {
      const before = d.queries();
      const { status, body } = await get(`/api/v1/playbook/profiles/${encodeURIComponent(person.Email)}?maxAgeSeconds=0`);
      expect(status).toBe(200);
      expect(JSON.stringify(body)).toContain(person.IndividualId);
      expect(d.queries()).toBe(before + 1);
      // The literal the platform received: the value with each ' doubled, nothing else changed.
      expect(d.sandbox.sim.data.sqlReceived.at(-1)).toContain(`'${person.Email.replaceAll("'", "''")}'`);
    });

    it('refuses a value a literal cannot carry with a 400 naming the field, and sends nothing', async () => {
      const before = d.queries();
      for (const value of ["O'Brien\u0000", 'O\udc00Brien']) {
        const refused = await post('/api/v1/playbook/data/records', { filters: [{ column: 'LastName', op: 'eq', value: 'ok' }, { column: 'LastName', op: 'eq', value }] });
        expect(refused.status).toBe(400);
        expect(refused.body.errors).toEqual([expect.objectContaining({ path: expect.stringMatching(/^filters\.1\.value/) as unknown, message: expect.stringMatching(/control character|lone surrogate/) as unknown })]);
      }
      expect(d.queries()).toBe(before);
    });

    it("reads O'Brien's engagement history", async () => {
      const { status, body } = await get(`/api/v1/playbook/data/engagement/${encodeURIComponent("o'brien@example.test")}`);
      expect(status).toBe(200);
      expect((body.events as Array<{ event_id: string }>).map((e) => e.event_id).sort()).toEqual(['seed-apos-1-0', 'seed-apos-1-1', 'seed-apos-1-2']);
    });

    it('filters on names with quotes exactly; values shaped like SQL stay values and match nothing', async () => {
      const obrien = await post('/api/v1/playbook/data/records', { columns: ['IndividualId'], filters: [{ column: 'LastName', op: 'eq', value: "O'Brien" }] });
      expect(obrien.body.records).toEqual([{ IndividualId: 'apos-1' }]);
      const curly = await post('/api/v1/playbook/data/records', { columns: ['IndividualId'], filters: [{ column: 'LastName', op: 'in', value: ['O\u2019Connor', 'Slash\\'] }] });
      expect((curly.body.records as Array<{ IndividualId: string }>).map((r) => r.IndividualId).sort()).toEqual(['apos-4', 'apos-5']);
      for (const value of ["x' OR '1'='1", 'x; DELETE FROM UnifiedIndividual__dlm', 'x -- y', "x' /* y", "O\\'Brien", 'O\uff07Brien', 'O\u02bcBrien']) {
        const before = d.queries();
        const answer = await post('/api/v1/playbook/data/records', { columns: ['IndividualId'], filters: [{ column: 'LastName', op: 'eq', value }] });
        expect(answer.status, value).toBe(200);
        expect(answer.body.records, value).toEqual([]);
        expect(d.queries()).toBe(before + 1);
      }
    });
  });

  it('the OpenAPI document describes the data reads with their schemas', async () => {
    const response = await d.gateway.call('GET', '/api/v1/openapi.json');
    const document = (await response.json()) as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    for (const path of ['/api/v1/playbook/data/records', '/api/v1/playbook/data/aggregates', '/api/v1/playbook/data/engagement/{email}', '/api/v1/playbook/data/writes', '/api/v1/accounts/{accountId}/connections/data/deliveries']) {
      expect(document.paths[path]).toBeDefined();
    }
    for (const schema of ['DataRecordsQuery', 'DataRecordsPage', 'DataAggregateQuery', 'DataAggregateAnswer', 'EngagementHistory', 'RealtimeProfile', 'PlaybookWrites', 'EngagementDeliveries']) {
      expect(document.components.schemas[schema]).toBeDefined();
    }
  });
});
