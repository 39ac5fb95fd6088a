// The dashboard: plain ES modules, no framework and no build step. This module starts the page (config,
// sign-in), draws the frame and routes between the views (#/ routes, so the page itself is always "/").

import { call, setApiBase } from './api.js';
import { currentUser, onSessionChange, signIn, signInAgainInPopup, signOut, startAuth } from './auth.js';
import { announce, h } from './dom.js';

const OUTCOME_KEY = 'dashboard.oauthOutcome';
const main = document.getElementById('main');
let cleanup = () => undefined;
let connectorsPromise;

/** Every connector's description (forms, settings, capabilities, callback address): read once per page. */
export function connectorDescriptions() {
  connectorsPromise ??= call('GET', '/api/v1/connectors').then((answer) => {
    if (!answer.ok) {
      connectorsPromise = undefined;
      throw new Error(answer.problem?.detail ?? 'The connectors could not be read.');
    }
    return answer.body.connectors;
  });
  return connectorsPromise;
}

/** The outcome of an OAuth sign-in on a platform, read once (the callback put it in the address's fragment). */
export function takeOAuthOutcome(connector) {
  const outcome = JSON.parse(sessionStorage.getItem(OUTCOME_KEY) ?? 'null');
  if (!outcome || outcome.connector !== connector) return undefined;
  sessionStorage.removeItem(OUTCOME_KEY);
  return outcome;
}

/** Where a route goes: [view, params]. */
function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'accounts' && parts[1] && parts[2] === 'connectors' && parts[3]) return ['connector', { accountId: parts[1], connector: parts[3] }];
  if (parts[0] === 'accounts' && parts[1]) return ['account', { accountId: parts[1] }];
  if (parts[0] === 'accounts') return ['accounts', {}];
  return ['home', {}];
}

async function render() {
  cleanup();
  cleanup = () => undefined;
  const user = currentUser();
  if (!user) return;
  let [view, params] = parseRoute(location.hash);
  if (view === 'home') {
    if (user.operator) view = 'accounts';
    else if (user.accountId) {
      location.replace(`#/accounts/${encodeURIComponent(user.accountId)}`);
      return;
    } else {
      main.replaceChildren(h('div', { class: 'card' }, h('h1', {}, 'No account'), h('p', {}, 'Your user has no account. Ask your administrator to invite you with your account.')));
      return;
    }
  }
  drawNav(view);
  main.replaceChildren(h('div', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Loading…'));
  const modules = { accounts: './operator-view.js', account: './account-view.js', connector: './connector-view.js' };
  const module = await import(modules[view]);
  const stop = await module.show(main, { ...params, user });
  cleanup = typeof stop === 'function' ? stop : () => undefined;
  // Move focus to the new view's heading, so keyboard and screen reader users start at the top.
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
}

function drawNav(view) {
  const user = currentUser();
  const nav = document.getElementById('nav');
  nav.replaceChildren(
    ...(user.operator ? [h('a', { href: '#/accounts', 'aria-current': view === 'accounts' ? 'page' : undefined }, 'Accounts')] : []),
    ...(user.accountId ? [h('a', { href: `#/accounts/${encodeURIComponent(user.accountId)}`, 'aria-current': view !== 'accounts' ? 'page' : undefined }, 'Integrations')] : []),
  );
}

function drawUser() {
  const user = currentUser();
  const box = document.getElementById('user');
  if (!user) return box.replaceChildren();
  box.replaceChildren(
    h('span', { class: 'user-name' }, user.email, user.operator ? ' · operator' : user.accountId ? ` · ${user.accountId}` : ''),
    h('button', { type: 'button', class: 'small', id: 'sign-out', onclick: () => void signOut() }, 'Sign out'),
  );
}

function welcome(config) {
  main.replaceChildren(
    h(
      'div',
      { class: 'welcome' },
      h(
        'div',
        { class: 'card' },
        h('h1', {}, 'Sign in to the integration gateway'),
        h('p', { class: 'muted' }, 'Connect your messaging, data, billing and payment platforms, choose what to sync, and watch it run.'),
        h('button', { type: 'button', class: 'primary', id: 'sign-in', onclick: () => void signIn(location.hash) }, 'Sign in'),
        config.signIn === 'local' ? h('p', { class: 'hint' }, 'Locally, a sign-in page of the gateway stands in for Cognito managed login.') : undefined,
      ),
    ),
  );
}

/** The OAuth callback came back with `#connector=data&outcome=connected&message=...`: keep it for that view. */
function keepOAuthOutcome() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  if (!fragment.get('connector') || !fragment.get('outcome')) return;
  const outcome = { connector: fragment.get('connector'), ok: fragment.get('outcome') === 'connected', message: fragment.get('message') ?? '' };
  sessionStorage.setItem(OUTCOME_KEY, JSON.stringify(outcome));
  const route = sessionStorage.getItem('dashboard.returnRoute') ?? '#/';
  history.replaceState(null, '', `${location.pathname}${route}`);
}

// The session banner: the page stays as it is while the user signs in again in a small window.
onSessionChange((state) => {
  const banner = document.getElementById('session-banner');
  if (state === 'expired') {
    banner.hidden = false;
    announce('Your session has ended. Sign in again to continue: what you typed stays on this page.', { problem: true, toast: false });
    document.getElementById('session-sign-in').focus();
  } else if (state === 'renewed') {
    banner.hidden = true;
    drawUser();
    announce('Signed in again.');
  }
});
document.getElementById('session-sign-in').addEventListener('click', async () => {
  if (!(await signInAgainInPopup())) announce('The sign-in window was blocked: allow pop-ups for this page, then press "Sign in again".', { problem: true });
});

async function start() {
  let config;
  try {
    const response = await fetch('config.json', { cache: 'no-store' });
    config = await response.json();
  } catch {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'The dashboard cannot start'), h('p', {}, 'Its configuration (config.json) could not be read. Reload the page; if it persists, redeploy the stack.')));
    return;
  }
  setApiBase(config.apiBase);
  keepOAuthOutcome();
  let state;
  try {
    state = await startAuth(config);
  } catch {
    state = 'signed-out';
    announce('Sign-in could not be finished. Sign in again.', { problem: true });
  }
  if (state === 'popup') {
    main.replaceChildren(h('div', { class: 'welcome' }, h('div', { class: 'card' }, h('h1', {}, 'Signed in'), h('p', {}, 'You can close this window and go back to the dashboard.'))));
    return;
  }
  if (state === 'redirecting') return;
  if (state === 'signed-out') return welcome(config);
  drawUser();
  window.addEventListener('hashchange', () => void render());
  await render();
}

void start();
