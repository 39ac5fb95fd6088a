import { readdirSync, statSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { setLogSink } from '../shared/log/logger';
import { startSandboxGateway } from '../test/support/sandbox-gateway';
import type { Figures } from './results-file';
import { median } from './statistics';

const LOADS = 10;

/**
 * The dashboard's load on localhost, in Debian's Chromium: a reload of the account page with its four
 * connector cards, which includes getting tokens again (authorize → code → token, as after any reload,
 * since tokens live in memory only) and the API reads. Also what the page downloads: no build step, so the
 * files are sent as written.
 */
export async function benchDashboard(): Promise<{ figures: Figures; notes: string[] }> {
  const restoreLogs = setLogSink(() => {});
  const gateway = await startSandboxGateway();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const operator = await gateway.runtime.local.signIn.issue({ operator: true });
    await fetch(`${gateway.url}/api/v1/accounts/acme`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Acme', integrationsEnabled: true }),
    });
    const page = await browser.newPage();
    await page.goto(gateway.url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Account id').fill('acme');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.locator('#integrations article').nth(3).waitFor();

    const times: number[] = [];
    let requests = 0;
    page.on('request', () => (requests += 1));
    for (let i = 0; i < LOADS; i += 1) {
      requests = 0;
      const started = performance.now();
      await page.reload();
      await page.locator('#integrations article').nth(3).waitFor();
      await page.locator('#api-keys .empty, #api-keys table').waitFor();
      times.push(performance.now() - started);
    }
    const directory = new URL('../dashboard/', import.meta.url);
    const bytes = readdirSync(directory).reduce((sum, name) => sum + statSync(new URL(name, directory)).size, 0);
    return {
      figures: {
        'dashboard.reload_to_account_page_p50_ms': Math.round(median(times)),
        'dashboard.reload_to_account_page_max_ms': Math.round(Math.max(...times)),
        'dashboard.requests_per_reload': requests,
        'dashboard.files_kb': Math.round(bytes / 1024),
      },
      notes: [
        `A signed-in reload of the account page, ${LOADS} times, in headless Chromium on localhost: the page, its modules, config.json, the sign-in round trip (authorize → code → token: tokens live in memory only), /connectors, the account, its connections, API keys and events.`,
        'files_kb: every file in dashboard/, unminified and uncompressed, as served (no build step).',
      ],
    };
  } finally {
    await browser.close();
    await gateway.stop();
    setLogSink(restoreLogs);
  }
}
