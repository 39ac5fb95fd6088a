import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';

/**
 * Debian's Chromium, driven by playwright-core (`npx playwright install` cannot download browsers here).
 * `.ci/run` installs it; where it is missing the dashboard's browser tests are skipped with this message.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`Dashboard browser tests skipped: ${CHROMIUM} not found (install Debian's chromium; .ci/run does).`);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core on the page as it is now: no serious or critical violation. The script is evaluated through the
 * DevTools protocol, so the page's Content-Security-Policy (no inline scripts) stays on.
 */
export async function expectAccessible(page: Page, view: string): Promise<void> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>(`
    axe.run(document, { resultTypes: ['violations'] }).then((result) =>
      result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))
  `);
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, `${view}: ${JSON.stringify(serious, null, 1)}`).toEqual([]);
  // And no value the page failed to put into words.
  expect(await page.evaluate<string>('document.body.innerText'), view).not.toMatch(/\bundefined\b|\bnull\b|\[object Object\]|\bNaN\b|Invalid Date/);
}

/**
 * The pictures go to docs/screenshots/ (docs/dashboard.md shows them) when `SCREENSHOTS=1`; otherwise to a
 * scratch folder, so an ordinary `npm test` leaves the working tree as it found it.
 */
const screenshots = process.env.SCREENSHOTS === '1' ? new URL('../../docs/screenshots/', import.meta.url) : new URL(`file://${join(tmpdir(), 'gateway-screenshots')}/`);
/** Writes <screenshots>/<name>.png. */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  mkdirSync(screenshots, { recursive: true });
  // Toasts come and go: leave them out of the pictures.
  await page.evaluate(`document.getElementById('toasts')?.replaceChildren(); window.scrollTo(0, 0)`);
  await page.screenshot({ path: new URL(`${name}.png`, screenshots).pathname, fullPage: options.fullPage ?? true, animations: 'disabled' });
}

/** Signs in on the local stand-in for Cognito managed login (the page the dashboard sends the browser to). */
export async function signInOnLocalPage(page: Page, who: { accountId: string } | { operator: true }): Promise<void> {
  await page.waitForURL(/\/local\/oauth2\/authorize/);
  if ('operator' in who) await page.getByRole('button', { name: 'Sign in as an operator (support)' }).click();
  else {
    await page.getByLabel('Account id').fill(who.accountId);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }
}

/** Writes one part of the page (a card) as <screenshots>/<name>.png, the same folder as `screenshot`. */
export async function screenshotOf(locator: Locator, name: string): Promise<void> {
  mkdirSync(screenshots, { recursive: true });
  await locator.page().evaluate(`document.getElementById('toasts')?.replaceChildren()`);
  await locator.screenshot({ path: new URL(`${name}.png`, screenshots).pathname, animations: 'disabled' });
}

/** A new page of its own, signed in as the account's user on the local sign-in page, at the account's Integrations. */
export async function signedInPage(browser: Browser, url: string, accountId: string, pageErrors: string[]): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(url);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await signInOnLocalPage(page, { accountId });
  await page.locator('#integrations').waitFor();
  return page;
}
