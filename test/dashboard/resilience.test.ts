import { generateKeyPairSync } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedKey } from '../support/local-runtime';
import { startSandboxGateway, type SandboxGateway } from '../support/sandbox-gateway';
import { expectAccessible, hasChromium, launchChromium, screenshot, signInOnLocalPage } from './browser';
import * as store from '../../shared/store/store';

/**
 * The dashboard when things go wrong: every field refuses what the spec does not allow (beside the field, and
 * nothing is saved), a slow or failing platform shows a clear state and a way out, a session that ends
 * mid-edit keeps the form and asks to sign in again, tokens are refreshed unseen; and the page at 375 px,
 * by keyboard, and signed out.
 */
describe.skipIf(!hasChromium)('dashboard when things go wrong (browser)', { timeout: 60_000 }, () => {
  let gateway: SandboxGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    [gateway, browser] = await Promise.all([startSandboxGateway(), launchChromium()]);
    const operator = await gateway.runtime.local.signIn.issue({ operator: true });
    const created = await fetch(`${gateway.url}/api/v1/accounts/acme`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Acme', integrationsEnabled: true }),
    });
    expect(created.status).toBe(200);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(gateway.url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await signInOnLocalPage(page, { accountId: 'acme' });
    await page.locator('#integrations').waitFor();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
  });

  const outcome = () => page.locator('#connector-outcome');
  const form = (title: string) => page.getByRole('form', { name: `Connect Account: ${title}` });
  async function open(name: string): Promise<void> {
    await page.goto(`${gateway.url}/#/accounts/acme/connectors/${name}`);
    await page.locator('#addresses h2').waitFor();
  }
  async function storedConnection(name: string) {
    return store.getConnection(gateway.runtime.local.gateway.table, 'acme', name);
  }
  /** Submits the form and answers the message shown beside `field`. */
  async function refusal(title: string, button: string, field: string): Promise<string> {
    await form(title).getByRole('button', { name: button }).click();
    const error = form(title).locator(`[data-field="${field}"] .field-error`);
    await expect.poll(async () => (await error.isVisible()) && (await error.textContent())).toBeTruthy();
    return (await error.textContent()) ?? '';
  }
  const pem = (bits: number) => generateKeyPairSync('rsa', { modulusLength: bits }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('billing: each field refuses what the spec does not allow, beside the field, and nothing is saved', async () => {
    await open('billing');
    const billing = form('Billing platform');
    const cases: Array<[field: string, fill: () => Promise<void>, message: RegExp]> = [
      ['environment', async () => billing.getByLabel('Site Name').fill('acme-test'), /Choose the Environment/],
      ['siteName', async () => billing.getByLabel('Site Name').fill(''), /Enter the Site Name/],
      ['siteName', async () => billing.getByLabel('Site Name').fill('acme-test.chargebee.com'), /subdomain only/],
      ['siteName', async () => billing.getByLabel('Site Name').fill('acme_test!'), /letters, digits and dashes/],
      ['apiKey', async () => billing.getByLabel('API Key').fill('short'), /too short/],
      ['requestsPerMinute', async () => billing.getByLabel('Requests per minute').fill('5000'), /3500|less than or equal/],
    ];
    await billing.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
    for (const [field, fill, message] of cases) {
      if (field === 'siteName' || field === 'requestsPerMinute') await billing.getByLabel('Test Mode').check();
      if (field === 'requestsPerMinute') {
        await billing.getByLabel('Site Name').fill('acme-test');
        await billing.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
        await billing.locator('details.advanced summary').click();
      }
      await fill();
      expect(await refusal('Billing platform', 'Connect Account', field), field).toMatch(message);
      expect(await billing.locator(`[data-field="${field}"] [aria-invalid="true"], [data-field="${field}"][aria-invalid="true"]`).count()).toBeGreaterThan(0);
    }
    expect(await storedConnection('billing')).toBeUndefined();
    await expectAccessible(page, 'billing form full of refusals');
  });

  it('payment: a publishable key, a string that is no key, and a signing secret without whsec_ are refused', async () => {
    await open('payment');
    const payment = form('Payment platform');
    await payment.getByLabel('Secret API Key or Restricted Key').fill(generatedKey('pk_live_'));
    expect(await refusal('Payment platform', 'Connect Account', 'secretKey')).toMatch(/publishable key .* cannot read customer data/);
    await payment.getByLabel('Secret API Key or Restricted Key').fill('my key');
    expect(await refusal('Payment platform', 'Connect Account', 'secretKey')).toMatch(/begin with sk_live_ or sk_test_/);
    await payment.getByLabel('Secret API Key or Restricted Key').fill(gateway.keys.paymentRestrictedKey);
    await payment.getByLabel('Webhook Signing Secret').fill('secret_123456789');
    expect(await refusal('Payment platform', 'Connect Account', 'webhookSigningSecret')).toMatch(/begin with whsec_/);
    expect(await storedConnection('payment')).toBeUndefined();
  });

  it('data: client id, private key (garbage, a certificate, 1024 bits), username and login are each refused with why', async () => {
    await open('data');
    const data = form('Data platform');
    const good = async () => {
      await data.getByLabel('Client ID').fill(gateway.keys.data.clientId);
      await data.getByLabel('Username').fill(gateway.keys.data.username);
      await data.getByLabel('Private Key', { exact: true }).fill(pem(2048));
      await data.getByLabel('Production (the login URL)').check();
      await data.getByLabel('US', { exact: true }).check();
    };
    const cases: Array<[string, () => Promise<void>, RegExp]> = [
      ['clientId', () => data.getByLabel('Client ID').fill('abc'), /consumer key: copy it whole/],
      ['privateKey', () => data.getByLabel('Private Key', { exact: true }).fill('not a key'), /whole PEM text/],
      ['privateKey', () => data.getByLabel('Private Key', { exact: true }).fill('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----'), /This is the certificate/],
      ['privateKey', () => data.getByLabel('Private Key', { exact: true }).fill(pem(1024)), /at least 2048 bits/],
      ['username', () => data.getByLabel('Username').fill('integration user'), /shaped like an email address/],
    ];
    for (const [field, fill, message] of cases) {
      await good();
      await fill();
      expect(await refusal('Data platform', 'Connect Account', field), field).toMatch(message);
    }
    // The authorization code method has its own field: a client secret.
    await data.getByLabel('Authorization code (sign in with the platform)').check();
    await data.getByLabel('Client ID').fill(gateway.keys.data.clientId);
    await data.getByLabel('Client Secret').fill('x y');
    expect(await refusal('Data platform', 'Continue to the data platform sign-in', 'clientSecret')).toMatch(/copy it whole|no spaces/);
    expect(await storedConnection('data')).toBeUndefined();
  });

  it('data: a refused sign-in on the platform comes back with the outcome in words, and nothing is saved', async () => {
    const data = form('Data platform');
    await data.getByLabel('Client ID').fill(gateway.keys.data.clientId);
    await data.getByLabel('Client Secret').fill(generatedKey('wrong'));
    await data.getByLabel('Production (the login URL)').check();
    await data.getByLabel('US', { exact: true }).check();
    await data.getByRole('button', { name: 'Continue to the data platform sign-in' }).click();
    await page.waitForURL(/#\/accounts\/acme\/connectors\/data$/);
    await outcome().getByText('Connecting the data platform did not finish.').waitFor();
    expect(await outcome().textContent()).toMatch(/client|secret|credentials/i);
    expect(await storedConnection('data')).toBeUndefined();
    await expectAccessible(page, 'data, refused sign-in');
  });

  it('messaging: a Messaging Platform Key with spaces is refused beside its field', async () => {
    await open('messaging');
    const messaging = form('Messaging platform');
    await messaging.getByLabel('Authorization code (sign in with the platform)').check();
    await messaging.getByLabel('Client ID').fill(gateway.keys.messaging.clientId);
    await messaging.getByLabel('Client Secret').fill(gateway.keys.messaging.clientSecret);
    await messaging.getByLabel('Messaging Platform Key').fill('copied with spaces');
    expect(await refusal('Messaging platform', 'Continue to the messaging platform sign-in', 'messagingPlatformKey')).toMatch(/no spaces/);
  });

  it('settings: choosing no data object is refused beside the field, and nothing changes', async () => {
    await open('billing');
    const billing = form('Billing platform');
    await billing.getByLabel('Site Name').fill(gateway.keys.billingSite);
    await billing.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
    await billing.getByLabel('Test Mode').check();
    await billing.getByRole('button', { name: 'Connect Account' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    // The first sync connecting started, done before the faults below are put in the platform's way.
    await page.locator('#syncs').getByText('Sync finished.').waitFor({ timeout: 45_000 });
    const settings = page.getByRole('form', { name: 'Sync settings: Billing platform' });
    for (const object of ['Customers', 'Subscriptions', 'Invoices', 'Payments']) await settings.getByLabel(object).uncheck();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => settings.locator('[data-field="dataObjects"] .field-error').textContent()).toMatch(/Choose at least one/);
    expect(((await storedConnection('billing'))?.syncSettings as { dataObjects: string[] }).dataObjects).toHaveLength(4);
  });

  it('a slow platform: Test Connection says it is still waiting, and "Stop waiting" gives the page back', async () => {
    gateway.sandbox.simulators.billing!.faults.inject({ fault: { kind: 'slow', delayMs: 9_000 }, times: 1 });
    await page.locator('#test-connection').click();
    await page.getByText('Still waiting for the billing platform').waitFor({ timeout: 10_000 });
    await screenshot(page, 'slow-platform', { fullPage: false });
    await page.getByRole('button', { name: 'Stop waiting' }).click();
    await outcome().getByText('Stopped waiting', { exact: true }).waitFor();
    expect(await page.locator('#test-connection').isEnabled()).toBe(true);
  });

  it('a failing platform: Test Connection shows degraded, the remedy, and a way to try again', async () => {
    gateway.sandbox.simulators.billing!.faults.clear();
    gateway.sandbox.simulators.billing!.faults.inject({ fault: { kind: 'status', status: 503 }, times: 20 });
    await page.locator('#test-connection').click();
    await outcome().getByText('Test Connection failed: degraded').waitFor({ timeout: 30_000 });
    expect(await outcome().textContent()).toMatch(/What to do/);
    await page.locator('.page-header .badge[data-state="degraded"]').waitFor();
    gateway.sandbox.simulators.billing!.faults.clear();
    await outcome().getByRole('button', { name: 'Test Connection' }).click();
    await outcome().getByText('Test Connection succeeded').waitFor();
  });

  it('an ID token that expired is refreshed without the user noticing', async () => {
    await page.evaluate(`document.getElementById('connector-outcome').replaceChildren()`);
    const refreshed = page.waitForRequest((request) => request.url().endsWith('/local/oauth2/token') && (request.postData() ?? '').includes('grant_type=refresh_token'));
    gateway.runtime.local.signIn.expireTokens();
    await page.locator('#test-connection').click();
    await refreshed;
    await outcome().getByText('Test Connection succeeded').waitFor();
    expect(await page.locator('#session-banner').isHidden()).toBe(true);
  });

  it('a session that ends mid-edit keeps the form, asks to sign in again in a small window, then finishes the save', async () => {
    await page.getByRole('button', { name: 'Reconnect with other credentials' }).click();
    const billing = form('Billing platform');
    await billing.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
    await billing.getByLabel('Live Mode').check();
    gateway.runtime.local.signIn.expireSessions();
    const before = (await storedConnection('billing'))!.updatedAt;

    const [popup] = await Promise.all([
      page.waitForEvent('popup'),
      (async () => {
        await billing.getByRole('button', { name: 'Reconnect' }).click();
        await page.locator('#session-banner').waitFor();
        await expectAccessible(page, 'session ended');
        await screenshot(page, 'session-ended', { fullPage: false });
        // Nothing was saved half-way, and what was typed is still there.
        expect((await storedConnection('billing'))!.updatedAt).toBe(before);
        expect(await billing.getByLabel('API Key').inputValue()).toBe(gateway.keys.billingReadOnlyKey);
        expect(await billing.getByLabel('Live Mode').isChecked()).toBe(true);
        await page.getByRole('button', { name: 'Sign in again' }).click();
      })(),
    ]);
    await signInOnLocalPage(popup, { accountId: 'acme' });
    await popup.waitForEvent('close');
    // The save goes on by itself once signed in again.
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    expect(await page.locator('#session-banner').isHidden()).toBe(true);
    expect((await storedConnection('billing'))!.config.environment).toBe('live');
  });

  it('works from 375 px wide: no sideways scrolling of the page, accessible', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 375, height: 812 });
    // A new tab has no tokens: "Sign in" finds the sign-in session and comes straight back.
    await phone.goto(`${gateway.url}/#/accounts/acme/connectors/billing`);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await phone.locator('#addresses h2').waitFor();
    expect(await phone.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await expectAccessible(phone, 'billing at 375 px');
    await screenshot(phone, 'mobile-connector');
    await phone.goto(`${gateway.url}/#/accounts/acme`);
    await phone.locator('#integrations article').nth(3).waitFor();
    expect(await phone.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await expectAccessible(phone, 'account at 375 px');
    await phone.close();
  });

  it('every control is reached by keyboard, with a visible focus', async () => {
    await open('billing');
    const seen = new Set<string>();
    let unfocusedStyle = 0;
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    for (let i = 0; i < 80; i += 1) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate<{ name: string; visible: boolean } | null>(`(() => {
        const el = document.activeElement;
        if (!el || el === document.body) return null;
        const style = getComputedStyle(el);
        const visible = style.boxShadow !== 'none' || (style.outlineStyle !== 'none' && style.outlineWidth !== '0px');
        return { name: (el.getAttribute('aria-label') || el.textContent || el.id || el.getAttribute('name') || el.tagName).trim().slice(0, 60), visible };
      })()`);
      if (!focused) continue;
      seen.add(focused.name);
      if (!focused.visible) unfocusedStyle += 1;
    }
    expect(unfocusedStyle).toBe(0);
    for (const control of ['Skip to content', 'Test Connection', 'Reconnect with other credentials', 'Copy Webhook address', 'Sync now', 'Save settings', 'Disconnect the billing platform', 'Sign out']) {
      expect([...seen], control).toContain(control);
    }
  });

  it('Sign out ends the session: the refresh token is revoked and a reload does not sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the integration gateway' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to the integration gateway' }).waitFor();
    expect(pageErrors).toEqual([]);
  });
});
