// One account: its Integrations section (absent until the operator switches it on), playbook API keys and
// the recent events published for its playbooks.

import { connectorDescriptions } from './app.js';
import { accountPath, call, problemText } from './api.js';
import { announce, badge, confirmDialog, copyField, h, healthBadge, humanize, table, when } from './dom.js';

const PLATFORM_TITLES = { messaging: 'Messaging platform', data: 'Data platform', billing: 'Billing platform', payment: 'Payment platform' };
export const platformTitle = (description) => PLATFORM_TITLES[description.name] ?? humanize(description.platform);

export function platformIcon(name) {
  return h('span', { class: `platform-icon ${name}`, 'aria-hidden': 'true' }, name.charAt(0).toUpperCase());
}

export function breadcrumb(items) {
  return h(
    'nav',
    { class: 'breadcrumb', 'aria-label': 'Breadcrumb' },
    h('ol', {}, items.map(([label, href], i) => h('li', {}, href && i < items.length - 1 ? h('a', { href }, label) : h('span', { 'aria-current': 'page' }, label)))),
  );
}

/** One line that tells what a connection is: the site and mode, the key type, the login. */
function summaryOf(connection) {
  if (!connection) return 'Not connected.';
  const c = connection.config;
  const parts = [
    c.siteName && `Site ${c.siteName}`,
    c.environment && (c.environment === 'live' ? 'Live Mode' : 'Test Mode'),
    c.keyType && `${humanize(c.keyType)} key`,
    c.mode && (c.mode === 'live' ? 'live' : 'test'),
    c.username && String(c.username),
    c.authenticationMethod === 'authorization_code' && 'Signed in with the platform',
    c.loginUrl && humanize(String(c.loginUrl)),
  ].filter(Boolean);
  return parts.join(' · ') || 'Connected.';
}

export async function show(main, { accountId, user }) {
  const account = await call('GET', accountPath(accountId));
  if (!account.ok) {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'This account cannot be shown'), h('p', {}, problemText(account.problem))));
    return;
  }
  const { name, integrationsEnabled } = account.body;
  const crumbs = user.operator ? [['Accounts', '#/accounts'], [name]] : [[name]];
  const header = h(
    'div',
    { class: 'page-header' },
    h('div', {}, crumbs.length > 1 ? breadcrumb(crumbs) : undefined, h('h1', {}, name), h('p', { class: 'muted mono small' }, accountId)),
    user.operator ? badge(integrationsEnabled ? 'on' : 'off', integrationsEnabled ? 'Integrations on' : 'Integrations off') : undefined,
  );

  if (!integrationsEnabled) {
    // The spec: the section is absent (not disabled) until the operator's support contact enables it.
    main.replaceChildren(
      header,
      h(
        'div',
        { class: 'panel info', id: 'integrations-off' },
        h('h2', {}, 'Integrations are not switched on yet'),
        h('p', {}, 'Ask your support contact to enable Integrations for this account. Then you can connect your messaging, data, billing and payment platforms here.'),
        user.operator ? h('p', {}, 'As an operator, switch it on in ', h('a', { href: '#/accounts' }, 'Accounts'), '.') : undefined,
      ),
    );
    return;
  }

  const integrations = h('section', { id: 'integrations', 'aria-labelledby': 'integrations-title' }, h('h2', { id: 'integrations-title', class: 'section-title' }, 'Integrations'));
  const grid = h('div', { class: 'grid' }, h('div', { class: 'loading' }, 'Loading connections…'));
  integrations.append(grid);
  const keys = apiKeysSection(accountId);
  const events = eventsSection(accountId);
  main.replaceChildren(header, integrations, keys.element, events.element);

  const [descriptions, connections] = await Promise.all([connectorDescriptions().catch((error) => error), call('GET', `${accountPath(accountId)}/connections`)]);
  if (descriptions instanceof Error || !connections.ok) {
    grid.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('p', {}, descriptions instanceof Error ? descriptions.message : problemText(connections.problem))));
  } else {
    const byName = new Map(connections.body.connections.map((connection) => [connection.connector, connection]));
    grid.replaceChildren(...descriptions.map((description) => connectorCard(accountId, description, byName.get(description.name))));
  }
  await Promise.all([keys.load(), events.load()]);
}

function connectorCard(accountId, description, connection) {
  const href = `#/accounts/${encodeURIComponent(accountId)}/connectors/${encodeURIComponent(description.name)}`;
  const title = platformTitle(description);
  const needsReconnect = connection?.health.state === 'needs_reconnect';
  return h(
    'article',
    { class: 'card connector-card', id: `connector-${description.name}`, 'aria-labelledby': `${description.name}-title` },
    h('h3', { id: `${description.name}-title` }, platformIcon(description.name), title),
    h('div', {}, connection ? healthBadge(connection.health) : badge('off', 'Not connected')),
    h('p', { class: 'summary' }, summaryOf(connection)),
    h(
      'div',
      { class: 'actions' },
      h('a', { class: `button ${connection && !needsReconnect ? '' : 'primary'}`, href, 'aria-label': `${connection ? (needsReconnect ? 'Reconnect' : 'Manage') : 'Connect'} the ${title.toLowerCase()}` }, connection ? (needsReconnect ? 'Reconnect' : 'Manage') : 'Connect'),
    ),
  );
}

/** Playbook API keys: create (the key is shown once), list, revoke. */
function apiKeysSection(accountId) {
  const path = `${accountPath(accountId)}/api-keys`;
  const list = h('div', {}, h('div', { class: 'loading' }, 'Loading keys…'));
  const shown = h('div', { 'aria-live': 'polite' });
  const nameInput = h('input', { type: 'text', id: 'api-key-name', name: 'name', maxlength: 100, autocomplete: 'off', 'aria-describedby': 'api-key-name-hint api-key-name-error' });
  const error = h('p', { class: 'field-error', id: 'api-key-name-error', hidden: true });
  const field = h('div', { class: 'field' }, h('label', { for: 'api-key-name' }, 'Key name'), h('p', { class: 'hint', id: 'api-key-name-hint' }, 'Which playbook uses it, e.g. "qualification agent".'), nameInput, error);
  const create = h('button', { type: 'submit', class: 'primary' }, 'Create key');
  const form = h('form', { class: 'stack', novalidate: true, 'aria-label': 'Create a playbook API key' }, field, h('div', { class: 'actions' }, create));

  const setError = (message) => {
    error.textContent = message;
    error.hidden = !message;
    field.classList.toggle('has-error', Boolean(message));
    if (message) nameInput.setAttribute('aria-invalid', 'true');
    else nameInput.removeAttribute('aria-invalid');
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    setError('');
    const name = nameInput.value.trim();
    if (!name) {
      setError('Enter a name for the key.');
      return nameInput.focus();
    }
    create.disabled = true;
    const answer = await call('POST', path, { body: { name } });
    create.disabled = false;
    if (!answer.ok) {
      setError(answer.problem.errors?.find((e) => e.path === 'name')?.message ?? problemText(answer.problem));
      return nameInput.focus();
    }
    nameInput.value = '';
    shown.replaceChildren(
      h(
        'div',
        { class: 'panel once', id: 'new-api-key' },
        h('h3', {}, `Key “${answer.body.name}” created`),
        h('p', {}, 'Copy it into the playbook’s secret store now: it is shown this once, and the gateway keeps only its hash.'),
        copyField('API key', answer.body.key, { secret: true, name: 'api-key' }),
        h('button', { type: 'button', class: 'small', onclick: () => shown.replaceChildren() }, 'Done: hide the key'),
      ),
    );
    announce(`API key ${answer.body.name} created. It is shown once.`);
    await load();
  });

  async function load() {
    const answer = await call('GET', path);
    if (!answer.ok) return list.replaceChildren(h('p', { class: 'panel danger', role: 'alert' }, problemText(answer.problem)));
    if (answer.body.apiKeys.length === 0) return list.replaceChildren(h('p', { class: 'empty' }, 'No API keys yet.'));
    list.replaceChildren(
      table(
        'Playbook API keys',
        ['Name', 'Key id', 'Created', 'Revoke'],
        answer.body.apiKeys.map((key) =>
          h(
            'tr',
            { dataset: { keyId: key.keyId } },
            h('td', {}, key.name),
            h('td', { class: 'mono' }, key.keyId),
            h('td', {}, when(key.createdAt)),
            h('td', {}, h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke the key ${key.name}`, onclick: () => void revoke(key) }, 'Revoke')),
          ),
        ),
      ),
    );
  }

  async function revoke(key) {
    const confirmed = await confirmDialog({
      title: `Revoke the key “${key.name}”?`,
      body: h('p', {}, 'Playbooks using it are refused within a minute. This cannot be undone: create a new key for them instead.'),
      confirm: 'Revoke key',
    });
    if (!confirmed) return;
    const answer = await call('DELETE', `${path}/${encodeURIComponent(key.keyId)}`);
    if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
    announce(`Key ${key.name} revoked.`);
    await load();
  }

  const element = h(
    'section',
    { class: 'card', id: 'api-keys', 'aria-labelledby': 'api-keys-title' },
    h('h2', { id: 'api-keys-title' }, 'Playbook API keys'),
    h('p', { class: 'muted' }, 'Playbooks read synced data and send engagement events with these keys.'),
    h('div', { class: 'split' }, list, h('div', {}, form, shown)),
  );
  return { element, load };
}

/** The recent normalised events published for the account's playbooks. */
function eventsSection(accountId) {
  const list = h('div', {}, h('div', { class: 'loading' }, 'Loading events…'));
  const refresh = h('button', { type: 'button', class: 'small' }, 'Refresh');

  async function load() {
    refresh.disabled = true;
    const answer = await call('GET', `${accountPath(accountId)}/events?limit=20`);
    refresh.disabled = false;
    if (!answer.ok) {
      // Deployed, the feed lives on EventBridge: the answer says how to subscribe.
      return list.replaceChildren(h('div', { class: 'panel info' }, h('p', {}, answer.problem.detail ?? answer.problem.title), answer.problem.remedy ? h('p', { class: 'small' }, answer.problem.remedy) : undefined));
    }
    if (answer.body.events.length === 0) return list.replaceChildren(h('p', { class: 'empty' }, 'No events yet. They appear as webhooks and syncs change records.'));
    list.replaceChildren(
      h(
        'ul',
        { class: 'event-list' },
        answer.body.events.map((event) =>
          h(
            'li',
            {},
            h('details', {}, h('summary', {}, h('strong', {}, event.type), h('span', { class: 'muted small' }, humanize(event.source)), when(event.occurredAt)), h('pre', { tabindex: '0' }, JSON.stringify(event.data, null, 2))),
          ),
        ),
      ),
    );
  }
  refresh.addEventListener('click', () => void load());
  const element = h(
    'section',
    { class: 'card', id: 'events', 'aria-labelledby': 'events-title' },
    h('div', { class: 'card-header' }, h('h2', { id: 'events-title' }, 'Recent events'), refresh),
    h('p', { class: 'muted' }, 'What the gateway published for your playbooks, newest first.'),
    list,
  );
  return { element, load };
}
