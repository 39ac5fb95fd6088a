// Sign-in: OAuth 2.0 authorization code with PKCE (S256) against the authorization server named in config.json:
// Cognito managed login when deployed, the local runtime's stand-in under `npm start` (same endpoints, same
// claims). A public client: no secret. Tokens live in this module's memory only (never in storage, cookies or
// URLs) and are refreshed before they expire. Only the PKCE verifier and state wait in sessionStorage while the
// browser is away signing in: both are single-use and worthless without the code that comes back.

const PENDING_KEY = 'dashboard.signIn';
const SIGNED_IN_KEY = 'dashboard.signedIn';
const POPUP_NAME = 'dashboard-sign-in';
/** States of sign-ins made in the small window start with this, so that window knows to hand the code back. */
const POPUP_STATE = 'popup.';
/** Same-origin channel from the sign-in window to the page (works even if the sign-in page cut the opener link). */
const channel = new BroadcastChannel('dashboard-sign-in');

let config;
/** { idToken, refreshToken, expiresAt (ms), claims } */
let tokens;
let refreshing;
let refreshTimer;
/** Waiters for a new sign-in while the session has ended (the page stays as it is). */
let reauthWaiters = [];
let popupAttempt;
const listeners = new Set();

export function onSessionChange(listener) {
  listeners.add(listener);
}
function notify(state) {
  for (const listener of listeners) listener(state);
}

const redirectUri = () => `${location.origin}/`;

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
function randomString(byteCount = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(byteCount)));
}
async function challengeOf(verifier) {
  return base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
}

/** The claims of an ID token (the API verifies its signature; the page only reads who is signed in). */
function claimsOf(idToken) {
  const payload = (idToken.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0))));
}

function groupsOf(claims) {
  const groups = claims['cognito:groups'];
  return Array.isArray(groups) ? groups : typeof groups === 'string' ? groups.split(/[\s,]+/) : [];
}

/** Who is signed in, as the page needs it. */
export function currentUser() {
  if (!tokens) return undefined;
  const { claims } = tokens;
  return {
    subject: claims.sub,
    email: claims.email ?? claims['cognito:username'] ?? claims.sub,
    accountId: claims['custom:account_id'],
    operator: groupsOf(claims).includes('operator'),
  };
}

async function authorizeUrl(state, verifier, { prompt } = {}) {
  const url = new URL(`${config.authority}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scopes,
    state,
    code_challenge: await challengeOf(verifier),
    code_challenge_method: 'S256',
    ...(prompt ? { prompt } : {}),
  }).toString();
  return url.toString();
}

async function tokenRequest(form) {
  const response = await fetch(`${config.authority}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: config.clientId, ...form }).toString(),
  });
  if (!response.ok) throw new Error(`sign-in refused (${response.status})`);
  return response.json();
}

function keep(answer) {
  const claims = claimsOf(answer.id_token);
  const expiresAt = Date.now() + (answer.expires_in ?? 3600) * 1000;
  tokens = { idToken: answer.id_token, refreshToken: answer.refresh_token ?? tokens?.refreshToken, expiresAt, claims };
  sessionStorage.setItem(SIGNED_IN_KEY, '1');
  clearTimeout(refreshTimer);
  // Refresh a few minutes before the hour is up (or halfway, for short lifetimes).
  const lifetime = expiresAt - Date.now();
  refreshTimer = setTimeout(() => void refresh().catch(() => undefined), Math.max(5_000, Math.min(lifetime - 300_000, lifetime / 2)));
}

/**
 * Starts the page's sign-in: finishes a sign-in coming back (`?code=&state=`), or reports that one is needed.
 * Answers 'signed-in', 'signed-out' (show the welcome page), 'redirecting' or 'popup' (this window only carried
 * a code back to the page that opened it).
 */
export async function startAuth(runtimeConfig) {
  config = runtimeConfig;
  const query = new URLSearchParams(location.search);
  const code = query.get('code');
  const state = query.get('state');
  if (state?.startsWith(POPUP_STATE)) {
    channel.postMessage({ code, state, error: query.get('error') });
    history.replaceState(null, '', location.pathname);
    window.close();
    return 'popup';
  }
  if (code && state) {
    const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null');
    sessionStorage.removeItem(PENDING_KEY);
    history.replaceState(null, '', `${location.pathname}${pending?.returnRoute ?? ''}`);
    if (!pending || pending.state !== state) return 'signed-out';
    keep(await tokenRequest({ grant_type: 'authorization_code', code, redirect_uri: redirectUri(), code_verifier: pending.verifier }));
    return 'signed-in';
  }
  if (query.get('error')) {
    history.replaceState(null, '', location.pathname);
    return 'signed-out';
  }
  // Signed in earlier in this tab (a reload, or back from a platform's sign-in): the sign-in domain's own
  // session brings the user straight back, so go without asking.
  if (sessionStorage.getItem(SIGNED_IN_KEY)) {
    await signIn(location.hash);
    return 'redirecting';
  }
  return 'signed-out';
}

/** Sends the browser to the sign-in page; it comes back to `returnRoute` (a #route of this page). */
export async function signIn(returnRoute = '') {
  const state = randomString();
  const verifier = randomString(48);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier, returnRoute }));
  location.assign(await authorizeUrl(state, verifier));
}

/** The ID token for the API, refreshed first when it is about to expire. Undefined when the session has ended. */
export async function idToken() {
  if (tokens && tokens.expiresAt - Date.now() < 30_000) await refresh().catch(() => undefined);
  return tokens?.idToken;
}

/** Gets new tokens with the refresh token (one request at a time). Throws when the session has ended. */
export function refresh() {
  refreshing ??= (async () => {
    try {
      if (!tokens?.refreshToken) throw new Error('no session');
      keep(await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken }));
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

/**
 * The API refused the token: try a refresh, and if the session has ended, ask the user to sign in again in a
 * small window while this page keeps everything as it is. Resolves once signed in again.
 */
export async function renewSession() {
  try {
    await refresh();
    return;
  } catch {
    // The refresh token is no longer accepted: a new sign-in is needed.
  }
  const waiting = new Promise((resolve) => reauthWaiters.push(resolve));
  if (reauthWaiters.length === 1) notify('expired');
  return waiting;
}

/** Opens the sign-in window (from the "Sign in again" button: a user gesture, so it is not blocked). */
export async function signInAgainInPopup() {
  const state = `${POPUP_STATE}${randomString()}`;
  const verifier = randomString(48);
  popupAttempt = { state, verifier };
  // Opened empty first, in the click's own turn, then sent to the sign-in page.
  const popup = window.open('', POPUP_NAME, 'popup,width=480,height=680');
  if (!popup) return false;
  popup.location.href = await authorizeUrl(state, verifier, { prompt: 'login' });
  return true;
}

channel.addEventListener('message', async (event) => {
  if (!popupAttempt) return;
  const { state, verifier } = popupAttempt;
  if (event.data?.state !== state || !event.data.code) return;
  popupAttempt = undefined;
  try {
    keep(await tokenRequest({ grant_type: 'authorization_code', code: event.data.code, redirect_uri: redirectUri(), code_verifier: verifier }));
  } catch {
    notify('expired');
    return;
  }
  const waiters = reauthWaiters;
  reauthWaiters = [];
  notify('renewed');
  for (const resolve of waiters) resolve();
});

/** Ends the session: the refresh token is revoked, memory cleared, and the sign-in domain signs out too. */
export async function signOut() {
  const refreshToken = tokens?.refreshToken;
  tokens = undefined;
  clearTimeout(refreshTimer);
  sessionStorage.removeItem(SIGNED_IN_KEY);
  if (refreshToken) {
    await fetch(`${config.authority}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken, client_id: config.clientId }).toString(),
    }).catch(() => undefined);
  }
  const logout = new URL(`${config.authority}/logout`);
  logout.search = new URLSearchParams({ client_id: config.clientId, logout_uri: redirectUri() }).toString();
  location.assign(logout.toString());
}
