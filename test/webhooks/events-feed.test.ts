import { readFileSync } from 'node:fs';
import type * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { responseForError } from '../../shared/api/http';
import { createRouter } from '../../shared/api/router';
import { apiRoutes } from '../../shared/api/routes/index';
import { PLAYBOOK_EVENT_DATA, PLAYBOOK_EVENT_TYPES, playbookEvent } from '../../shared/events/playbook-events';
import { EventBridgePublisher } from '../../shared/events/event-bridge-publisher';
import { useAwsStandIn } from '../support/use-aws-stand-in';
import type { Gateway } from '../../shared/gateway';
import { startWebhookWorld, type WebhookWorld } from './support';

/** The recent-events feed at /api/v1, and the published schema against its documentation. */
let world: WebhookWorld;
let secret: string;

beforeAll(async () => {
  world = await startWebhookWorld();
  secret = (await world.connectPayment('acme'))!;
  const globexSecret = (await world.connectPayment('globex'))!;
  const { record: customer, events: created } = world.payment.createCustomer({ email: 'feed@example.com' });
  const { events: started } = world.payment.createSubscription(customer.id);
  for (const event of [...created, ...started]) {
    await world.payment.deliverWebhook({ url: world.paymentUrl('acme'), event, secret, retries: 0 });
    await world.settle();
  }
  await world.payment.deliverWebhook({ url: world.paymentUrl('globex'), event: world.payment.createCustomer().events[0]!, secret: globexSecret, retries: 0 });
  await world.settle();
});
afterAll(() => world.stop());

describe('GET /api/v1/accounts/{accountId}/events', () => {
  it("answers the account's events, newest first, by type, up to a limit", async () => {
    const token = await world.gateway.userToken('acme');
    const all = (await (await world.gateway.call('GET', '/api/v1/accounts/acme/events', { token })).json()) as { events: Array<{ type: string; accountId: string }> };
    expect(all.events.map((e) => e.type)).toEqual(['subscription.created', 'customer.created']);
    expect(all.events.every((e) => e.accountId === 'acme')).toBe(true);
    const filtered = (await (await world.gateway.call('GET', '/api/v1/accounts/acme/events?type=customer.created', { token })).json()) as { events: unknown[] };
    expect(filtered.events).toHaveLength(1);
    const limited = (await (await world.gateway.call('GET', '/api/v1/accounts/acme/events?limit=1', { token })).json()) as { events: Array<{ type: string }> };
    expect(limited.events.map((e) => e.type)).toEqual(['subscription.created']);
    expect((await world.gateway.call('GET', '/api/v1/accounts/acme/events?limit=0', { token })).status).toBe(400);
    expect((await world.gateway.call('GET', '/api/v1/accounts/acme/events?type=payout.paid', { token })).status).toBe(400);
  });

  it("is the account's own: another account's user gets 404", async () => {
    const response = await world.gateway.call('GET', '/api/v1/accounts/acme/events', { token: await world.gateway.userToken('globex') });
    expect(response.status).toBe(404);
  });

  it('answers 501 in AWS, pointing at EventBridge', async () => {
    const local = world.gateway.runtime.local.gateway;
    const aws: Gateway = { ...local, events: { publish: async () => {} } };
    const dispatch = createRouter(apiRoutes(), { gateway: () => aws });
    // The router throws its refusals; the handler engine answers them (as responseForError does here).
    const response = await dispatch({
      method: 'GET',
      path: '/api/v1/accounts/acme/events',
      headers: {},
      query: {},
      rawBody: Buffer.alloc(0),
      requestId: 'aws-feed',
      claims: { sub: 'user-1', 'custom:account_id': 'acme', token_use: 'id' },
    }).catch(responseForError);
    expect(response.status).toBe(501);
    expect(JSON.parse(response.body).remedy).toContain('EventBridge rule');
  });
});

describe('the published schema', () => {
  const docs = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');

  it('is documented: every type, and every field of every data part', () => {
    for (const type of PLAYBOOK_EVENT_TYPES) expect(docs).toContain(`| \`${type}\` |`);
    const fields = new Set<string>();
    const collect = (schema: z.core.$ZodType) => {
      const shape = (schema as unknown as { shape?: Record<string, z.core.$ZodType> }).shape;
      for (const [name, field] of Object.entries(shape ?? {})) {
        fields.add(name);
        // What classic's unwrap() gave: an optional's inner type, a lazy's schema.
        const def = field._zod.def as { innerType?: z.core.$ZodType; getter?: () => z.core.$ZodType };
        const inner = def.innerType ?? def.getter?.() ?? field;
        if ((inner as unknown as { shape?: unknown }).shape) collect(inner);
      }
    };
    for (const schema of Object.values(PLAYBOOK_EVENT_DATA)) collect(schema);
    expect(fields.size).toBeGreaterThan(30);
    for (const field of fields) expect(docs, field).toContain(`\`${field}\``);
  });

  it('is what the gateway published', () => {
    for (const event of world.published) {
      expect(() => playbookEvent({ ...event, type: event.type as (typeof PLAYBOOK_EVENT_TYPES)[number] })).not.toThrow();
    }
    expect(world.published.length).toBeGreaterThan(0);
  });

  it('drops what it does not document, and refuses what lacks a documented field', () => {
    const base = { id: 'payment:evt_1', type: 'customer.created' as const, accountId: 'acme', source: 'payment' as const, occurredAt: new Date(0).toISOString() };
    const event = playbookEvent({ ...base, data: { platformEventId: 'evt_1', platformEventType: 'customer.created', customer: { id: 'cus_1', secretNote: 'x' }, extra: 1 } });
    expect(event.data).toEqual({ platformEventId: 'evt_1', platformEventType: 'customer.created', customer: { id: 'cus_1' } });
    expect(() => playbookEvent({ ...base, type: 'subscription.created', data: { platformEventId: 'evt_1', platformEventType: 'x', customer: { id: 'c' } } })).toThrow();
  });
});

describe('on EventBridge', () => {
  const standIn = useAwsStandIn();
  it('goes to the gateway bus with the platform as source and the type as detail-type', async () => {
    const event = world.published.find((e) => e.type === 'subscription.created')!;
    await new EventBridgePublisher('integration-gateway').publish([event]);
    const entry = standIn().events()[0]!;
    expect(entry).toMatchObject({ EventBusName: 'integration-gateway', Source: 'integration-gateway.payment', DetailType: 'subscription.created' });
    expect(JSON.parse(String(entry.Detail))).toEqual(event);
  });
});
