import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/local-runtime';

/**
 * What the dashboard reads to draw itself: each connector's forms as JSON Schema with the spec's labels and
 * secrets marked, its OAuth callback address; and, for operators, the list of accounts.
 */
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ BASE_URL: 'https://gateway.example.com' });
});
afterAll(() => gateway.stop());

type Schema = { properties?: Record<string, Record<string, unknown>>; oneOf?: Schema[]; $ref?: string; $defs?: Record<string, Schema> };
interface Description {
  name: string;
  connectionForm: Schema;
  settings: Schema;
  keptOnReconnect: string[];
  capabilities: { callbackUrl?: string; revokesOnDisconnect: boolean; authorizationCode: boolean };
}

/** The form's variants, with the named shape the document refers to. */
function variants(schema: Schema): Schema[] {
  const named = schema.$ref ? schema.$defs![schema.$ref.replace('#/$defs/', '')]! : schema;
  return named.oneOf ?? [named];
}

describe('GET /api/v1/connectors for the dashboard', () => {
  let connectors: Map<string, Description>;
  beforeAll(async () => {
    const answer = await gateway.call('GET', '/api/v1/connectors', { token: await gateway.userToken('acme') });
    expect(answer.status).toBe(200);
    connectors = new Map(((await answer.json()) as { connectors: Description[] }).connectors.map((c) => [c.name, c]));
  });

  it("labels every field of every form with the spec's words, and marks each secret write-only", () => {
    const secrets = new Map<string, string[]>();
    for (const [name, connector] of connectors) {
      for (const variant of variants(connector.connectionForm)) {
        for (const [field, prop] of Object.entries(variant.properties ?? {})) {
          expect(typeof prop.title, `${name}.${field} has a label`).toBe('string');
          if (prop.writeOnly) secrets.set(name, [...new Set([...(secrets.get(name) ?? []), field])]);
        }
      }
    }
    expect(Object.fromEntries(secrets)).toEqual({
      payment: ['secretKey', 'webhookSigningSecret'],
      billing: ['apiKey'],
      data: ['privateKey', 'clientSecret'],
      messaging: ['clientSecret', 'certificate'],
    });
    const billing = variants(connectors.get('billing')!.connectionForm)[0]!.properties!;
    expect(billing.siteName!.title).toBe('Site Name');
    expect(billing.environment!['x-option-titles']).toEqual({ test: 'Test Mode', live: 'Live Mode' });
    // Not in the spec's table: drawn under Advanced.
    expect(billing.requestsPerMinute!['x-advanced']).toBe(true);
    const data = variants(connectors.get('data')!.connectionForm);
    expect(data.map((v) => v.properties!.authenticationMethod!.title)).toEqual(['JWT bearer (preferred)', 'Authorization code (sign in with the platform)']);
    expect(data[0]!.properties!.privateKey!.contentMediaType).toBe('application/x-pem-file');
  });

  it("labels the sync settings' options in the spec's words", () => {
    const settings = (name: string) => variants(connectors.get(name)!.settings)[0]!.properties!;
    expect(settings('billing').method!['x-option-titles']).toEqual({ api: 'API Direct', webhooks: 'Webhooks', both: 'Both' });
    expect(settings('payment').customerFilter!['x-option-titles']).toEqual({ all: 'All', active_subscriptions: 'Active subscriptions only', by_status: 'By status' });
    expect(settings('payment').subscriptionStatuses!['x-show-when']).toEqual({ customerFilter: ['by_status'] });
    expect(settings('data').frequency!['x-option-titles']).toMatchObject({ real_time: 'Real-time (streaming)' });
    expect(settings('messaging').direction!['x-option-titles']).toEqual({ inbound: 'Inbound only', outbound: 'Outbound only', both: 'Both' });
  });

  it('gives the OAuth callback addresses at the gateway address, and what a reconnect keeps', () => {
    expect(connectors.get('data')!.capabilities.callbackUrl).toBe('https://gateway.example.com/auth/crmdata/callback');
    expect(connectors.get('messaging')!.capabilities.callbackUrl).toBe('https://gateway.example.com/auth/crmmessaging/callback');
    expect(connectors.get('billing')!.capabilities.callbackUrl).toBeUndefined();
    expect(connectors.get('data')!.capabilities.revokesOnDisconnect).toBe(true);
    expect(connectors.get('payment')!.capabilities.revokesOnDisconnect).toBe(false);
    expect(connectors.get('payment')!.keptOnReconnect).toEqual(['webhookSigningSecret']);
  });
});

describe('GET /api/v1/accounts (operators)', () => {
  it('lists the accounts a page at a time, for operators only', async () => {
    const operator = await gateway.operatorToken();
    for (const id of ['beta', 'alpha', 'gamma']) await gateway.enableAccount(id);
    const first = await gateway.call('GET', '/api/v1/accounts?limit=2', { token: operator });
    expect(first.status).toBe(200);
    const page1 = (await first.json()) as { accounts: Array<{ accountId: string }>; nextCursor?: string };
    expect(page1.accounts.map((a) => a.accountId)).toEqual(['alpha', 'beta']);
    const page2 = (await (await gateway.call('GET', `/api/v1/accounts?limit=2&cursor=${page1.nextCursor}`, { token: operator })).json()) as { accounts: Array<{ accountId: string }> };
    expect(page2.accounts.map((a) => a.accountId)).toEqual(['gamma']);

    const user = await gateway.call('GET', '/api/v1/accounts', { token: await gateway.userToken('alpha') });
    expect(user.status).toBe(403);
    const badCursor = await gateway.call('GET', '/api/v1/accounts?cursor=%%%', { token: operator });
    expect(badCursor.status).toBe(400);
  });
});
