import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedKey } from '../support/local-runtime';
import { startSandboxGateway, type SandboxGateway } from '../support/sandbox-gateway';
import { expectAccessible, hasChromium, launchChromium, screenshot, signInOnLocalPage } from './browser';
import * as store from '../../shared/store/store';

/**
 * The dashboard in a real browser against `npm start`'s gateway and sandbox: the operator switches an account
 * on; its user connects each of the four connectors (the OAuth ones through the simulator's authorize page),
 * tests each with a good and a bad credential and reads the remedy, saves settings and sees them after a
 * reload, syncs and watches the counts, copies the addresses, creates and revokes an API key, and disconnects.
 * axe-core checks every view; the pictures go to docs/screenshots/.
 */
describe.skipIf(!hasChromium)('dashboard (browser)', { timeout: 60_000 }, () => {
  let gateway: SandboxGateway;
  let browser: Browser;
  let operatorContext: BrowserContext;
  let userContext: BrowserContext;
  let operator: Page;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    [gateway, browser] = await Promise.all([startSandboxGateway(), launchChromium()]);
    operatorContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    userContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await userContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway.url });
    operator = await operatorContext.newPage();
    page = await userContext.newPage();
    for (const p of [operator, page]) p.on('pageerror', (error) => pageErrors.push(error.message));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
  });

  const outcome = () => page.locator('#connector-outcome');
  const healthIs = (state: string) => page.locator(`.page-header .badge[data-state="${state}"]`).waitFor();
  const connectForm = (title: string) => page.getByRole('form', { name: `Connect Account: ${title}` });

  async function openConnector(name: string): Promise<void> {
    await page.goto(`${gateway.url}/#/accounts/acme/connectors/${name}`);
    await page.locator('#connection form').waitFor({ state: 'attached' });
    await page.locator('#addresses h2').waitFor();
  }

  async function testConnection(): Promise<string> {
    await page.locator('#test-connection').click();
    const result = outcome().locator('h3', { hasText: /^Test Connection (succeeded|failed)/ });
    await result.waitFor();
    return (await outcome().textContent()) ?? '';
  }

  it('the operator signs in, creates an account with Integrations off; its user sees no Integrations section', async () => {
    await operator.goto(gateway.url);
    await expectAccessible(operator, 'welcome');
    await operator.getByRole('button', { name: 'Sign in' }).click();
    await operator.waitForURL(/\/local\/oauth2\/authorize/);
    await expectAccessible(operator, 'sign-in page');
    await screenshot(operator, 'sign-in', { fullPage: false });
    await signInOnLocalPage(operator, { operator: true });
    await operator.getByRole('heading', { name: 'Accounts', exact: true }).waitFor();
    await operator.getByLabel('Account id').fill('acme');
    await operator.getByLabel('Name', { exact: true }).fill('Acme');
    await operator.getByRole('button', { name: 'Create account' }).click();
    await operator.locator('tr[data-account="acme"]').waitFor();
    expect(await operator.getByRole('switch', { name: 'Integrations for Acme' }).getAttribute('aria-checked')).toBe('false');

    await page.goto(gateway.url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await signInOnLocalPage(page, { accountId: 'acme' });
    await page.locator('#integrations-off').waitFor();
    expect(await page.locator('#integrations-off').textContent()).toMatch(/Ask your support contact/);
    expect(await page.locator('#integrations').count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Integrations', exact: true }).count()).toBe(0);
    await expectAccessible(page, 'account, Integrations off');
  });

  it('the operator switches the account on: the user sees the four connectors', async () => {
    await operator.getByRole('switch', { name: 'Integrations for Acme' }).click();
    await operator.locator('tr[data-account="acme"] [role="switch"][aria-checked="true"]').waitFor();
    await expectAccessible(operator, 'accounts');
    await screenshot(operator, 'operator-accounts', { fullPage: false });

    // A reload forgets the tokens (memory only); the sign-in page's session brings the user straight back.
    await page.reload();
    await page.locator('#integrations').waitFor();
    await page.locator('#integrations article.connector-card').nth(3).waitFor();
    expect(await page.locator('#integrations article.connector-card').count()).toBe(4);
    expect(await page.locator('#integrations-off').count()).toBe(0);
    await expectAccessible(page, 'account, Integrations on');
  });

  it('billing: refuses a URL as site name beside the field, connects with the sandbox key, shows it masked, tests healthy', async () => {
    await openConnector('billing');
    const form = connectForm('Billing platform');
    await form.getByLabel('Site Name').fill('https://acme-test.chargebee.com');
    await form.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
    await form.getByRole('button', { name: 'Connect Account' }).click();
    // Environment left unchosen is caught on the page; the site name by the API: both beside their fields.
    await expect.poll(() => form.locator('[data-field="environment"] .field-error').textContent()).toMatch(/Choose the Environment/);
    await form.getByLabel('Test Mode').check();
    await form.getByRole('button', { name: 'Connect Account' }).click();
    const siteError = form.locator('#billing-siteName-error');
    await siteError.waitFor();
    expect(await siteError.textContent()).toContain('The site name is the subdomain only');
    expect(await form.getByLabel('Site Name').getAttribute('aria-invalid')).toBe('true');
    // Nothing was saved, and what was typed is still there (the key too, until it is accepted).
    expect(await form.getByLabel('API Key').inputValue()).toBe(gateway.keys.billingReadOnlyKey);
    await expectAccessible(page, 'billing connect form with a field error');
    await screenshot(page, 'connect-field-error', { fullPage: false });

    await form.getByLabel('Site Name').fill(gateway.keys.billingSite);
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    const masked = page.locator('#connection dd[data-masked-secret="apiKey"]');
    await masked.waitFor();
    expect(await masked.textContent()).toBe(`••••${gateway.keys.billingReadOnlyKey.slice(-4)}`);
    expect(await page.content()).not.toContain(gateway.keys.billingReadOnlyKey);
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href + document.cookie');
    expect(stored).not.toContain(gateway.keys.billingReadOnlyKey);

    // Its test passed, so the first sync started at once, and the Syncs card follows it by itself.
    expect(await outcome().textContent()).toContain('the first sync has started (4 data objects)');
    await page.locator('#syncs').getByText('Sync finished.').waitFor({ timeout: 45_000 });
    const row = (object: string) => page.locator(`#syncs tr[data-object="${object}"]`);
    for (const object of ['customers', 'subscriptions', 'invoices', 'payments']) expect(await row(object).getAttribute('data-state')).toBe('idle');
    // The sandbox site has 200 customers: all created by this first sync.
    expect(await row('customers').locator('[data-count="created"]').textContent()).toBe('200');
    expect(Number(await row('subscriptions').locator('[data-count="created"]').textContent())).toBeGreaterThan(0);

    expect(await testConnection()).toMatch(/Test Connection succeeded/);
    await healthIs('healthy');
  });

  it('billing: a wrong key tests as needs reconnect with the remedy; Reconnect opens the form', async () => {
    const wrongKey = generatedKey('test_');
    await page.getByRole('button', { name: 'Reconnect with other credentials' }).click();
    const form = connectForm('Billing platform');
    // The saved key is shown masked beside its field, never filled in.
    expect(await form.getByLabel('API Key').inputValue()).toBe('');
    await form.locator('[data-masked-secret="apiKey"]').waitFor();
    await form.getByLabel('API Key').fill(wrongKey);
    await form.getByRole('button', { name: 'Reconnect' }).click();
    // Connect Account tested it already: the remedy is shown at once; Test Connection says the same.
    await outcome().getByText('Saved, but Test Connection failed').waitFor();
    expect(await outcome().textContent()).toMatch(/What to do: .*verify the API key, or recreate it/i);
    const text = await testConnection();
    expect(text).toMatch(/Test Connection failed: needs reconnect/);
    expect(text).toMatch(/What to do: .*verify the API key, or recreate it/i);
    await healthIs('needs_reconnect');
    expect(await page.content()).not.toContain(wrongKey);
    await expectAccessible(page, 'billing, failed test');
    await screenshot(page, 'test-connection-remedy', { fullPage: false });

    await outcome().getByRole('button', { name: 'Reconnect' }).click();
    await form.getByLabel('API Key').fill(gateway.keys.billingReadOnlyKey);
    await form.getByRole('button', { name: 'Reconnect' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    expect(await testConnection()).toMatch(/succeeded/);
    await healthIs('healthy');
  });

  it('billing: settings are saved and shown again after a reload', async () => {
    const settings = page.getByRole('form', { name: 'Sync settings: Billing platform' });
    await settings.getByLabel('Hourly').check();
    await settings.getByLabel('Both').check();
    await settings.getByLabel('Active', { exact: true }).check();
    await settings.getByLabel('Payments').uncheck();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByText(/^Saved /).waitFor();

    await page.reload();
    await page.locator('#settings form').waitFor();
    const reloaded = page.getByRole('form', { name: 'Sync settings: Billing platform' });
    expect(await reloaded.getByLabel('Hourly').isChecked()).toBe(true);
    expect(await reloaded.getByLabel('Both').isChecked()).toBe(true);
    expect(await reloaded.getByLabel('Active', { exact: true }).isChecked()).toBe(true);
    expect(await reloaded.getByLabel('Payments').isChecked()).toBe(false);
    expect(await reloaded.getByLabel('Customers').isChecked()).toBe(true);

    // Back to everything, for the sync below.
    await reloaded.getByLabel('Payments').check();
    await reloaded.getByLabel('All', { exact: true }).check();
    await reloaded.getByRole('button', { name: 'Save settings' }).click();
    await reloaded.getByText(/^Saved /).waitFor();
  });

  it('billing: Sync now shows progress by itself until every object has its final counts', async () => {
    await page.locator('#sync-now').click();
    await page.locator('#syncs [data-state="queued"], #syncs [data-state="running"]').first().waitFor();
    await page.locator('#syncs').getByText('Sync finished.').waitFor({ timeout: 45_000 });
    const row = (object: string) => page.locator(`#syncs tr[data-object="${object}"]`);
    for (const object of ['customers', 'subscriptions', 'invoices', 'payments']) expect(await row(object).getAttribute('data-state')).toBe('idle');
    // A full sync (the settings changed the selection), of records the first sync stored when connecting: none created again.
    expect(await row('customers').locator('[data-count="created"]').textContent()).toBe('0');
    expect(await row('customers').locator('td').first().textContent()).toContain('Full');
    await expectAccessible(page, 'billing, synced');
    await screenshot(page, 'connector-billing');
  });

  it('billing: copies the webhook address with the account, and makes Basic credentials shown once', async () => {
    await page.getByRole('button', { name: 'Copy Webhook address' }).click();
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toBe(`${gateway.url}/webhooks/billing?account=acme`);

    await page.locator('#webhook-credentials').click();
    const once = page.locator('#webhook-credentials-once');
    await once.waitFor();
    const password = await once.locator('[data-copy="webhook-password"]').inputValue();
    expect(password.length).toBeGreaterThan(16);
    expect(await once.locator('[data-copy="webhook-username"]').inputValue()).toMatch(/\S+/);
    // The platform sends its webhooks with them (method Both, set above): applied, and published as an event.
    const username = await once.locator('[data-copy="webhook-username"]').inputValue();
    const site = gateway.sandbox.simulators.billing!.site(gateway.keys.billingSite);
    const { record: customer } = site.createCustomer({ email: 'webhook@example.com', first_name: 'Web', last_name: 'Hook' });
    const { events } = site.createSubscription(customer.id);
    const delivered = await gateway.sandbox.simulators.billing!.deliverWebhook({ url: copied, event: events[0]!, basicAuth: { username, password }, retries: 0 });
    expect(delivered).toEqual([200]);
    await once.getByRole('button', { name: 'Done: hide the password' }).click();
    await page.reload();
    await page.locator('#addresses h2').waitFor();
    await page.getByText(/Username .*password ••••/).waitFor();
    expect(await page.content()).not.toContain(password);
  });

  it('payment: a publishable key is refused beside its field; the restricted key tests healthy; a wrong one shows the remedy', async () => {
    await openConnector('payment');
    const form = connectForm('Payment platform');
    expect(await form.getByLabel('API Key', { exact: true }).isChecked()).toBe(true); // the spec's only method
    await form.getByLabel('Secret API Key or Restricted Key').fill(generatedKey('pk_test_'));
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await expect.poll(() => form.locator('#payment-secretKey-error').textContent()).toMatch(/publishable key/);
    await form.getByLabel('Webhook Signing Secret').fill('not-a-secret');
    await form.getByLabel('Secret API Key or Restricted Key').fill(gateway.keys.paymentRestrictedKey);
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await expect.poll(() => form.locator('#payment-webhookSigningSecret-error').textContent()).toMatch(/begin with whsec_/);
    await form.getByLabel('Webhook Signing Secret').fill('');
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    // The first sync the test's pass started reads every object before the key changes below.
    await page.locator('#syncs').getByText('Sync finished.').waitFor({ timeout: 45_000 });
    expect(Number(await page.locator('#syncs tr[data-object="subscriptions"] [data-count="created"]').textContent())).toBeGreaterThan(0);
    expect(await testConnection()).toMatch(/succeeded/);
    await healthIs('healthy');

    await page.getByRole('button', { name: 'Reconnect with other credentials' }).click();
    await form.getByLabel('Secret API Key or Restricted Key').fill(generatedKey('rk_test_'));
    await form.getByRole('button', { name: 'Reconnect' }).click();
    await outcome().getByText('Saved, but Test Connection failed').waitFor();
    expect(await testConnection()).toMatch(/needs reconnect[\s\S]*What to do:/);
    await healthIs('needs_reconnect');
    await outcome().getByRole('button', { name: 'Reconnect' }).click();
    await form.getByLabel('Secret API Key or Restricted Key').fill(gateway.keys.paymentRestrictedKey);
    await form.getByRole('button', { name: 'Reconnect' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    expect(await testConnection()).toMatch(/succeeded/);
  });

  it('payment: "By status" shows the status list; the settings survive a reload; a sync reaches its counts', async () => {
    const settings = page.getByRole('form', { name: 'Sync settings: Payment platform' });
    const statuses = settings.locator('[data-field="subscriptionStatuses"]');
    expect(await statuses.isHidden()).toBe(true);
    await settings.getByLabel('By status').check();
    await statuses.waitFor();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    // Refused by the API ("needs subscriptionStatuses"): beside the list.
    await expect.poll(() => statuses.locator('.field-error').textContent()).toMatch(/subscription status/i);
    await statuses.getByLabel('active', { exact: true }).check();
    await statuses.getByLabel('trialing').check();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByText(/^Saved /).waitFor();
    await page.reload();
    await page.locator('#settings form').waitFor();
    const reloaded = page.getByRole('form', { name: 'Sync settings: Payment platform' });
    expect(await reloaded.getByLabel('By status').isChecked()).toBe(true);
    expect(await reloaded.locator('[data-field="subscriptionStatuses"]').getByLabel('trialing').isChecked()).toBe(true);

    await page.locator('#sync-now').click();
    await page.locator('#syncs').getByText('Sync finished.').waitFor({ timeout: 45_000 });
    const syncs = page.locator('#syncs tbody tr');
    for (const row of await syncs.all()) {
      expect(await row.getAttribute('data-state')).toBe('idle');
      expect(await row.locator('[data-count="created"]').textContent()).toBe('0'); // the first sync stored them when connecting
    }
    await expectAccessible(page, 'payment, synced');
  });

  it('data: JWT bearer with the sandbox key pair tests healthy; a key that matches no certificate shows the remedy', async () => {
    await openConnector('data');
    const form = connectForm('Data platform');
    const keys = gateway.keys.data;
    const fill = async (privateKey: string) => {
      await form.getByLabel('Client ID').fill(keys.clientId);
      await form.getByLabel('Username').fill(keys.username);
      await form.getByLabel('Private Key', { exact: true }).fill(privateKey);
      await form.getByLabel('Production (the login URL)').check();
      await form.getByLabel('US', { exact: true }).check();
    };
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await fill(otherKey);
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await outcome().getByText('Saved, but Test Connection failed').waitFor();
    const failed = await testConnection();
    expect(failed).toMatch(/failed/);
    expect(failed).toMatch(/What to do: The private key must match the certificate uploaded/);

    await page.getByRole('button', { name: 'Reconnect' }).first().click();
    await fill(readFileSync(keys.privateKeyFile, 'utf8'));
    await form.getByRole('button', { name: 'Reconnect' }).click();
    await outcome().getByText('Connected.', { exact: true }).waitFor();
    expect(await testConnection()).toMatch(/succeeded/);
    expect(await page.content()).not.toContain('PRIVATE KEY-----\nMII');
  });

  it('data: the authorization code flow goes through the platform sign-in and back with the outcome', async () => {
    await page.getByRole('button', { name: 'Reconnect with other credentials' }).click();
    const form = connectForm('Data platform');
    await form.getByLabel('Authorization code (sign in with the platform)').check();
    // The method's own fields: a client secret, no private key or username.
    expect(await form.getByLabel('Private Key', { exact: true }).count()).toBe(0);
    await form.getByLabel('Client ID').fill(gateway.keys.data.clientId);
    await form.getByLabel('Client Secret').fill(gateway.keys.data.clientSecret);
    await form.getByLabel('Production (the login URL)').check();
    await form.getByLabel('US', { exact: true }).check();
    await form.getByRole('button', { name: 'Continue to the data platform sign-in' }).click();
    // The simulator's authorize page approves and sends the browser to the gateway's callback, which sends it here.
    await page.waitForURL(/#\/accounts\/acme\/connectors\/data$/);
    await outcome().getByText('Connected to the data platform.').waitFor();
    expect(await outcome().textContent()).toMatch(/Test Connection succeeded/);
    await healthIs('healthy');
    expect(await page.locator('#connection dd', { hasText: 'Authorization code' }).count()).toBe(1);
  });

  it('data: copies the OAuth callback address, downloads the ingestion schema, saves settings', async () => {
    await page.getByRole('button', { name: 'Copy OAuth callback address' }).click();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(`${gateway.url}/auth/crmdata/callback`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download-ingestion-schema').click()]);
    const document = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { openapi: string };
    expect(document.openapi).toMatch(/^3\.0\./);

    // A playbook sends engagement events; the page shows what became of them.
    const token = await gateway.runtime.local.signIn.issue({ accountId: 'acme' });
    const { key } = (await (await fetch(`${gateway.url}/api/v1/accounts/acme/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'engagement' }) })).json()) as { key: string };
    const events = [1, 2, 3].map((n) => ({ event_id: `e${n}`, customer_email: `ann${n}@example.com`, event_type: 'qualified', event_timestamp: new Date().toISOString(), conversation_id: `c${n}`, channel: 'web' }));
    const sent = await fetch(`${gateway.url}/api/v1/playbook/engagement-events`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ events }) });
    expect(sent.status).toBe(202);
    await gateway.runtime.local.queues.ingestion.idle();
    await page.locator('#ingestion').getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => page.locator('#deliveries [data-count="sent"]').textContent()).toBe('3');
    expect(await page.locator('#deliveries [data-count="deadLettered"]').textContent()).toBe('0');

    const settings = page.getByRole('form', { name: 'Sync settings: Data platform' });
    await settings.getByLabel('Read only').check();
    await settings.getByLabel('Query', { exact: true }).check();
    await settings.getByLabel('Engagement', { exact: true }).uncheck();
    await settings.getByLabel('Enabled', { exact: true }).check();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByText(/^Saved /).waitFor();
    await page.reload();
    await page.locator('#settings form').waitFor();
    const reloaded = page.getByRole('form', { name: 'Sync settings: Data platform' });
    expect(await reloaded.getByLabel('Read only').isChecked()).toBe(true);
    expect(await reloaded.getByLabel('Engagement', { exact: true }).isChecked()).toBe(false);
    expect(await reloaded.getByLabel('Enabled', { exact: true }).isChecked()).toBe(true);
    await expectAccessible(page, 'data connector');
    await screenshot(page, 'connector-data');
  });

  it('messaging: a certificate that matches no key shows the remedy; the authorization code flow connects it', async () => {
    await openConnector('messaging');
    const form = connectForm('Messaging platform');
    const keys = gateway.keys.messaging;
    await form.getByLabel('Client ID').fill(keys.clientId);
    await form.getByLabel('Client Secret').fill(keys.clientSecret);
    await form.getByLabel('Username').fill(keys.username);
    await form.getByLabel('Certificate', { exact: true }).fill(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    await form.getByRole('button', { name: 'Connect Account' }).click();
    await outcome().getByText('Saved, but Test Connection failed').waitFor();
    expect(await testConnection()).toMatch(/failed[\s\S]*What to do/);

    await page.getByRole('button', { name: 'Reconnect' }).first().click();
    await form.getByLabel('Authorization code (sign in with the platform)').check();
    expect(await form.getByLabel('Certificate', { exact: true }).count()).toBe(0);
    await form.getByLabel('Client ID').fill(keys.clientId);
    await form.getByLabel('Client Secret').fill(keys.clientSecret);
    await form.getByLabel('Messaging Platform Key').fill(keys.messagingPlatformKey);
    await form.getByRole('button', { name: 'Continue to the messaging platform sign-in' }).click();
    await page.waitForURL(/#\/accounts\/acme\/connectors\/messaging$/);
    await outcome().getByText('Connected to the messaging platform.').waitFor();
    await healthIs('healthy');

    // Its settings: direction, message types, transcript storage.
    const settings = page.getByRole('form', { name: 'Sync settings: Messaging platform' });
    await settings.getByLabel('Both', { exact: true }).check();
    await settings.getByLabel('Media', { exact: true }).uncheck();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByText(/^Saved /).waitFor();
    await page.reload();
    await page.locator('#settings form').waitFor();
    const reloaded = page.getByRole('form', { name: 'Sync settings: Messaging platform' });
    expect(await reloaded.getByLabel('Both', { exact: true }).isChecked()).toBe(true);
    expect(await reloaded.getByLabel('Media', { exact: true }).isChecked()).toBe(false);
    expect(await reloaded.getByLabel('Text', { exact: true }).isChecked()).toBe(true);
    await expectAccessible(page, 'messaging connector');
    await screenshot(page, 'connector-messaging');
  });

  it('messaging: live and recent conversations with their state, and each transcript', async () => {
    // A playbook starts a conversation with its API key; the sandbox's agent joins and echoes.
    const token = await gateway.runtime.local.signIn.issue({ accountId: 'acme' });
    const { key } = (await (await fetch(`${gateway.url}/api/v1/accounts/acme/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'chat' }) })).json()) as { key: string };
    const playbook = (path: string, body: unknown) =>
      fetch(`${gateway.url}/api/v1/playbook/conversations${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const started = await playbook('', { direction: 'inbound' });
    expect(started.status).toBeLessThan(300);
    const { id } = (await started.json()) as { id: string };
    await page.locator(`#conversations tr[data-conversation="${id}"]`).waitFor({ timeout: 30_000 });
    expect(await playbook(`/${id}/messages`, { text: 'Hello from the dashboard test', author: 'end_user' })).toHaveProperty('ok', true);
    await page.locator(`#conversations tr[data-conversation="${id}"] button`).click();
    await page.locator('#transcript').getByText('Hello from the dashboard test').first().waitFor();
    await expectAccessible(page, 'conversations and a transcript');
    await screenshot(page, 'messaging-conversations');

    expect(await playbook(`/${id}/end`, {})).toHaveProperty('ok', true);
    await page.getByRole('button', { name: 'Recent' }).click();
    await page.locator(`#conversations tr[data-conversation="${id}"]:not([data-state="active"]):not([data-state="queued"]):not([data-state="starting"])`).waitFor({ timeout: 30_000 });
  });

  it('the account page shows every connector healthy; API keys are created (shown once), listed and revoked', async () => {
    await page.goto(`${gateway.url}/#/accounts/acme`);
    await page.locator('#integrations .badge[data-state="healthy"]').nth(3).waitFor();
    await page.getByLabel('Key name').fill('qualification agent');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.locator('#new-api-key [data-copy="api-key"]').inputValue();
    expect(key).toMatch(/^igk_/);
    await page.locator('#api-keys tr', { hasText: 'qualification agent' }).waitFor();
    // The key works for a playbook read.
    const read = await fetch(`${gateway.url}/api/v1/playbook/subscribers?connector=billing&limit=1`, { headers: { authorization: `Bearer ${key}` } });
    expect(read.status).toBe(200);
    await expectAccessible(page, 'account with a new key');
    await screenshot(page, 'account-integrations');

    await page.getByRole('button', { name: 'Done: hide the key' }).click();
    await page.getByRole('button', { name: 'Revoke the key qualification agent' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.locator('#api-keys tr', { hasText: 'qualification agent' }).waitFor({ state: 'detached' });
    expect(await store.listApiKeys(gateway.runtime.local.gateway.table, 'acme')).not.toContainEqual(expect.objectContaining({ name: 'qualification agent' }));
    expect(await page.content()).not.toContain(key);
  });

  it('recent events from the feed are listed (the billing webhook above)', async () => {
    await page.locator('#events').getByRole('button', { name: 'Refresh' }).click();
    const event = page.locator('#events .event-list li', { hasText: 'subscription.created' });
    await event.waitFor();
    await event.locator('summary').click();
    expect(await event.locator('pre').textContent()).toContain('webhook@example.com');
    await expectAccessible(page, 'recent events');
  });

  it('Disconnect says what is deleted, and asks first', async () => {
    await openConnector('billing');
    await page.locator('#disconnect-button').click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const words = (await dialog.textContent()) ?? '';
    expect(words).toMatch(/stored credentials: API Key \(••••/);
    expect(words).toMatch(/customers, subscriptions, invoices, payments/);
    expect(words).toMatch(/Webhooks .* refused/);
    await expectAccessible(page, 'disconnect dialog');
    await screenshot(page, 'disconnect-confirmation', { fullPage: false });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('.page-header .badge[data-state="healthy"]').waitFor();

    await page.locator('#disconnect-button').click();
    await dialog.getByRole('button', { name: 'Disconnect' }).click();
    await outcome().getByText('The billing platform is disconnected.').waitFor();
    await page.locator('.page-header .badge[data-state="off"]').waitFor();
    expect(await connectForm('Billing platform').isVisible()).toBe(true);
    expect(await store.getConnection(gateway.runtime.local.gateway.table, 'acme', 'billing')).toBeUndefined();

    // An OAuth connector: its grant on the platform goes too.
    await openConnector('data');
    await page.locator('#disconnect-button').click();
    expect(await dialog.textContent()).toMatch(/refresh token is revoked/);
    await expectAccessible(page, 'disconnect dialog, data');
    await dialog.getByRole('button', { name: 'Disconnect' }).click();
    await outcome().getByText('The data platform is disconnected.').waitFor();
    expect(pageErrors).toEqual([]);
  });
});
