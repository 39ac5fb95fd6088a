import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startCrmSimulator, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import type { UnifiedIndividual } from '../../sandbox/data-simulator';
import { bearer, jwtBearerToken, postForm, postJson, rsaKeyPair, type KeyPair } from './crm-fixtures';

const EXCHANGE_GRANT = 'urn:salesforce:grant-type:external:cdp';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

let crm: RunningCrmSimulator;
let keys: KeyPair;
let seeded: UnifiedIndividual[];
/** A data-platform token for an app with query and ingest scopes. */
let dataToken: string;

interface QueryAnswer {
  data: Array<Array<string | number | null>>;
  metadata: Record<string, { type: string; placeInOrder: number; typeCode: number }>;
  rowCount: number;
  done: boolean;
  nextBatchId?: string;
  queryId: string;
  startTime: string;
  endTime: string;
}

async function identityToken(clientId: string, username: string): Promise<string> {
  return (await jwtBearerToken(crm, keys.privateKey, clientId, username)).access_token;
}

async function exchange(subjectToken: string, extra: Record<string, string> = {}): Promise<Response> {
  return postForm(`${crm.url}/services/a360/token`, {
    grant_type: EXCHANGE_GRANT,
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN_TYPE,
    ...extra,
  });
}

async function dataTokenFor(clientId: string, username = 'data-user@example.com'): Promise<string> {
  const response = await exchange(await identityToken(clientId, username));
  return ((await response.json()) as { access_token: string }).access_token;
}

async function query(sql: string, token = dataToken): Promise<{ status: number; body: QueryAnswer }> {
  const response = await postJson(`${crm.url}/services/data/v61.0/ssot/queryv2`, { sql }, token);
  return { status: response.status, body: (await response.json()) as QueryAnswer };
}

async function ingest(body: unknown, token = dataToken, object = 'engagement_event'): Promise<Response> {
  return postJson(`${crm.url}/api/v1/ingest/sources/gateway_events/${object}`, body, token);
}

function engagementEvent(index: number): Record<string, string> {
  return {
    event_id: `evt-${index}`,
    customer_email: `customer${index}@example.com`,
    event_type: 'conversation.ended',
    event_timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, index)).toISOString(),
    conversation_id: `conv-${index}`,
    channel: 'web',
  };
}

beforeAll(async () => {
  crm = await startCrmSimulator();
  keys = await rsaKeyPair();
  crm.identity.registerUser({ username: 'data-user@example.com', hasDataPlatformPermissionSet: true });
  crm.identity.registerUser({ username: 'no-permission@example.com', hasDataPlatformPermissionSet: false });
  const app = {
    clientSecret: randomBytes(16).toString('hex'),
    publicKey: keys.publicKey,
    callbackUrl: 'https://gateway.example/auth/crmdata/callback',
    approvedUsers: ['data-user@example.com', 'no-permission@example.com'],
  };
  crm.identity.registerConnectedApp({ ...app, clientId: 'data-app', scopes: ['api', 'cdp_query_api', 'cdp_ingest_api'] });
  crm.identity.registerConnectedApp({ ...app, clientId: 'profile-only-app', scopes: ['api', 'cdp_profile_api'] });
  seeded = crm.data.seedUnifiedIndividuals(25);
  dataToken = await dataTokenFor('data-app');
});

beforeEach(() => {
  crm.data.batchSize = 49_999;
});

afterAll(async () => {
  await crm.stop();
});

describe('a360 token exchange', () => {
  it('turns an identity token into a data-platform token for a host without scheme', async () => {
    const response = await exchange(await identityToken('data-app', 'data-user@example.com'), { dataspace: 'default' });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: 'Bearer', instance_url: new URL(crm.url).host });
    expect(String(body.instance_url)).not.toContain('://');
    expect(body.issued_token_type).toBeTypeOf('string');
    expect(body.expires_in).toBe(7200);
    expect(body.access_token).toBeTypeOf('string');
  });

  it('accepts the identity token as a Bearer header with no body, as the spec writes it', async () => {
    const token = await identityToken('data-app', 'data-user@example.com');
    const response = await fetch(`${crm.url}/services/a360/token`, { method: 'POST', headers: bearer(token) });
    expect(response.status).toBe(200);
    const dataPlatformToken = ((await response.json()) as { access_token: string }).access_token;
    expect((await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm', dataPlatformToken)).status).toBe(200);
  });

  it('fails for a user without the data platform permission set', async () => {
    const response = await exchange(await identityToken('data-app', 'no-permission@example.com'));
    expect(response.status).toBe(403);
    const body = (await response.json()) as { error: string; error_description: string };
    expect(body.error).toBe('access_denied');
    expect(body.error_description).toMatch(/permission set/);
  });

  it('fails with an invalid subject token', async () => {
    const response = await exchange('00Dnot!a-token');
    expect(response.status).toBe(401);
  });

  it('keeps the two kinds of token apart', async () => {
    const identity = await identityToken('data-app', 'data-user@example.com');
    expect((await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm', identity)).status).toBe(401);
    expect((await fetch(`${crm.url}/services/oauth2/userinfo`, { headers: bearer(dataToken) })).status).toBe(401);
  });
});

describe('query v2', () => {
  it('selects columns with WHERE on a quoted literal, in the platform answer shape', async () => {
    const target = seeded[7] as UnifiedIndividual;
    const { status, body } = await query(`SELECT IndividualId, Email, FirstName FROM UnifiedIndividual__dlm WHERE Email = '${target.Email}'`);
    expect(status).toBe(200);
    expect(body.data).toEqual([[target.IndividualId, target.Email, target.FirstName]]);
    expect(body.metadata).toEqual({
      IndividualId: { type: 'VARCHAR', placeInOrder: 0, typeCode: 12 },
      Email: { type: 'VARCHAR', placeInOrder: 1, typeCode: 12 },
      FirstName: { type: 'VARCHAR', placeInOrder: 2, typeCode: 12 },
    });
    expect(body).toMatchObject({ rowCount: 1, done: true });
    expect(body).not.toHaveProperty('nextBatchId');
    expect(body.queryId).toBeTruthy();
    expect(Date.parse(body.startTime)).not.toBeNaN();
  });

  it('combines conditions with AND and honours LIMIT', async () => {
    const target = seeded[3] as UnifiedIndividual;
    const expected = seeded.filter((p) => p.FirstName === target.FirstName && p.LastName === target.LastName).map((p) => [p.IndividualId]);
    const both = await query(`select IndividualId from UnifiedIndividual where FirstName = '${target.FirstName}' and LastName = '${target.LastName}'`);
    expect(both.body.data).toEqual(expected);

    const limited = await query('SELECT IndividualId FROM UnifiedIndividual__dlm LIMIT 4');
    expect(limited.body.data).toEqual(seeded.slice(0, 4).map((p) => [p.IndividualId]));
  });

  it('counts with COUNT(*), with and without WHERE', async () => {
    const everyone = await query('SELECT IndividualId FROM UnifiedIndividual__dlm');
    expect(everyone.body.data.length).toBeGreaterThanOrEqual(seeded.length);
    const all = await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm');
    expect(all.body.data).toEqual([[everyone.body.data.length]]);
    expect(Object.values(all.body.metadata)[0]).toMatchObject({ placeInOrder: 0 });

    const firstName = (seeded[0] as UnifiedIndividual).FirstName;
    const some = await query(`SELECT COUNT(*) AS total FROM UnifiedIndividual__dlm WHERE FirstName = '${firstName}'`);
    expect(some.body.data).toEqual([[seeded.filter((p) => p.FirstName === firstName).length]]);
    expect(Object.keys(some.body.metadata)).toEqual(['total']);
  });

  it("reads '' inside a literal as one quote", async () => {
    crm.data.addUnifiedIndividuals([{ IndividualId: 'ui-obrien', FirstName: 'Siobhan', LastName: "O'Brien", Email: 'siobhan@example.com' }]);
    const { body } = await query("SELECT IndividualId, LastName FROM UnifiedIndividual__dlm WHERE LastName = 'O''Brien'");
    expect(body.data).toEqual([['ui-obrien', "O'Brien"]]);
  });

  it('answers in batches followed with nextBatchId, forward only', async () => {
    crm.data.batchSize = 10;
    const total = ((await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm')).body.data[0]?.[0] ?? 0) as number;
    const first = await query('SELECT IndividualId FROM UnifiedIndividual__dlm');
    expect(first.body).toMatchObject({ done: false, rowCount: 10 });
    const ids = first.body.data.map((row) => row[0]);

    let next = first.body.nextBatchId;
    let batches = 1;
    const used: string[] = [];
    while (next) {
      used.push(next);
      const response = await fetch(`${crm.url}/services/data/v61.0/ssot/queryv2/${next}`, { headers: bearer(dataToken) });
      expect(response.status).toBe(200);
      const batch = (await response.json()) as QueryAnswer;
      expect(batch.queryId).toBe(first.body.queryId);
      expect(batch.rowCount).toBe(batch.data.length);
      ids.push(...batch.data.map((row) => row[0]));
      next = batch.done ? undefined : batch.nextBatchId;
      batches += 1;
    }
    expect(batches).toBe(Math.ceil(total / 10));
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    expect(ids).toEqual(expect.arrayContaining(seeded.map((p) => p.IndividualId)));

    const again = await fetch(`${crm.url}/services/data/v61.0/ssot/queryv2/${used[0]}`, { headers: bearer(dataToken) });
    expect(again.status).toBe(404);
  });

  it('refuses an unknown object, an unknown column and bad syntax with 400', async () => {
    const unknownObject = await query('SELECT Id FROM Lead__dlm');
    expect(unknownObject.status).toBe(400);
    expect(JSON.stringify(unknownObject.body)).toContain('Lead__dlm');

    const unknownColumn = await query('SELECT Phone FROM UnifiedIndividual__dlm');
    expect(unknownColumn.status).toBe(400);
    expect(JSON.stringify(unknownColumn.body)).toContain('Phone');

    for (const sql of ["SELECT FROM UnifiedIndividual__dlm", "SELECT Email FROM UnifiedIndividual__dlm WHERE Email = 'open", 'SELECT Email UnifiedIndividual__dlm', 'SELECT Email FROM UnifiedIndividual__dlm WHERE Email = Email']) {
      const bad = await query(sql);
      expect(bad.status, sql).toBe(400);
      expect((bad.body as unknown as Array<{ errorCode: string }>)[0]?.errorCode).toBe('INVALID_SQL');
    }
  });

  it('refuses an app without the cdp_query_api scope with 403 naming it', async () => {
    const token = await dataTokenFor('profile-only-app');
    const { status, body } = await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm', token);
    expect(status).toBe(403);
    expect(JSON.stringify(body)).toContain('cdp_query_api');
  });

  it('refuses an expired data-platform token with 401', async () => {
    const token = await dataTokenFor('data-app');
    crm.identity.expireAllTokens();
    const { status, body } = await query('SELECT COUNT(*) FROM UnifiedIndividual__dlm', token);
    expect(status).toBe(401);
    expect(body).toEqual([{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
    dataToken = await dataTokenFor('data-app');
  });
});

describe('streaming ingestion', () => {
  it('accepts up to 200 records with 202 and keeps them', async () => {
    const records = Array.from({ length: 200 }, (_, i) => engagementEvent(i));
    const response = await ingest({ data: records });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: true });
    expect(crm.data.ingested('gateway_events', 'engagement_event')).toEqual(records);
  });

  it('refuses a payload over 200 KB with 413 and keeps nothing', async () => {
    const before = crm.data.ingested('gateway_events', 'large').length;
    const big = { data: [{ ...engagementEvent(1), channel: 'x'.repeat(200 * 1024) }] };
    const response = await ingest(big, dataToken, 'large');
    expect(response.status).toBe(413);
    expect(crm.data.ingested('gateway_events', 'large')).toHaveLength(before);
  });

  it('refuses more than 200 records with 400', async () => {
    const response = await ingest({ data: Array.from({ length: 201 }, (_, i) => engagementEvent(i)) }, dataToken, 'too_many');
    expect(response.status).toBe(400);
    expect(crm.data.ingested('gateway_events', 'too_many')).toEqual([]);
  });

  it('refuses a record missing a required field of the registered schema, naming the field', async () => {
    crm.data.registerIngestionSchema('gateway_events', 'strict_event', ['event_id', 'customer_email', 'event_timestamp']);
    const { customer_email: _dropped, ...incomplete } = engagementEvent(2);
    const response = await ingest({ data: [engagementEvent(1), incomplete] }, dataToken, 'strict_event');
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain('customer_email');
    expect(crm.data.ingested('gateway_events', 'strict_event')).toEqual([]);

    const complete = await ingest({ data: [engagementEvent(1)] }, dataToken, 'strict_event');
    expect(complete.status).toBe(202);
  });

  it('refuses a body that is not {data: [records]}, and a token without cdp_ingest_api', async () => {
    expect((await ingest([engagementEvent(1)])).status).toBe(400);
    const profileOnly = await dataTokenFor('profile-only-app');
    const response = await ingest({ data: [engagementEvent(1)] }, profileOnly);
    expect(response.status).toBe(403);
    expect(JSON.stringify(await response.json())).toContain('cdp_ingest_api');
  });

  it('makes processed engagement events queryable', async () => {
    await ingest({ data: [{ ...engagementEvent(900), customer_email: 'processed@example.com' }] }, dataToken, 'processed_event');
    expect((await query("SELECT COUNT(*) FROM EngagementEvent__dlm WHERE customer_email = 'processed@example.com'")).body.data).toEqual([[0]]);
    expect(crm.data.processIngestion()).toBeGreaterThan(0);
    const { body } = await query("SELECT event_id, channel FROM EngagementEvent__dlm WHERE customer_email = 'processed@example.com'");
    expect(body.data).toEqual([['evt-900', 'web']]);
  });

  it('serves injected faults in the platform error shape', async () => {
    crm.faults.inject({ fault: { kind: 'status', status: 429 }, pathPrefix: '/api/v1/ingest/' });
    const limited = await ingest({ data: [engagementEvent(1)] }, dataToken, 'faulty');
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual([{ message: 'injected 429', errorCode: 'REQUEST_LIMIT_EXCEEDED' }]);
    expect((await ingest({ data: [engagementEvent(1)] }, dataToken, 'faulty')).status).toBe(202);
  });
});
