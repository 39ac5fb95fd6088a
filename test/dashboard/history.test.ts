import Stripe from 'stripe';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketOf } from '../../shared/history/history-decisions';
import * as history from '../../shared/history/history-store';
import type { Table } from '../../shared/store/table-access';
import { generatedKey } from '../support/local-runtime';
import { startSandboxGateway, type SandboxGateway } from '../support/sandbox-gateway';
import { storeConnection } from '../support/stored-connection';
import { expectAccessible, hasChromium, launchChromium, screenshotOf, signedInPage } from './browser';
import * as store from '../../shared/store/store';

/**
 * The connector page's history views in Chromium against `npm start`'s gateway: sync runs (paged, charted),
 * webhook deliveries per hour with the last refusals, conversations per day, and one event opened as JSON.
 * Weeks of history cannot happen in a test, so the past is written through the gateway's own history store
 * (the same calls the sync job, receivers and conversation events make: test/history covers those end to end);
 * this hour's deliveries are real ones, signed with the platform's SDK and sent to the receiver.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const stripe = new Stripe(generatedKey('sk_test_'));

describe.skipIf(!hasChromium)('dashboard history (browser)', { timeout: 60_000 }, () => {
  let gateway: SandboxGateway;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const signingSecret = generatedKey('whsec_');

  beforeAll(async () => {
    [gateway, browser] = await Promise.all([startSandboxGateway(), launchChromium()]);
    const local = gateway.runtime.local.gateway;
    const at = new Date().toISOString();
    await store.putAccount(local.table, { accountId: 'acme', name: 'Acme', integrationsEnabled: true, createdAt: at, updatedAt: at });
    await storeConnection(local, {
      accountId: 'acme',
      connector: 'payment',
      credentials: { secretKey: gateway.keys.paymentRestrictedKey, webhookSigningSecret: signingSecret },
      syncSettings: { dataObjects: ['customers', 'charges', 'subscriptions'], frequency: 'daily', method: 'both' },
    });
    await seedPast(local.table, Date.now());
    await deliverNow();
    page = await signedInPage(browser, gateway.url, 'acme', pageErrors);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
  });

  /** Ten nights of runs of three objects; one night slow, one failed. */
  async function seedPast(table: Table, now: number): Promise<void> {
    const night = Math.floor(now / DAY) * DAY + 2 * HOUR;
    for (let d = 10; d >= 1; d -= 1) {
      for (const [i, object] of ['customers', 'charges', 'subscriptions'].entries()) {
        const startedAt = new Date(night - d * DAY + i * 60_000);
        const slow = d === 4 && object === 'charges';
        const failed = d === 2 && object === 'subscriptions';
        const seconds = slow ? 210 : 20 + ((d * 7 + i * 5) % 25);
        await history.recordSyncRun(table, {
          accountId: 'acme',
          connector: 'payment',
          object,
          startedAt: startedAt.toISOString(),
          status: failed ? 'failed' : 'finished',
          at: new Date(startedAt.getTime() + seconds * 1000),
          mode: d === 10 ? 'full' : 'incremental',
          trigger: 'daily',
          added: { requests: slow ? 64 : 3 + i, retries: slow ? 11 : 0, pages: slow ? 52 : 3 + i },
          counts: { created: d === 10 ? 400 + i * 100 : (d * 3 + i) % 9, updated: slow ? 4800 : (d * 5 + i) % 30, deleted: d % 3 },
          ...(failed ? { error: { reason: 'The payment platform refused the key (401).', remedy: 'Create a new restricted key with read access and reconnect.' } } : {}),
        });
      }
    }
    for (let h = 7 * 24 - 1; h >= 1; h -= 1) {
      const at = now - h * HOUR;
      await history.countDelivery(table, 'acme', 'payment', at, { verified: 2 + ((h * 7) % 9), duplicates: h % 11 === 0 ? 1 : 0 });
    }
    // A secret rotated on the platform but not here: an afternoon of refused signatures, then fixed.
    const afternoon = Math.floor((now - 30 * HOUR) / HOUR) * HOUR;
    for (let n = 0; n < 6; n += 1) await history.countDelivery(table, 'acme', 'payment', afternoon + n * 600_000, { refused: 'signature' });
    await history.countDelivery(table, 'acme', 'payment', now - 50 * HOUR, { refused: 'timestamp' });

    const today = Math.floor(now / DAY) * DAY;
    for (let d = 13; d >= 0; d -= 1) {
      const day = new Date(today - d * DAY).toISOString().slice(0, 10);
      const started = 6 + ((d * 5) % 9);
      await history.countConversations(table, 
        { accountId: 'acme', day, started, handedOff: Math.floor(started / 3), ended: started - 1 - (d % 2), expired: d % 4 === 0 ? 1 : 0 },
        Array.from({ length: started - 2 }, (_, i) => bucketOf(20 + ((i * 37 + d * 11) % 160))),
      );
    }
    for (let n = 0; n < 3; n += 1) await store.reserveLiveSlot(gateway.runtime.local.gateway.table, 'acme', 10);
  }

  /** This hour: a real signed delivery (applied and published), the same one again, and one with a wrong signature. */
  async function deliverNow(): Promise<void> {
    const created = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      id: 'evt_history_1',
      object: 'event',
      type: 'customer.created',
      created,
      data: { object: { id: 'cus_history_1', object: 'customer', email: 'jo@example.com', name: 'Jo Doe', created, metadata: {} } },
    });
    const post = (secret: string) =>
      fetch(`${gateway.url}/webhooks/payments?account=acme`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }) },
        body,
      });
    expect((await post(signingSecret)).status).toBe(200);
    await gateway.runtime.local.queues.webhookEvents.idle();
    expect((await post(signingSecret)).status).toBe(200);
    expect((await post(generatedKey('whsec_'))).status).toBe(400);
    await gateway.runtime.local.queues.webhookEvents.idle();
  }

  async function open(connector: string): Promise<void> {
    await page.goto(`${gateway.url}/#/accounts/acme/connectors/${connector}`);
    await page.locator('#history').waitFor();
  }

  it('sync history: every run newest first, paged, charted; a slow night and a failure stand out', async () => {
    await open('payment');
    const card = page.locator('#sync-history');
    await card.locator('table tbody tr').first().waitFor();
    expect(await card.locator('table tbody tr').count()).toBe(25);
    const first = card.locator('table tbody tr').first();
    expect(await first.locator('td').nth(1).textContent()).toMatch(/Subscriptions/);
    const failed = card.locator('tr[data-status="failed"]');
    expect(await failed.count()).toBe(1);
    expect(await failed.textContent()).toMatch(/What to do: Create a new restricted key/);
    const durationChart = card.getByRole('img', { name: /Duration of each run/ });
    await durationChart.waitFor();
    expect(await card.locator('figcaption').first().textContent()).toMatch(/Slowest: Charges .*3 min 30 s/);
    expect(await durationChart.locator('rect.bar').count()).toBe(25);
    // The failed run is marked on the chart, and says why in its bar's title.
    expect(await durationChart.locator('circle.flag').count()).toBe(1);
    expect(await durationChart.locator('g', { has: page.locator('circle.flag') }).locator('title').textContent()).toMatch(/Subscriptions.*Failed.*refused the key/);
    // Keyboard: the next page comes from the button, and then every run of the 30 days is there.
    await card.getByRole('button', { name: 'Show older runs' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => card.locator('table tbody tr').count()).toBe(30);
    expect(await card.getByText('That is every run of the last 30 days.').count()).toBe(1);
    expect(await card.getByRole('img', { name: /Duration of each run/ }).locator('rect.bar').count()).toBe(30);
    await expectAccessible(page, 'sync history');
    await screenshotOf(card, 'history-syncs');
  });

  it('webhook deliveries: 7 days per hour, refusals by reason, the last refused with reason and time only', async () => {
    const card = page.locator('#webhook-deliveries');
    const chart = card.getByRole('img', { name: 'Webhook deliveries per hour, last 7 days' });
    await chart.waitFor();
    expect(await chart.locator('g > title').count()).toBe(7 * 24);
    // The table beside it: the same numbers by day (each hour's are in the bars' titles).
    const days = await card.locator('table tbody tr').count();
    expect(days).toBeGreaterThanOrEqual(7);
    expect(days).toBeLessThanOrEqual(8);
    const summary = await card.locator('figcaption').textContent();
    expect(summary).toMatch(/7 refused \(bad signature 7, too old \(timestamp\) 1\)|8 refused \(bad signature 7, too old \(timestamp\) 1\)/);
    expect(summary).toMatch(/\(1\d? duplicates\)/);
    const last = card.locator('#last-refused li');
    expect(await last.count()).toBe(3);
    expect(await last.first().textContent()).toMatch(/Bad signature/);
    const text = (await card.textContent()) ?? '';
    expect(text).not.toContain(signingSecret);
    expect(text).not.toContain('jo@example.com');
    await expectAccessible(page, 'webhook deliveries');
    await screenshotOf(card, 'history-webhooks');
  });

  it('events: one recent event opens to its JSON, from the keyboard', async () => {
    const card = page.locator('#connector-recent-events');
    const summary = card.locator('summary').first();
    await summary.waitFor();
    expect(await summary.textContent()).toMatch(/customer\.created/);
    await summary.focus();
    await page.keyboard.press('Enter');
    const json = card.getByRole('region', { name: /customer\.created as JSON/ }).or(card.locator('details[open] pre'));
    await json.first().waitFor();
    const shown = JSON.parse((await card.locator('details[open] pre').textContent()) ?? '{}') as Record<string, unknown>;
    expect(shown).toMatchObject({ type: 'customer.created', source: 'payment', accountId: 'acme', id: 'payment:evt_history_1' });
    await expectAccessible(page, 'recent events with one open');
    await screenshotOf(card, 'history-event-json');
  });

  it('conversations: per day, the live count and the median time to the first agent message', async () => {
    await open('messaging');
    const card = page.locator('#conversation-stats');
    await card.getByRole('img', { name: 'Conversations started and handed off per day' }).waitFor();
    expect(await card.locator('dd[data-count="live"]').textContent()).toBe('3');
    expect(await card.locator('dd[data-count="median"]').textContent()).toMatch(/^\d+ s$|^\d+ min( \d+ s)?$/);
    expect(await card.locator('table tbody tr').count()).toBe(14);
    expect(await card.locator('dd[data-count="started"]').textContent()).toMatch(/^\d+$/);
    expect(await page.locator('#sync-history').count()).toBe(0);
    await expectAccessible(page, 'conversation stats');
    await screenshotOf(card, 'history-conversations');
    expect(pageErrors).toEqual([]);
  });
});
