import type { HttpRequest, HttpResponse } from '../api/http';
import { SECURITY_HEADERS } from '../api/http';
import type { AuthorizingConnector } from '../connections/connector';
import type { ConnectionProblem } from '../connections/connector-platform';
import { saveConnection } from '../connections/connect';
import { testConnection } from '../connections/test-connection';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import type { Logger } from '../log/logger';
import { gatewayBaseUrl } from '../webhooks/addresses';
import { timingSafeEqual } from 'node:crypto';
import { browserBindingCookie, browserBindingHash, browserBindingOf } from './authorization';
import { authorizationCodeGrant } from './identity-client';
import { identityProblem } from './identity-problems';
import * as store from '../store/store';

/**
 * The OAuth callbacks (`/auth/crmmessaging/callback`, `/auth/crmdata/callback`): the browser comes
 * back from the platform with `code` and `state` (or `error`). The state is consumed exactly once
 * (a replay finds nothing), the code is exchanged with the PKCE verifier, the refresh token joins
 * the client secret in the vault, Test Connection runs, and the browser goes back to the dashboard
 * with the outcome in words: never a token or a code in that address. Anything wrong stops with a
 * page that says what to do, and nothing is stored half-way.
 */

/** The outcome the dashboard shows, in its address's fragment (not sent to any server). */
export function dashboardReturn(base: string, returnTo: string | undefined, outcome: { connector: string; ok: boolean; message: string }): string {
  const fragment = new URLSearchParams({ connector: outcome.connector, outcome: outcome.ok ? 'connected' : 'failed', message: outcome.message });
  const url = new URL(returnTo ?? '/', base);
  url.hash = fragment.toString();
  return url.toString();
}

/** A page for a callback the gateway refuses: what happened and what to do, nothing from the request echoed. */
export function refusalPage(status: number, title: string, remedy: string, dashboardUrl: string): HttpResponse {
  const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title></head><body><main><h1>${escape(title)}</h1><p>${escape(remedy)}</p><p><a href="${escape(dashboardUrl)}">Back to the dashboard</a></p></main></body></html>`;
  return {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'" },
    body,
  };
}

function seeOther(location: string): HttpResponse {
  return { status: 303, headers: { ...SECURITY_HEADERS, location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }, body: '' };
}

/** Where the dashboard is: DASHBOARD_URL when deployed with one, else the gateway's own page. */
function dashboardBase(gateway: Gateway, request: HttpRequest): string {
  return gateway.env.DASHBOARD_URL ?? `${gatewayBaseUrl(gateway.env, request)}/`;
}

/** Pure: whether the callback's browser is the one that started the sign-in (constant time). */
export function sameBrowser(cookieHeader: string | undefined, storedHash: string): boolean {
  const presented = browserBindingOf(cookieHeader);
  if (!presented) return false;
  const a = Buffer.from(browserBindingHash(presented));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function finishAuthorization(gateway: Gateway, request: HttpRequest, connector: AuthorizingConnector, log: Logger): Promise<HttpResponse> {
  const answer = await finish(gateway, request, connector, log);
  // The binding has done its work whatever the outcome: the browser forgets it.
  const secure = gatewayBaseUrl(gateway.env, request).startsWith('https:');
  return { ...answer, headers: { ...answer.headers, 'set-cookie': browserBindingCookie('', connector.authorization.callbackPath, secure, 0) } };
}

async function finish(gateway: Gateway, request: HttpRequest, connector: AuthorizingConnector, log: Logger): Promise<HttpResponse> {
  const dashboard = dashboardBase(gateway, request);
  const startAgain = `Open the dashboard and start Connect Account for the ${connector.platform} again.`;
  const state = request.query.state;
  if (!state) return refusalPage(400, 'This sign-in cannot be finished', `The address has no state, so it did not come from a sign-in the gateway started. ${startAgain}`, dashboard);

  const pending = await store.takePendingAuthorization(gateway.table, state, new Date(gateway.now()), { connector: connector.name });
  if (!pending) {
    log.info('authorization refused', { connector: connector.name, reason: 'unknown, expired, used or other-connector state' });
    return refusalPage(
      400,
      'This sign-in cannot be finished',
      `It is unknown, expired (sign-ins last 10 minutes), already finished, or was started for another connector. ${startAgain}`,
      dashboard,
    );
  }
  const { accountId } = pending;
  const flowLog = log.with({ accountId, connector: connector.name });
  if (!sameBrowser(request.headers.cookie, pending.browserBinding)) {
    flowLog.info('authorization refused', { reason: 'not the browser that started it' });
    return refusalPage(
      403,
      'This sign-in was started in another browser',
      `A sign-in can only be finished in the browser that started it, so a link sent by someone else cannot connect your platform account to theirs. ${startAgain}`,
      dashboard,
    );
  }
  const account = await store.getAccount(gateway.table, accountId);
  if (!account?.integrationsEnabled) {
    flowLog.info('authorization refused', { reason: 'integrations switched off' });
    return refusalPage(403, 'Integrations are not enabled', 'The Integrations section is not enabled for this account: nothing was saved. Ask your support contact to enable Integrations for the account.', dashboard);
  }
  const back = (ok: boolean, message: string) => seeOther(dashboardReturn(dashboard, pending.returnTo, { connector: connector.name, ok, message }));

  if (request.query.error) {
    const problem = identityProblem(request.query.error, request.query.error_description ?? '', { grant: 'authorization_code', callbackUrl: pending.redirectUri });
    flowLog.info('authorization declined on the platform', { error: request.query.error });
    return back(false, `${problem.reason} ${problem.remedy}`);
  }
  const code = request.query.code;
  if (!code) return back(false, `The platform sent no authorization code. ${startAgain}`);

  const opened = await gateway.vault.open({ accountId, connector: connector.name }, pending.credentials);
  const { codeVerifier, ...formCredentials } = opened;
  const support = connector.authorization;
  let refreshToken: string | undefined;
  try {
    const tokens = await authorizationCodeGrant(
      {
        loginUrl: support.loginUrl(pending.config, gateway.env),
        platform: connector.name,
        allowInsecure: gateway.env.ALLOW_INSECURE_PLATFORM_URLS,
        timeoutMs: gateway.env.PLATFORM_TIMEOUT_MS,
      },
      { clientId: String(pending.config.clientId), clientSecret: formCredentials.clientSecret ?? '', code, codeVerifier: codeVerifier ?? '', redirectUri: pending.redirectUri },
    );
    refreshToken = tokens.refreshToken;
  } catch (error) {
    const problem = exchangeProblem(error, pending.redirectUri);
    flowLog.info('authorization code exchange refused', { reason: problem.reason });
    return back(false, `${problem.reason} ${problem.remedy}`);
  }
  if (!refreshToken) {
    return back(false, 'The platform gave no refresh token: add the refresh_token and offline_access scopes to the OAuth client, then connect again.');
  }

  const existing = await store.getConnection(gateway.table, accountId, connector.name);
  await saveConnection(gateway, flowLog, { accountId, connector, existing, parts: { config: formConfig(pending.config), credentials: { ...formCredentials, refreshToken }, warnings: [] } });
  const tested = await testConnection(gateway, accountId, connector, flowLog);
  flowLog.info('authorization finished', { tested: tested.ok });
  return tested.ok
    ? back(true, `The ${connector.platform} is connected and Test Connection succeeded.`)
    : back(false, `The ${connector.platform} is connected, but Test Connection failed: ${tested.health.reason ?? ''} ${tested.health.remedy ?? ''}`.trim());
}

/** A refused exchange in the user's words; anything but the identity service's refusal is the connector's own reading. */
function exchangeProblem(error: unknown, callbackUrl: string): ConnectionProblem {
  if (error instanceof PlatformError && error.platformCode) {
    return identityProblem(error.platformCode, error.platformMessage ?? '', { grant: 'authorization_code', callbackUrl });
  }
  return {
    health: 'degraded',
    reason: 'The identity service could not be reached to finish the sign-in.',
    remedy: 'Try Connect Account again in a moment.',
  };
}

/** The form's config as it was split (strings, numbers and booleans), back from the pending item. */
function formConfig(config: Record<string, unknown>): Record<string, string | number | boolean> {
  return Object.fromEntries(
    Object.entries(config).filter((entry): entry is [string, string | number | boolean] => ['string', 'number', 'boolean'].includes(typeof entry[1])),
  );
}
