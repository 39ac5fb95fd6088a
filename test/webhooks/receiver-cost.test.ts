import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as webhookReceiver } from '../../functions/webhook-receiver';
import { useGateway, type Gateway } from '../../shared/gateway';
import { WebhookEventMessage } from '../../shared/queues/messages';
import { WEBHOOK_PASSWORD, WEBHOOK_USERNAME } from '../../shared/webhooks/basic-credentials';
import { forgetOpenedConnections } from '../../shared/webhooks/connection-cache';
import { generatedKey } from '../support/local-runtime';
import { startAwsHarness, webhookRequest, type AwsHarness } from './aws-harness';
import { basicHeader } from './support';
import { storeConnection } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * What one verified webhook costs a receiver in AWS calls, counted at the SDK: the aim is at most
 * 2, and no KMS call once warm. Measured: the first delivery of a cold container reads the origin
 * secret (Secrets Manager, once per container), the first for an account reads the connection
 * (DynamoDB) and opens its secret (KMS); every later one makes only the SQS SendMessage.
 */
let harness: AwsHarness;
let previous: Gateway | undefined;
const signingSecret = generatedKey('whsec_');
const password = generatedKey('pw');
const stripe = new Stripe(generatedKey('sk_test_'));

async function connect(gateway: Gateway, accountId: string, connector: 'payment' | 'billing', credentials: Record<string, string>) {
  const at = new Date().toISOString();
  await store.putAccount(gateway.table, { accountId, name: accountId, integrationsEnabled: true, createdAt: at, updatedAt: at });
  await storeConnection(gateway, { accountId, connector, credentials, syncSettings: { method: 'webhooks' } });
  // Another process sealed them: this receiver starts cold.
  gateway.vault.forget({ accountId, connector });
  forgetOpenedConnections(gateway);
}

beforeAll(async () => {
  harness = await startAwsHarness();
  previous = useGateway(harness.gateway);
  await connect(harness.gateway, 'acme', 'payment', { secretKey: generatedKey('rk_test_'), webhookSigningSecret: signingSecret });
  await connect(harness.gateway, 'acme', 'billing', { apiKey: generatedKey('test_'), [WEBHOOK_USERNAME]: 'acme-webhooks', [WEBHOOK_PASSWORD]: password });
});
afterAll(async () => {
  useGateway(previous);
  await harness.stop();
});

const paymentEvent = (n: number) => {
  const body = JSON.stringify({ id: `evt_cost_${n}`, object: 'event', type: 'customer.updated', created: Math.floor(Date.now() / 1000), data: { object: { id: 'cus_1', object: 'customer' } } });
  return webhookRequest('/webhooks/payments', 'acme', body, { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: signingSecret }) });
};
const billingEvent = (n: number) =>
  webhookRequest('/webhooks/billing', 'acme', JSON.stringify({ id: `ev_cost_${n}`, object: 'event', event_type: 'customer_changed', occurred_at: 1, content: { customer: { id: 'c1' } } }), {
    authorization: basicHeader('acme-webhooks', password),
  });

describe('AWS calls per verified webhook at the receiver', () => {
  it('payments: 4 on a cold container’s first delivery (origin secret, read, decrypt, send), then 1 (send) and no KMS or Secrets Manager call', async () => {
    harness.coldStart();
    harness.reset();
    expect(await webhookReceiver(paymentEvent(0))).toMatchObject({ statusCode: 200 });
    expect(harness.calls()).toEqual({ dynamodb: 1, kms: 1, sqs: 1, secretsManager: 1 });
    harness.reset();
    for (let n = 1; n <= 20; n += 1) expect(await webhookReceiver(paymentEvent(n))).toMatchObject({ statusCode: 200 });
    expect(harness.calls()).toEqual({ dynamodb: 0, kms: 0, sqs: 20, secretsManager: 0 });
  });

  it('billing: the same', async () => {
    harness.coldStart();
    harness.reset();
    expect(await webhookReceiver(billingEvent(0))).toMatchObject({ statusCode: 200 });
    expect(harness.calls()).toEqual({ dynamodb: 1, kms: 1, sqs: 1, secretsManager: 1 });
    harness.reset();
    for (let n = 1; n <= 20; n += 1) expect(await webhookReceiver(billingEvent(n))).toMatchObject({ statusCode: 200 });
    expect(harness.calls()).toEqual({ dynamodb: 0, kms: 0, sqs: 20, secretsManager: 0 });
  });

  it('a refused delivery enqueues nothing; one with no signature reads and opens nothing: its one AWS call counts the refusal (shared/history)', async () => {
    harness.reset();
    const unsigned = paymentEvent(99);
    delete (unsigned.headers as Record<string, string>)['stripe-signature'];
    expect(await webhookReceiver(unsigned)).toMatchObject({ statusCode: 400 });
    expect(harness.calls()).toEqual({ dynamodb: 1, kms: 0, sqs: 0, secretsManager: 0 });
    const forged = paymentEvent(100);
    (forged.headers as Record<string, string>)['stripe-signature'] = stripe.webhooks.generateTestHeaderString({ payload: forged.body!, secret: generatedKey('whsec_') });
    expect(await webhookReceiver(forged)).toMatchObject({ statusCode: 400 });
    expect(harness.calls().sqs).toBe(0);
  });
});

describe('what the receiver puts on the queue', () => {
  const signed = (body: string) =>
    webhookRequest('/webhooks/payments', 'acme', body, { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: signingSecret }) });

  it('the platform’s event exactly as sent (spacing, escapes, number forms kept), in a message the worker reads', async () => {
    // Serializing the parsed event again would change every one of these.
    const body = `{ "id": "evt_raw_1", "object": "event", "type": "customer.updated",\n  "created": ${Math.floor(Date.now() / 1000)}, "livemode": false,\n  "data": { "object": { "id": "cus_1", "object": "customer", "name": "Ren\\u00e9", "balance": 1.0, "limit": 1e3 } } }`;
    harness.reset();
    expect(await webhookReceiver(signed(body))).toMatchObject({ statusCode: 200 });
    const [sent] = harness.sentBodies();
    expect(sent).toContain(`,"payload":${body}}`);
    const message = WebhookEventMessage.parse(JSON.parse(sent!));
    expect(message).toMatchObject({ accountId: 'acme', connector: 'payment', eventId: 'evt_raw_1', eventType: 'customer.updated' });
    expect(message.payload).toEqual(JSON.parse(body));
  });

  it('re-serialized only when something is taken out: a payment intent’s client_secret never waits in the queue', async () => {
    const clientSecret = `pi_9_secret_${'s'.repeat(24)}`;
    const body = JSON.stringify({
      id: 'evt_raw_2',
      object: 'event',
      type: 'payment_intent.succeeded',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'pi_9', object: 'payment_intent', amount: 500, client_secret: clientSecret } },
    });
    harness.reset();
    expect(await webhookReceiver(signed(body))).toMatchObject({ statusCode: 200 });
    const [sent] = harness.sentBodies();
    expect(sent).not.toContain(clientSecret);
    expect(WebhookEventMessage.parse(JSON.parse(sent!)).payload).toEqual({ ...JSON.parse(body), data: { object: { id: 'pi_9', object: 'payment_intent', amount: 500 } } });
  });
});
