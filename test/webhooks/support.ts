import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import type { SyncMethod } from '../../shared/sync/sync-settings';
import { startBillingSimulator, type BillingSimulator, type BillingSite } from '../../sandbox/billing-simulator';
import { startPaymentSimulator, type PaymentSimulator } from '../../sandbox/payment-simulator';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';

/**
 * The whole webhook path on loopback: the local gateway (receivers, in-process webhook queue,
 * event worker, dynalite, local bus) and both platform simulators, which send real-shaped,
 * signed webhooks and answer the worker's record fetches. Keys and secrets are made at run time.
 */
export interface WebhookWorld {
  gateway: TestGateway;
  payment: PaymentSimulator;
  paymentKey: string;
  billing: BillingSimulator;
  site: BillingSite;
  billingKey: string;
  /** Every message the receivers enqueued, in order. */
  enqueued: Array<{ accountId: string; connector: string; eventId: string }>;
  /** Every event published on the local bus. */
  published: GatewayEvent[];
  paymentUrl(accountId: string): string;
  billingUrl(accountId: string): string;
  /** Connects the payment connector (with a fresh signing secret unless `signingSecret: null`) and sets the sync method. */
  connectPayment(accountId: string, options?: { method?: SyncMethod; signingSecret?: string | null; dataObjects?: string[] }): Promise<string | undefined>;
  /** Connects the billing connector, sets the sync method, and creates webhook credentials through the API. */
  connectBilling(accountId: string, options?: { method?: SyncMethod; credentials?: boolean }): Promise<{ username: string; password: string } | undefined>;
  setMethod(accountId: string, connector: 'payment' | 'billing', method: SyncMethod, dataObjects?: string[]): Promise<void>;
  /** Waits until the webhook queue is drained (applied, or dead-lettered). */
  settle(): Promise<void>;
  /** Every item in the table, unmarshalled. */
  tableItems(): Promise<Array<Record<string, unknown>>>;
  stop(): Promise<void>;
}

export async function startWebhookWorld(env: Record<string, string> = {}): Promise<WebhookWorld> {
  const payment = await startPaymentSimulator({ seed: 5 });
  const paymentKey = generatedKey('rk_test_');
  payment.addApiKey(paymentKey, { access: 'read' });
  payment.setRateLimit(undefined);
  const billing = await startBillingSimulator({ seed: 5 });
  const site = billing.addSite('acme-test');
  const billingKey = `test_${randomBytes(12).toString('hex')}`;
  billing.addApiKey('acme-test', billingKey, { type: 'read-only' });
  billing.setRateLimit(undefined);

  const gateway = await startTestGateway({
    PAYMENT_API_BASE_URL: payment.url,
    BILLING_BASE_URL_TEMPLATE: `${billing.url}/sites/{site}`,
    ALLOW_INSECURE_PLATFORM_URLS: 'true',
    ...env,
  });
  const local = gateway.runtime.local;
  const enqueued: WebhookWorld['enqueued'] = [];
  const send = local.queues.webhookEvents.send.bind(local.queues.webhookEvents);
  local.queues.webhookEvents.send = async (messages) => {
    for (const message of messages) enqueued.push({ accountId: message.accountId, connector: message.connector, eventId: message.eventId });
    return send(messages);
  };
  const published: GatewayEvent[] = [];
  local.bus.subscribe((event) => published.push(event));

  const world: WebhookWorld = {
    gateway,
    payment,
    paymentKey,
    billing,
    site,
    billingKey,
    enqueued,
    published,
    paymentUrl: (accountId) => `${gateway.url}/webhooks/payments?account=${accountId}`,
    billingUrl: (accountId) => `${gateway.url}/webhooks/billing?account=${accountId}`,
    // Connected with ?test=false: no first sync runs behind the webhooks these tests deliver (the
    // connection is made to receive them, and a sync writing the same records would blur what they show).
    async connectPayment(accountId, options = {}) {
      await gateway.enableAccount(accountId);
      const signingSecret = options.signingSecret === null ? undefined : (options.signingSecret ?? generatedKey('whsec_'));
      const response = await gateway.call('PUT', `/api/v1/accounts/${accountId}/connections/payment?test=false`, {
        token: await gateway.userToken(accountId),
        body: { secretKey: paymentKey, ...(signingSecret ? { webhookSigningSecret: signingSecret } : {}) },
      });
      if (response.status !== 200) throw new Error(`connect payment: ${response.status} ${await response.text()}`);
      await world.setMethod(accountId, 'payment', options.method ?? 'webhooks', options.dataObjects);
      return signingSecret;
    },
    async connectBilling(accountId, options = {}) {
      await gateway.enableAccount(accountId);
      const token = await gateway.userToken(accountId);
      const response = await gateway.call('PUT', `/api/v1/accounts/${accountId}/connections/billing?test=false`, {
        token,
        body: { siteName: 'acme-test', apiKey: billingKey, environment: 'test' },
      });
      if (response.status !== 200) throw new Error(`connect billing: ${response.status} ${await response.text()}`);
      await world.setMethod(accountId, 'billing', options.method ?? 'webhooks');
      if (options.credentials === false) return undefined;
      const created = await gateway.call('POST', `/api/v1/accounts/${accountId}/connections/billing/webhook-credentials`, { token });
      if (created.status !== 201) throw new Error(`webhook credentials: ${created.status} ${await created.text()}`);
      const body = (await created.json()) as { username: string; password: string };
      return { username: body.username, password: body.password };
    },
    async setMethod(accountId, connector, method, dataObjects) {
      const response = await gateway.call('PUT', `/api/v1/accounts/${accountId}/connections/${connector}/sync-settings`, {
        token: await gateway.userToken(accountId),
        body: { method, frequency: 'daily', ...(dataObjects ? { dataObjects } : {}) },
      });
      if (response.status !== 200) throw new Error(`sync settings: ${response.status} ${await response.text()}`);
    },
    settle: () => local.queues.webhookEvents.idle(),
    async tableItems() {
      const scan = await local.dynamo.client.send(new ScanCommand({ TableName: local.dynamo.tableName }));
      return (scan.Items ?? []).map((item) => unmarshall(item));
    },
    async stop() {
      await gateway.stop();
      await payment.stop();
      await billing.stop();
    },
  };
  return world;
}

/** Items that a webhook leaves behind: event marks and synced records (never connections or accounts). */
export function webhookTraces(items: Array<Record<string, unknown>>, accountId: string): Array<Record<string, unknown>> {
  return items.filter(outsideHistory).filter((item) => {
    const pk = String(item.pk);
    const sk = String(item.sk);
    return (pk === `ACCOUNT#${accountId}` && sk.startsWith('EVENT#')) || pk.startsWith(`ACCOUNT#${accountId}#`);
  });
}

export function basicHeader(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** Not a history counter (shared/history counts refused deliveries too: test/history/history-api.test.ts checks those). */
export function outsideHistory(item: Record<string, unknown>): boolean {
  return !String(item.pk).includes('#HISTORY#');
}
