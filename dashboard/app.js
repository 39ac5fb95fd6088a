// The dashboard's Integrations section: plain DOM, no framework, no build step.
// Everything the server sends is written with textContent, never innerHTML, so no answer can inject markup.

/**
 * The sign-in token lives in this variable only: never in localStorage, cookies or URLs.
 * Locally it comes from POST /local/sign-in; in AWS the dashboard would sign in with Cognito and send
 * the user's ID token instead (out of scope for this first version).
 */
let session; // { accountId, token }

const CONNECTORS = [
  { name: 'messaging', title: 'Messaging (CRM messaging platform)' },
  { name: 'data', title: 'Data (customer data platform)' },
  { name: 'billing', title: 'Billing (subscription billing platform)' },
  { name: 'payment', title: 'Payment (payment platform)' },
];

/** Connect Account fields, as the README's "Connection forms" tables list them. */
const CONNECT_FORMS = {
  billing: [
    { name: 'siteName', label: 'Site Name', type: 'text', required: true, hint: 'The subdomain only: for https://acme-test.chargebee.com enter acme-test.' },
    { name: 'apiKey', label: 'API Key', type: 'password', required: true, hint: 'A read-only key is preferred.' },
    { name: 'environment', label: 'Environment', type: 'select', options: [['test', 'Test Mode'], ['live', 'Live Mode']] },
  ],
  payment: [
    { name: 'authenticationMethod', label: 'Authentication method', type: 'select', options: [['api_key', 'API Key']] },
    { name: 'secretKey', label: 'Secret API Key or Restricted Key', type: 'password', required: true, hint: 'A restricted key with read access is recommended: the gateway only reads.' },
    { name: 'webhookSigningSecret', label: 'Webhook Signing Secret (optional)', type: 'password', required: false, hint: 'whsec_…, needed to verify payment webhooks.' },
  ],
};

// ---- small DOM and API helpers ----

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === false || value === undefined) continue;
    node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) node.append(child);
  return node;
}

/** Calls the gateway's API; answers { ok, status, body }. Problems (problem+json) come back in body. */
async function api(method, path, body) {
  const headers = { authorization: `Bearer ${session.token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = { detail: text };
  }
  return { ok: response.ok, status: response.status, body: parsed };
}

/**
 * A problem's words for people: its detail (or title), the field messages not shown beside a field
 * (`errors[].path` is a string such as "secretKey" or "events.1.customer_email"), and its remedy.
 */
function problemText(problem, shownBesideFields = new Set()) {
  const what = problem?.detail ?? problem?.title ?? problem?.message ?? 'Something went wrong.';
  const errors = Array.isArray(problem?.errors) ? problem.errors.filter((e) => !shownBesideFields.has(e.path)) : [];
  const fields = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
  return [what, fields, problem?.remedy ? `What to do: ${problem.remedy}` : ''].filter(Boolean).join(' ');
}

/** The page's banner: a new message replaces the last; an empty one clears it (no stale problem stays up). */
function announce(message, isProblem = false) {
  const status = document.getElementById('status');
  status.textContent = message;
  status.classList.toggle('problem', isProblem && message !== '');
}

const accountPath = () => `/api/v1/accounts/${encodeURIComponent(session.accountId)}`;

// ---- sign-in and the account ----

async function signIn(event) {
  event.preventDefault();
  announce('');
  const accountId = new FormData(event.target).get('accountId').trim();
  const response = await fetch('/local/sign-in', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ accountId }) });
  if (!response.ok) return announce('Sign-in failed. Check the account id.', true);
  session = { accountId, token: (await response.json()).token };
  announce(`Signed in to account ${accountId}.`);
  await showAccount();
}

async function showAccount() {
  const container = document.getElementById('account');
  container.replaceChildren();
  const account = await api('GET', accountPath());
  if (!account.ok) return announce(problemText(account.body), true);

  container.append(el('h2', {}, `Account: ${account.body.name}`));
  if (!account.body.integrationsEnabled) {
    // The spec: the section is absent (not disabled) until the operator's support contact enables it.
    container.append(el('p', { id: 'integrations-off' }, 'Integrations are not switched on for this account. Ask your support contact to enable them.'));
    return;
  }
  const section = el('section', { id: 'integrations', 'aria-labelledby': 'integrations-title' }, el('h2', { id: 'integrations-title' }, 'Integrations'));
  for (const connector of CONNECTORS) section.append(connectorCard(connector));
  container.append(section);
  await refreshConnections();
}

// ---- the connectors ----

function connectorCard({ name, title }) {
  const card = el('article', { class: 'connector', id: `connector-${name}`, 'aria-labelledby': `${name}-title` }, el('h3', { id: `${name}-title` }, title));
  card.append(el('div', { class: 'connection-state', id: `${name}-state` }, 'Loading…'));
  if (!CONNECT_FORMS[name]) {
    card.append(el('p', {}, 'Its Connect Account form is not in the dashboard yet.'));
    return card;
  }
  card.append(connectForm(name));
  const testButton = el('button', { type: 'button', id: `${name}-test` }, 'Test Connection');
  testButton.addEventListener('click', () => testConnection(name).catch(unreachable));
  card.append(testButton);
  card.append(el('p', { class: 'result', id: `${name}-result`, role: 'status', 'aria-live': 'polite' }));
  card.append(el('div', { class: 'syncs', id: `${name}-syncs` }));
  return card;
}

function connectForm(connector) {
  const form = el('form', { id: `${connector}-connect`, 'aria-label': `Connect Account: ${connector}`, autocomplete: 'off' }, el('h4', {}, 'Connect Account'));
  for (const field of CONNECT_FORMS[connector]) {
    const id = `${connector}-${field.name}`;
    const hintId = `${id}-hint`;
    const errorId = `${id}-error`;
    const describedBy = [field.hint ? hintId : '', errorId].filter(Boolean).join(' ');
    form.append(el('label', { for: id }, field.label));
    if (field.type === 'select') {
      form.append(el('select', { id, name: field.name, 'aria-describedby': describedBy }, ...field.options.map(([value, label]) => el('option', { value }, label))));
    } else {
      // autocomplete=new-password keeps browsers from offering to fill or remember these keys.
      const autocomplete = field.type === 'password' ? 'new-password' : 'off';
      form.append(el('input', { id, name: field.name, type: field.type, required: field.required, autocomplete, 'aria-describedby': describedBy }));
    }
    if (field.hint) form.append(el('small', { id: hintId }, field.hint));
    // The API's message for this field, beside it (empty until a validation problem names it).
    form.append(el('small', { id: errorId, class: 'field-error problem', 'data-field-error': field.name }));
  }
  form.append(el('button', { type: 'submit' }, 'Connect Account'));
  form.addEventListener('submit', (event) => connectAccount(event, connector).catch(unreachable));
  return form;
}

/** The request body from the form: empty optional fields are left out. */
function connectBody(form) {
  return Object.fromEntries([...new FormData(form).entries()].filter(([, value]) => String(value).trim() !== '').map(([key, value]) => [key, String(value).trim()]));
}

/** Shows each validation message beside its field (or clears them all); answers the fields it could place. */
function showFieldErrors(form, errors = []) {
  const placed = new Set();
  for (const input of form.querySelectorAll('input, select')) {
    const message = errors.find((e) => e.path === input.name)?.message;
    const slot = form.querySelector(`[data-field-error="${input.name}"]`);
    if (slot) slot.textContent = message ?? '';
    if (message) {
      input.setAttribute('aria-invalid', 'true');
      placed.add(input.name);
    } else {
      input.removeAttribute('aria-invalid');
    }
  }
  return placed;
}

async function connectAccount(event, connector) {
  event.preventDefault();
  const form = event.target;
  const result = document.getElementById(`${connector}-result`);
  announce('');
  showFieldErrors(form);
  result.className = 'result';
  result.textContent = 'Connecting and testing…';
  // What the user typed stays until the gateway has taken it: a refusal must not wipe the form.
  const answer = await api('PUT', `${accountPath()}/connections/${connector}`, connectBody(form));
  if (!answer.ok) {
    const placed = showFieldErrors(form, answer.body?.errors);
    result.textContent = problemText(answer.body, placed);
    result.className = 'result problem';
    form.querySelector('[aria-invalid="true"]')?.focus();
    return;
  }
  // Saved: the secrets leave the page now (masked copies come back with the connection).
  for (const input of form.querySelectorAll('input[type="password"]')) input.value = '';
  const health = answer.body.health ?? {};
  const tested =
    health.state === 'healthy'
      ? 'Connected and tested: healthy.'
      : health.state === 'unknown'
        ? 'Connected (not tested yet).'
        : [`Connected, but its test failed (${health.state.replace('_', ' ')}).`, health.reason, health.remedy ? `What to do: ${health.remedy}` : ''].filter(Boolean).join(' ');
  result.className = health.state === 'healthy' || health.state === 'unknown' ? 'result' : 'result problem';
  result.textContent = [tested, ...(answer.body.warnings ?? []).map((w) => `Warning: ${w}`)].join(' ');
  await refreshConnections();
}

async function testConnection(connector) {
  announce('');
  const result = document.getElementById(`${connector}-result`);
  result.className = 'result';
  result.textContent = 'Testing…';
  const answer = await api('POST', `${accountPath()}/connections/${connector}/test`);
  if (!answer.ok) {
    result.textContent = problemText(answer.body);
    result.className = 'result problem';
  } else if (answer.body.ok) {
    result.textContent = `Connection OK: ${answer.body.health.state}.`;
  } else {
    const health = answer.body.health ?? {};
    result.textContent = [`Test failed (${health.state}).`, health.reason, health.remedy ? `What to do: ${health.remedy}` : ''].filter(Boolean).join(' ');
    result.className = 'result problem';
  }
  await refreshConnections();
}

async function refreshConnections() {
  const answer = await api('GET', `${accountPath()}/connections`);
  if (!answer.ok) return announce(problemText(answer.body), true);
  const byConnector = new Map(answer.body.connections.map((connection) => [connection.connector, connection]));
  for (const { name } of CONNECTORS) {
    const connection = byConnector.get(name);
    document.getElementById(`${name}-state`).replaceChildren(connectionState(connection));
    if (CONNECT_FORMS[name]) await showSyncs(name, connection);
  }
}

function connectionState(connection) {
  if (!connection) return el('p', {}, 'Not connected.');
  const { health } = connection;
  const list = el('dl', {});
  const add = (term, value, attributes = {}) => list.append(el('dt', {}, term), el('dd', attributes, value));
  add('Health', health.state.replace('_', ' '), { class: `health-${health.state}`, 'data-health': health.state });
  if (health.remedy) add('What to do', health.remedy);
  for (const [field, value] of Object.entries(connection.config)) add(field, String(value));
  for (const [field, masked] of Object.entries(connection.maskedSecrets)) add(field, masked, { 'data-masked-secret': field });
  return list;
}

async function showSyncs(connector, connection) {
  const container = document.getElementById(`${connector}-syncs`);
  if (!connection) return container.replaceChildren();
  const answer = await api('GET', `${accountPath()}/connections/${connector}/syncs`);
  if (!answer.ok) return container.replaceChildren(el('p', { class: 'problem' }, problemText(answer.body)));
  const heading = el('h4', {}, 'Syncs');
  if (answer.body.syncs.length === 0) return container.replaceChildren(heading, el('p', {}, 'No sync has run yet.'));
  const rows = answer.body.syncs.map((sync) =>
    el(
      'tr',
      { 'data-object': sync.object },
      el('td', {}, sync.object),
      el('td', {}, sync.state.replaceAll('_', ' ')),
      el('td', {}, sync.lastSucceededAt ?? '—'),
      el('td', {}, sync.lastError?.message ?? ''),
      el('td', { 'data-next-try': sync.nextAttemptAt ?? '' }, nextTry(sync)),
    ),
  );
  const head = el('tr', {}, ...['Object', 'State', 'Last success', 'Last error', 'Next try'].map((title) => el('th', { scope: 'col' }, title)));
  container.replaceChildren(heading, el('table', {}, el('thead', {}, head), el('tbody', {}, ...rows)));
}

/** When a failed sync is tried again, or why it is not. */
function nextTry(sync) {
  if (sync.nextAttemptAt) return `${new Date(sync.nextAttemptAt).toLocaleString()} (failed ${sync.failedAttempts} time${sync.failedAttempts === 1 ? '' : 's'} in a row)`;
  if (sync.state === 'dead_lettered') return 'No more retries: the next scheduled sync tries again.';
  return '';
}

function unreachable() {
  announce('The gateway did not answer. Is it running?', true);
}

document.getElementById('sign-in').addEventListener('submit', (event) => signIn(event).catch(unreachable));
