import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AccountId } from '../shared/connectors';
import type { LocalSignIn, LocalSubject } from './local-sign-in';

/**
 * The local stand-in for Cognito managed login: the same OAuth endpoints the dashboard uses when deployed
 * (`/oauth2/authorize`, `/oauth2/token`, `/oauth2/revoke`, `/logout`), under `/local`, with the authorization
 * code flow and PKCE (S256, required), single-use codes, refresh tokens and a sign-in session kept in a cookie
 * (so coming back from a platform's OAuth page signs the user in again without a form, as Cognito's session
 * does). The page is one form: an account id, or "operator". The tokens carry the same claims as Cognito's.
 */

export const LOCAL_DASHBOARD_CLIENT_ID = 'local-dashboard';
/** As the deployed app client: ID tokens for an hour, sign-in sessions and refresh tokens for a working day. */
export const LOCAL_ID_TOKEN_SECONDS = 3600;
const SESSION_SECONDS = 12 * 3600;
const CODE_SECONDS = 300;
const SESSION_COOKIE = 'gateway_local_session';

export interface LocalAnswer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

interface PendingCode {
  subject: LocalSubject;
  redirectUri: string;
  codeChallenge: string;
  expiresAt: number;
}

interface RefreshGrant {
  subject: LocalSubject;
  generation: number;
  expiresAt: number;
}

const random = () => randomBytes(32).toString('base64url');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export class LocalAuthorization {
  readonly #codes = new Map<string, PendingCode>();
  readonly #refreshTokens = new Map<string, RefreshGrant>();

  constructor(
    private readonly signIn: LocalSignIn,
    private readonly now: () => number = Date.now,
  ) {}

  /** The dashboard's runtime config, pointing at this stand-in. */
  config(origin: string): Record<string, string> {
    return { authority: `${origin}/local`, clientId: LOCAL_DASHBOARD_CLIENT_ID, scopes: 'openid email profile', apiBase: '', signIn: 'local' };
  }

  async handle(req: IncomingMessage, body: Buffer, url: URL): Promise<LocalAnswer | undefined> {
    const origin = originOf(req);
    if (url.pathname === '/config.json' && req.method === 'GET') return json(200, this.config(origin));
    if (url.pathname === '/local/oauth2/authorize') {
      if (req.method === 'GET') return this.authorize(req, url.searchParams, origin);
      if (req.method === 'POST') return this.signInForm(new URLSearchParams(body.toString('utf8')), origin);
    }
    if (url.pathname === '/local/oauth2/token' && req.method === 'POST') return this.token(new URLSearchParams(body.toString('utf8')), origin);
    if (url.pathname === '/local/oauth2/revoke' && req.method === 'POST') {
      this.#refreshTokens.delete(new URLSearchParams(body.toString('utf8')).get('token') ?? '');
      return json(200, {});
    }
    if (url.pathname === '/local/logout' && req.method === 'GET') {
      const back = url.searchParams.get('logout_uri') ?? '';
      if (!this.ownPage(back, origin)) return page(400, errorPage('The sign-out address is not this dashboard.'));
      return { status: 302, headers: { location: back, 'set-cookie': `${SESSION_COOKIE}=; Path=/local; HttpOnly; SameSite=Lax; Max-Age=0`, 'cache-control': 'no-store' }, body: '' };
    }
    return undefined;
  }

  /** GET /authorize: straight back with a code when the session cookie is valid, else the sign-in form. */
  private async authorize(req: IncomingMessage, query: URLSearchParams, origin: string): Promise<LocalAnswer> {
    const request = this.checkRequest(query, origin);
    if (typeof request === 'string') return page(400, errorPage(request));
    const session = cookie(req, SESSION_COOKIE);
    const subject = session && query.get('prompt') !== 'login' ? await this.signIn.verifySession(session) : undefined;
    if (subject) return this.redirectWithCode(subject, query);
    return page(200, signInPage(query, {}));
  }

  /** POST /authorize: the form's answer. Problems are shown beside their field; nothing else changes. */
  private async signInForm(form: URLSearchParams, origin: string): Promise<LocalAnswer> {
    const request = this.checkRequest(form, origin);
    if (typeof request === 'string') return page(400, errorPage(request));
    const operator = form.get('operator') === 'yes';
    const accountId = (form.get('accountId') ?? '').trim();
    if (!operator) {
      if (!accountId) return page(400, signInPage(form, { accountId: 'Enter your account id, or sign in as an operator.' }));
      const checked = AccountId.safeParse(accountId);
      if (!checked.success) return page(400, signInPage(form, { accountId: `Not an account id: ${checked.error.issues[0]?.message ?? ''}.` }));
    }
    const subject: LocalSubject = operator ? { operator: true } : { accountId };
    const answer = this.redirectWithCode(subject, form);
    const session = await this.signIn.signSession(subject, SESSION_SECONDS);
    return { ...answer, headers: { ...answer.headers, 'set-cookie': `${SESSION_COOKIE}=${session}; Path=/local; HttpOnly; SameSite=Lax; Max-Age=${SESSION_SECONDS}` } };
  }

  private redirectWithCode(subject: LocalSubject, params: URLSearchParams): LocalAnswer {
    const code = random();
    this.#codes.set(code, {
      subject,
      redirectUri: params.get('redirect_uri')!,
      codeChallenge: params.get('code_challenge')!,
      expiresAt: this.now() + CODE_SECONDS * 1000,
    });
    const back = new URL(params.get('redirect_uri')!);
    back.searchParams.set('code', code);
    if (params.get('state')) back.searchParams.set('state', params.get('state')!);
    return { status: 302, headers: { location: back.toString(), 'cache-control': 'no-store' }, body: '' };
  }

  /** The checks Cognito makes before it shows its page: known client, registered callback, PKCE S256. */
  private checkRequest(params: URLSearchParams, origin: string): true | string {
    if (params.get('client_id') !== LOCAL_DASHBOARD_CLIENT_ID) return 'Unknown app client.';
    if (params.get('response_type') !== 'code') return 'Only the authorization code flow is offered (response_type=code).';
    if (!this.ownPage(params.get('redirect_uri') ?? '', origin)) return 'The callback address is not this dashboard.';
    if (params.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(params.get('code_challenge') ?? '')) return 'PKCE is required (code_challenge with S256).';
    return true;
  }

  /** The dashboard's page on this origin: the only registered callback and sign-out address. */
  private ownPage(address: string, origin: string): boolean {
    return address === `${origin}/`;
  }

  private async token(form: URLSearchParams, origin: string): Promise<LocalAnswer> {
    if (form.get('client_id') !== LOCAL_DASHBOARD_CLIENT_ID) return json(400, { error: 'invalid_client' });
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') {
      const code = this.#codes.get(form.get('code') ?? '');
      this.#codes.delete(form.get('code') ?? ''); // single use, whatever the outcome
      if (!code || code.expiresAt <= this.now()) return json(400, { error: 'invalid_grant' });
      if (form.get('redirect_uri') !== code.redirectUri || !this.ownPage(code.redirectUri, origin)) return json(400, { error: 'invalid_grant' });
      if (s256(form.get('code_verifier') ?? '') !== code.codeChallenge) return json(400, { error: 'invalid_grant' });
      const refreshToken = random();
      this.#refreshTokens.set(refreshToken, { subject: code.subject, generation: this.signIn.sessionGeneration, expiresAt: this.now() + SESSION_SECONDS * 1000 });
      return json(200, { ...(await this.tokens(code.subject)), refresh_token: refreshToken });
    }
    if (grant === 'refresh_token') {
      const refresh = this.#refreshTokens.get(form.get('refresh_token') ?? '');
      if (!refresh || refresh.generation !== this.signIn.sessionGeneration || refresh.expiresAt <= this.now()) return json(400, { error: 'invalid_grant' });
      return json(200, await this.tokens(refresh.subject));
    }
    return json(400, { error: 'unsupported_grant_type' });
  }

  private async tokens(subject: LocalSubject) {
    const idToken = await this.signIn.issue(subject, { lifetimeSeconds: LOCAL_ID_TOKEN_SECONDS });
    return { id_token: idToken, access_token: idToken, token_type: 'Bearer', expires_in: LOCAL_ID_TOKEN_SECONDS };
  }
}

function originOf(req: IncomingMessage): string {
  return `http://${req.headers.host ?? 'localhost'}`;
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

function json(status: number, value: unknown): LocalAnswer {
  return { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' }, body: JSON.stringify(value) };
}

function page(status: number, html: string): LocalAnswer {
  return {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
      'x-frame-options': 'DENY',
    },
    body: html,
  };
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function layout(title: string, content: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title><link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/style.css"></head><body class="sign-in-page"><main class="sign-in-card">${content}</main></body></html>`;
}

function errorPage(message: string): string {
  return layout('Sign-in refused', `<h1>Sign-in refused</h1><p role="alert">${escape(message)}</p><p><a href="/">Back to the dashboard</a></p>`);
}

/** The form, with each problem beside its field and the OAuth request carried in hidden fields. */
function signInPage(params: URLSearchParams, errors: { accountId?: string }): string {
  const hidden = ['client_id', 'response_type', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'scope']
    .filter((name) => params.get(name) !== null)
    .map((name) => `<input type="hidden" name="${name}" value="${escape(params.get(name)!)}">`)
    .join('');
  const accountError = errors.accountId
    ? `<p class="field-error" id="accountId-error" role="alert">${escape(errors.accountId)}</p>`
    : '';
  const describedBy = errors.accountId ? 'accountId-hint accountId-error' : 'accountId-hint';
  return layout(
    'Sign in: integration gateway',
    `<p class="brand"><span class="brand-mark" aria-hidden="true"></span>Integration gateway</p>
<h1>Sign in</h1>
<p class="muted">Local sign-in: it stands in for Cognito managed login under <code>npm start</code>, with the same claims.</p>
<form method="post" action="/local/oauth2/authorize" class="stack" novalidate>${hidden}
<div class="field${errors.accountId ? ' has-error' : ''}"><label for="accountId">Account id</label>
<input id="accountId" name="accountId" autocomplete="username" value="${escape(params.get('accountId') ?? '')}" aria-describedby="${describedBy}"${errors.accountId ? ' aria-invalid="true" autofocus' : ' autofocus'}>
<p class="hint" id="accountId-hint">The account you belong to, e.g. acme.</p>${accountError}</div>
<button type="submit" class="button primary">Sign in</button>
<div class="divider"><span>or</span></div>
<button type="submit" name="operator" value="yes" class="button">Sign in as an operator (support)</button>
</form>`,
  );
}
