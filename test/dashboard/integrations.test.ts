import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBillingSimulator, type BillingSimulator } from '../../sandbox/billing-simulator';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';

/**
 * The dashboard's Integrations section in a real browser (headless Chromium) against the local
 * gateway and the billing simulator: absent until the operator enables it, then Connect Account,
 * masked key, Test Connection and its remedy.
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`Dashboard browser test skipped: ${CHROMIUM} not found (.ci/run installs it).`);

describe.skipIf(!hasChromium)('dashboard: Integrations section (browser)', { timeout: 30_000 }, () => {
  let sim: BillingSimulator;
  let gateway: TestGateway;
  let browser: Browser;
  let page: Page;
  let apiKey: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    sim = await startBillingSimulator({ seed: 7 });
    sim.setRateLimit(undefined);
    sim.addSite('acme-test').seedCustomers(5);
    apiKey = generatedKey('test_');
    sim.addApiKey('acme-test', apiKey, { type: 'read-only' });
    gateway = await startTestGateway({ BILLING_BASE_URL_TEMPLATE: `${sim.url}/sites/{site}`, ALLOW_INSECURE_PLATFORM_URLS: 'true' });
    await setIntegrations(false);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await sim?.stop();
  });

  async function setIntegrations(integrationsEnabled: boolean): Promise<void> {
    const response = await gateway.call('PUT', '/api/v1/accounts/acme', { token: await gateway.operatorToken(), body: { name: 'Acme', integrationsEnabled } });
    expect(response.status).toBe(200);
  }

  async function signIn(): Promise<void> {
    await page.goto(gateway.url);
    await page.getByLabel('Account id').fill('acme');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Account: Acme' }).waitFor();
  }

  const billing = () => page.locator('#connector-billing');

  async function connectBilling(siteName: string, key: string): Promise<void> {
    const form = page.getByRole('form', { name: 'Connect Account: billing' });
    await form.getByLabel('Site Name').fill(siteName);
    await form.getByLabel('API Key').fill(key);
    await form.getByLabel('Environment').selectOption('test');
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await billing().locator('#billing-result', { hasText: /^Connected/ }).waitFor();
    // The connection shown is the new one: its masked key ends like the key just sent.
    await billing().locator('[data-masked-secret="apiKey"]', { hasText: key.slice(-4) }).waitFor();
  }

  async function testConnection(): Promise<string> {
    await billing().getByRole('button', { name: 'Test Connection' }).click();
    const result = billing().locator('#billing-result', { hasText: /Connection OK|Test failed/ });
    await result.waitFor();
    return (await result.textContent()) ?? '';
  }

  it('an account with Integrations off has no Integrations section, only the line to ask support', async () => {
    await signIn();
    await page.locator('#integrations-off').waitFor();
    expect(await page.locator('#integrations-off').textContent()).toMatch(/support contact/);
    expect(await page.locator('#integrations').count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Integrations' }).count()).toBe(0);
  });

  it('once the operator enables it, the section lists the four connectors', async () => {
    await setIntegrations(true);
    await signIn(); // a reload forgets the in-memory token, so the user signs in again
    await page.locator('#integrations').waitFor();
    expect(await page.locator('#integrations-off').count()).toBe(0);
    expect(await page.locator('#integrations article.connector').count()).toBe(4);
    await billing().getByText('Not connected.').waitFor();
  });

  it('a refused form keeps what was typed and shows each message beside its field, with no “did not answer” banner', async () => {
    const form = page.getByRole('form', { name: 'Connect Account: billing' });
    await form.getByLabel('Site Name').fill('https://acme-test.chargebee.com');
    await form.getByLabel('API Key').fill('test_<your read-only key>');
    await form.getByRole('button', { name: 'Connect Account' }).click();
    const siteError = billing().locator('#billing-siteName-error');
    await siteError.filter({ hasText: /enter acme-test/ }).waitFor();
    expect(await billing().locator('#billing-apiKey-error').textContent()).toMatch(/placeholder \(the part in <…>\)/);
    expect(await form.getByLabel('Site Name').getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('API Key').getAttribute('aria-invalid')).toBe('true');
    // The field's message is announced with it (aria-describedby), and nothing typed was lost.
    expect(await form.getByLabel('API Key').getAttribute('aria-describedby')).toContain('billing-apiKey-error');
    expect(await form.getByLabel('Site Name').inputValue()).toBe('https://acme-test.chargebee.com');
    expect(await form.getByLabel('API Key').inputValue()).toBe('test_<your read-only key>');
    expect(await billing().locator('#billing-result').textContent()).toMatch(/does not match the schema/);
    expect(await page.locator('#status').textContent()).not.toMatch(/did not answer/);
    await billing().getByText('Not connected.').waitFor();
  });

  it('a stale banner goes with the next action', async () => {
    // The gateway unreachable once: the banner says so.
    await page.route('**/connections/billing', (route) => route.abort());
    const form = page.getByRole('form', { name: 'Connect Account: billing' });
    await form.getByLabel('Site Name').fill('acme-test');
    await form.getByLabel('API Key').fill(generatedKey('test_'));
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await page.locator('#status', { hasText: 'The gateway did not answer' }).waitFor();
    await page.unroute('**/connections/billing');
    await billing().getByRole('button', { name: 'Test Connection' }).click();
    await billing().locator('#billing-result', { hasText: /not connected/i }).waitFor();
    expect(await page.locator('#status').textContent()).toBe('');
  });

  it('Connect Account (billing): tested at once; the key shows masked, is in no page HTML; field messages and secrets are cleared', async () => {
    await connectBilling('acme-test', apiKey);
    expect(await billing().locator('#billing-result').textContent()).toMatch(/Connected and tested: healthy/);
    const masked = (await billing().locator('[data-masked-secret="apiKey"]').textContent()) ?? '';
    expect(masked.endsWith(apiKey.slice(-4))).toBe(true);
    expect(masked).not.toContain(apiKey.slice(0, -4));
    expect(await page.content()).not.toContain(apiKey);
    expect(await billing().getByLabel('API Key').inputValue()).toBe('');
    expect(await billing().getByLabel('Site Name').inputValue()).toBe('acme-test');
    expect(await billing().locator('[data-field-error]').allTextContents()).toEqual(['', '', '']);
    expect(await billing().locator('[aria-invalid="true"]').count()).toBe(0);
    // A string, as it runs in the page, whose DOM types this Node project does not load.
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href + document.cookie');
    expect(stored).not.toContain(apiKey);
    await billing().getByText('No sync has run yet.').waitFor();
  });

  it('Test Connection shows healthy for the good key', async () => {
    expect(await testConnection()).toMatch(/Connection OK: healthy/);
    await billing().locator('[data-health="healthy"]').waitFor();
  });

  it('a wrong key: Connect Account and Test Connection show the remedy, and the wrong key is not in the page either', async () => {
    const wrongKey = generatedKey('test_');
    await connectBilling('acme-test', wrongKey);
    expect(await billing().locator('#billing-result').textContent()).toMatch(/its test failed \(needs reconnect\).*verify the API key, or recreate it/i);
    const result = await testConnection();
    expect(result).toMatch(/Test failed/);
    expect(result).toMatch(/verify the API key, or recreate it/i);
    await billing().locator('[data-health="needs_reconnect"]').waitFor();
    expect(await page.content()).not.toContain(wrongKey);
    expect(pageErrors).toEqual([]);
  });

  it('a sync failing on an outage shows when its next try is', async () => {
    await connectBilling('acme-test', apiKey);
    sim.faults.inject({ fault: { kind: 'status', status: 503, retryAfterSeconds: 3600 }, times: 1_000, pathPrefix: '/sites/acme-test/api/v2/customers' });
    try {
      const token = await gateway.userToken('acme');
      expect((await gateway.call('POST', '/api/v1/accounts/acme/connections/billing/syncs', { token, body: { objects: ['customers'] } })).status).toBe(202);
      await gateway.runtime.local.queues.syncJobs.idle();
    } finally {
      sim.faults.clear();
    }
    await signIn();
    const row = billing().locator('tr[data-object="customers"]');
    await row.waitFor();
    expect(await row.textContent()).toMatch(/retrying/);
    const nextTry = await row.locator('[data-next-try]').getAttribute('data-next-try');
    expect(Date.parse(nextTry ?? '') - Date.now()).toBeGreaterThan(3 * 60_000);
    expect(await row.locator('[data-next-try]').textContent()).toMatch(/failed 1 time in a row/);
    expect(pageErrors).toEqual([]);
  });
});
