// One connector of one account: Connect Account (the method's fields, or the platform's sign-in for OAuth),
// Test Connection with the remedy, health, sync settings, Sync now with per-object progress, the addresses to
// copy into the platform, the data connector's ingestion schema, and Disconnect.

import { breadcrumb, platformIcon, platformTitle } from './account-view.js';
import { connectorDescriptions, takeOAuthOutcome } from './app.js';
import { accountPath, call, connectionPath, problemText } from './api.js';
import { announce, badge, confirmDialog, copyField, h, healthBadge, humanize, spinner, table, when } from './dom.js';
import { resolved, schemaForm, variantsOf } from './forms.js';
import { historyView } from './history-view.js';

/** After this long without an answer, a slow call offers "Stop waiting". */
const SLOW_AFTER_MS = 4000;
/** How often a running sync is looked at, and how long without any change before the page stops looking. */
const SYNC_POLL_MS = 1500;
const SYNC_STALL_MS = 90_000;

const SYNC_STATE_WORDS = {
  never_run: 'Never run',
  queued: 'Queued',
  running: 'Running',
  idle: 'Done',
  retrying: 'Retrying',
  dead_lettered: 'Stopped retrying',
  paused_after_failure: 'Paused after a failure',
};

/** What a failing sync does next, in words (the gateway retries what time fixes, for 12 hours). */
function nextStep(sync) {
  if (sync?.state === 'retrying' && sync.nextAttemptAt) {
    return `Tried ${sync.failedAttempts ?? 1} time${sync.failedAttempts === 1 ? '' : 's'}; next try ${new Date(sync.nextAttemptAt).toLocaleTimeString()}.`;
  }
  if (sync?.state === 'dead_lettered') return 'Still failing after 12 hours of retries: the next scheduled sync starts again, or press Sync now.';
  if (sync?.state === 'paused_after_failure') return 'Resumes from where it stopped at the next sync: see the connection health for what to fix.';
  return undefined;
}

/**
 * Runs `work(signal)` with the button busy. After a few seconds the note offers a way out ("Stop waiting"),
 * which aborts the request (the gateway may still finish it: the page says so).
 */
async function whileBusy(button, busyWords, note, slowWords, work) {
  const words = button.textContent;
  const controller = new AbortController();
  button.disabled = true;
  button.replaceChildren(spinner(), busyWords);
  const slow = setTimeout(() => {
    note.replaceChildren(
      h('div', { class: 'progress-note' }, spinner(), slowWords, h('button', { type: 'button', class: 'small', onclick: () => controller.abort() }, 'Stop waiting')),
    );
    note.hidden = false;
  }, SLOW_AFTER_MS);
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(slow);
    note.replaceChildren();
    button.disabled = false;
    button.replaceChildren(words);
  }
}

export async function show(main, { accountId, connector: name, user }) {
  const [descriptions, account] = await Promise.all([connectorDescriptions().catch((error) => error), call('GET', accountPath(accountId))]);
  if (descriptions instanceof Error || !account.ok) {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'This page cannot be shown'), h('p', {}, descriptions instanceof Error ? descriptions.message : problemText(account.problem))));
    return;
  }
  const description = descriptions.find((d) => d.name === name);
  if (!description) {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'No such connector'), h('p', {}, `The gateway offers ${descriptions.map((d) => d.name).join(', ')}.`)));
    return;
  }
  if (!account.body.integrationsEnabled) {
    location.replace(`#/accounts/${encodeURIComponent(accountId)}`);
    return;
  }

  const path = connectionPath(accountId, name);
  const settingsSchema = resolved(description.settings);
  const title = platformTitle(description);
  const platform = description.platform;
  const timers = new Set();
  let connection;

  // ---- the frame ----
  const headerBadge = h('span');
  const outcome = h('div', { id: 'connector-outcome', role: 'status', 'aria-live': 'polite' });
  const testNote = h('div', { hidden: true });
  const testButton = h('button', { type: 'button', id: 'test-connection' }, 'Test Connection');
  const headerActions = h('div', { class: 'actions' }, testButton);
  const crumbs = [...(user.operator ? [['Accounts', '#/accounts']] : []), [account.body.name, `#/accounts/${encodeURIComponent(accountId)}`], [title]];

  const connectionCard = h('section', { class: 'card', id: 'connection', 'aria-labelledby': 'connection-title' });
  const settingsCard = h('section', { class: 'card', id: 'settings', 'aria-labelledby': 'settings-title' });
  const syncsCard = h('section', { class: 'card', id: 'syncs', 'aria-labelledby': 'syncs-title' });
  const addressesCard = h('section', { class: 'card', id: 'addresses', 'aria-labelledby': 'addresses-title' });
  const extraCards = h('div');
  const wideCards = h('div');
  const disconnectCard = h('section', { class: 'card', id: 'disconnect', 'aria-labelledby': 'disconnect-title' });

  main.replaceChildren(
    h(
      'div',
      { class: 'page-header' },
      h('div', {}, breadcrumb(crumbs), h('h1', { class: 'actions' }, platformIcon(name), title), h('p', { class: 'muted' }, headerBadge)),
      headerActions,
    ),
    testNote,
    outcome,
    h('div', { class: 'split' }, h('div', {}, connectionCard), h('div', {}, addressesCard)),
    syncsCard,
    wideCards,
    historyView({ accountId, connector: name, capabilities: description.capabilities, conversations: name === 'messaging' }),
    h('div', { class: 'split' }, h('div', {}, settingsCard), h('div', {}, extraCards, disconnectCard)),
  );

  function showOutcome(kind, heading, lines = [], actions = []) {
    outcome.replaceChildren(h('div', { class: `panel ${kind}` }, h('h3', {}, heading), ...lines.filter(Boolean).map((line) => (line instanceof Node ? line : h('p', {}, line))), actions.length ? h('div', { class: 'actions' }, actions) : undefined));
  }

  // ---- Connect Account ----
  const connectTitle = h('h2', { id: 'connection-title' }, 'Connection');
  const summary = h('div');
  const formBox = h('div');
  const connectForm = h('form', { class: 'stack', novalidate: true, 'aria-label': `Connect Account: ${title}`, id: `${name}-connect` });
  const connectButton = h('button', { type: 'submit', class: 'primary' }, 'Connect Account');
  const connectNote = h('div');
  const cancelButton = h('button', { type: 'button', hidden: true, onclick: () => showForm(false, { focus: true }) }, 'Cancel');
  const authorizationHint = h('p', { class: 'hint', hidden: true });
  const formHeading = h('h3', { hidden: true }, 'Reconnect with other credentials');
  connectForm.append(formHeading, formBox, authorizationHint, h('div', { class: 'actions' }, connectButton, cancelButton), connectNote);
  const changeButton = h('button', { type: 'button', onclick: () => showForm(true, { focus: true }) }, 'Reconnect with other credentials');
  let form;

  function drawForm() {
    form = schemaForm(formBox, {
      schema: description.connectionForm,
      idPrefix: name,
      values: connection?.config ?? {},
      saved: connection?.maskedSecrets ?? {},
      kept: description.keptOnReconnect ?? [],
      method: connection?.config.authenticationMethod,
      onMethodChange: drawMethodHint,
    });
    drawMethodHint(form.method);
  }

  function drawMethodHint(method) {
    const browser = method === 'authorization_code';
    connectButton.textContent = browser ? `Continue to the ${platform} sign-in` : connection ? 'Reconnect' : 'Connect Account';
    authorizationHint.hidden = !browser;
    authorizationHint.textContent = browser
      ? `You will sign in on the ${platform} and approve the gateway; you come back here with the outcome. The OAuth client must have the callback address shown under "Addresses to copy".`
      : '';
  }

  function showForm(visible, { focus = false } = {}) {
    connectForm.hidden = !visible;
    formHeading.hidden = !connection;
    changeButton.hidden = visible || !connection;
    cancelButton.hidden = !connection;
    if (!focus) return;
    if (visible) connectForm.querySelector('input:not([type=hidden]), textarea, select')?.focus();
    else changeButton.focus();
  }

  connectForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = form.collect();
    if (!body) return announce('Check the highlighted fields.', { problem: true, toast: false });
    const browser = body.authenticationMethod === 'authorization_code';
    const answer = await whileBusy(connectButton, browser ? 'Starting…' : 'Connecting…', connectNote, `Waiting for the ${platform}…`, (signal) =>
      call('PUT', `${path}${browser ? '?returnTo=%2F' : ''}`, { body, signal }),
    );
    if (!answer.ok) {
      if (answer.problem.errors?.length) {
        form.showErrors(answer.problem.errors);
        announce(`${answer.problem.errors.length === 1 ? 'A field needs' : 'Some fields need'} attention: ${answer.problem.errors.map((e) => e.message).join(' ')}`, { problem: true, toast: false });
      } else {
        form.showFormError(problemText(answer.problem));
        announce(problemText(answer.problem), { problem: true, toast: false });
      }
      return;
    }
    if (answer.status === 202 && answer.body.authorizationUrl) {
      // The browser goes to the platform; the callback brings it back here with the outcome.
      sessionStorage.setItem('dashboard.returnRoute', location.hash);
      showOutcome('info', `Taking you to the ${platform} to sign in…`, [`Sign in there and approve the gateway within 10 minutes.`]);
      location.assign(answer.body.authorizationUrl);
      return;
    }
    form.clearSecrets();
    const warnings = answer.body.warnings ?? [];
    connection = answer.body;
    const health = answer.body.health ?? {};
    if (health.state === 'needs_reconnect' || health.state === 'degraded') {
      // Saved (a reconnect with the right credentials fixes it); the test that Connect ran says what is wrong.
      showOutcome(
        health.state === 'needs_reconnect' ? 'danger' : 'warning',
        'Saved, but Test Connection failed',
        [...warnings.map((w) => `Warning: ${w}`), health.reason, health.remedy && h('p', {}, h('strong', {}, 'What to do: '), health.remedy)],
        health.state === 'needs_reconnect' ? [h('button', { type: 'button', class: 'primary small', onclick: () => showForm(true, { focus: true }) }, 'Reconnect')] : [testAgainButton()],
      );
      announce(`Saved, but Test Connection failed. ${health.reason ?? ''} What to do: ${health.remedy ?? ''}`, { problem: true, toast: false });
    } else {
      showOutcome(warnings.length ? 'warning' : 'success', 'Connected.', [...warnings.map((w) => `Warning: ${w}`), testedLine(answer.body)], [testAgainButton()]);
      announce(`The ${platform} is connected.${warnings.length ? ` ${warnings.join(' ')}` : ''}`);
    }
    showForm(false);
    await refresh();
  });

  /** Connect Account may have run Test Connection already: say what it found. */
  function testedLine(view) {
    const state = view.health?.state;
    if (state === 'healthy') return 'Test Connection succeeded.';
    if (state === 'degraded' || state === 'needs_reconnect') return [view.health.reason, view.health.remedy && `What to do: ${view.health.remedy}`].filter(Boolean).join(' ');
    return 'Run Test Connection to check it.';
  }
  function testAgainButton() {
    return h('button', { type: 'button', class: 'small', onclick: () => void testConnection() }, 'Test Connection');
  }

  function drawConnection() {
    const facts = h('dl', { class: 'facts' });
    if (connection) {
      const labels = fieldLabels(description.connectionForm);
      const add = (term, value, attributes = {}) => facts.append(h('dt', {}, term), h('dd', attributes, value));
      if (connection.config.authenticationMethod) add('Authentication method', labels.methods[connection.config.authenticationMethod] ?? humanize(connection.config.authenticationMethod));
      for (const [field, value] of Object.entries(connection.config)) {
        if (field === 'authenticationMethod') continue;
        add(labels.fields[field]?.title ?? humanize(field), labels.fields[field]?.options?.[String(value)] ?? String(value));
      }
      for (const [field, masked] of Object.entries(connection.maskedSecrets)) add(labels.fields[field]?.title ?? humanize(field), masked, { dataset: { maskedSecret: field }, class: 'mono' });
      add('Connected', when(connection.createdAt));
      add('Last change', when(connection.updatedAt));
      summary.replaceChildren(facts, h('div', { class: 'actions' }, changeButton));
    } else {
      summary.replaceChildren(h('p', { class: 'muted' }, `Not connected. Enter the ${platform}'s details to connect it.`));
    }
  }

  connectionCard.replaceChildren(connectTitle, summary, connectForm);

  // ---- Test Connection and health ----
  async function testConnection() {
    if (!connection) return;
    const answer = await whileBusy(testButton, 'Testing…', testNote, `Still waiting for the ${platform}: its answers can take a while.`, (signal) => call('POST', `${path}/test`, { signal }));
    if (!answer.ok) {
      showOutcome('danger', answer.aborted ? 'Stopped waiting' : 'Test Connection could not run', [problemText(answer.problem)], [testAgainButton()]);
      return announce(problemText(answer.problem), { problem: true, toast: false });
    }
    const result = answer.body;
    connection.health = result.health;
    drawHealth();
    if (result.ok) {
      showOutcome('success', 'Test Connection succeeded: the connection works.', [`Checked ${new Date(result.health.checkedAt).toLocaleTimeString()}.`]);
      return announce(`Test Connection succeeded for the ${platform}.`);
    }
    const reconnect = result.health.state === 'needs_reconnect';
    showOutcome(
      reconnect ? 'danger' : 'warning',
      `Test Connection failed: ${reconnect ? 'needs reconnect' : 'degraded'}`,
      [result.health.reason, result.health.remedy && h('p', {}, h('strong', {}, 'What to do: '), result.health.remedy), result.platformMessage && h('p', { class: 'small muted' }, `The ${platform} said: ${result.platformMessage}`)],
      reconnect ? [h('button', { type: 'button', class: 'primary small', onclick: () => showForm(true, { focus: true }) }, 'Reconnect')] : [testAgainButton()],
    );
    announce(`Test Connection failed. ${result.health.reason ?? ''} What to do: ${result.health.remedy ?? ''}`, { problem: true, toast: false });
  }
  testButton.addEventListener('click', () => void testConnection());

  function drawHealth() {
    headerBadge.replaceChildren(connection ? healthBadge(connection.health) : badge('off', 'Not connected'));
    testButton.hidden = !connection;
  }

  // ---- sync settings ----
  let settingsForm;
  function drawSettings() {
    if (!connection) return (settingsCard.hidden = true);
    settingsCard.hidden = false;
    const fieldsBox = h('div');
    const save = h('button', { type: 'submit', class: 'primary' }, 'Save settings');
    const saved = h('p', { class: 'hint', 'aria-live': 'polite' });
    const note = h('div');
    const settings = h('form', { class: 'stack', novalidate: true, 'aria-label': `Sync settings: ${title}`, id: `${name}-settings` }, fieldsBox, h('div', { class: 'actions' }, save, saved), note);
    settingsForm = schemaForm(fieldsBox, { schema: description.settings, idPrefix: `${name}-settings`, values: connection.syncSettings });
    settings.addEventListener('submit', async (event) => {
      event.preventDefault();
      saved.textContent = '';
      const body = settingsForm.collect();
      if (!body) return announce('Check the highlighted settings.', { problem: true, toast: false });
      const answer = await whileBusy(save, 'Saving…', note, 'Still saving…', (signal) => call('PUT', `${path}/sync-settings`, { body, signal }));
      if (!answer.ok) {
        if (answer.problem.errors?.length) settingsForm.showErrors(answer.problem.errors);
        else settingsForm.showFormError(problemText(answer.problem));
        return announce(problemText(answer.problem), { problem: true, toast: false });
      }
      connection = answer.body;
      saved.textContent = `Saved ${new Date().toLocaleTimeString()}.`;
      announce('Sync settings saved.');
      await drawAddresses();
    });
    settingsCard.replaceChildren(
      h('h2', { id: 'settings-title' }, 'Sync settings'),
      h('p', { class: 'muted' }, 'What the gateway reads and how often. New frequencies take effect at the next schedule.'),
      settings,
    );
  }

  // ---- syncs ----
  const syncObjects = description.capabilities.sync?.objects ?? [];
  /** Objects asked to sync and not started yet: object → lastRunStartedAt when asked. */
  let queued = new Map();
  let polling = false;
  let lastChange = Date.now();
  let lastSnapshot = '';
  const syncBody = h('div');
  const syncNote = h('div', { class: 'progress-note', 'aria-live': 'polite' });
  const syncButton = h('button', { type: 'button', class: 'primary', id: 'sync-now' }, 'Sync now');
  const fullBox = h('input', { type: 'checkbox', id: 'sync-full' });

  function drawSyncsFrame() {
    if (!connection || syncObjects.length === 0) return (syncsCard.hidden = true);
    syncsCard.hidden = false;
    syncsCard.replaceChildren(
      h('div', { class: 'card-header' }, h('h2', { id: 'syncs-title' }, 'Syncs'), h('div', { class: 'actions' }, h('label', { class: 'choice', for: 'sync-full' }, fullBox, 'Sync everything again'), syncButton)),
      syncNote,
      syncBody,
    );
  }

  async function loadSyncs() {
    const answer = await call('GET', `${path}/syncs`);
    if (!answer.ok) {
      syncBody.replaceChildren(h('p', { class: 'panel danger', role: 'alert' }, problemText(answer.problem)));
      return undefined;
    }
    const byObject = new Map(answer.body.syncs.map((sync) => [sync.object, sync]));
    for (const [object, startedBefore] of queued) {
      const sync = byObject.get(object);
      if (sync && (sync.state === 'running' || (sync.lastRunStartedAt && sync.lastRunStartedAt !== startedBefore))) queued.delete(object);
    }
    const selected = new Set(connection?.syncSettings.dataObjects ?? syncObjects);
    const rows = syncObjects.map((object) => {
      const sync = byObject.get(object);
      const state = queued.has(object) ? 'queued' : (sync?.state ?? 'never_run');
      const counts = sync?.counts ?? { created: 0, updated: 0, deleted: 0, unchanged: 0 };
      const objectTitle = settingsSchema.properties?.dataObjects?.['x-option-titles']?.[object] ?? humanize(object);
      return h(
        'tr',
        { dataset: { object, state } },
        h('th', { scope: 'row' }, objectTitle, selected.has(object) ? undefined : h('div', { class: 'muted small' }, 'Not selected')),
        h('td', {}, badge(state, SYNC_STATE_WORDS[state] ?? humanize(state)), sync?.mode && state !== 'never_run' ? h('div', { class: 'muted small' }, sync.mode === 'full' ? 'Full' : 'Incremental') : undefined),
        h('td', { class: 'num', dataset: { count: 'created' } }, String(counts.created)),
        h('td', { class: 'num', dataset: { count: 'updated' } }, String(counts.updated)),
        h('td', { class: 'num', dataset: { count: 'deleted' } }, String(counts.deleted)),
        h('td', {}, when(sync?.lastSucceededAt)),
        h(
          'td',
          {},
          sync?.lastError ? h('span', { class: 'small' }, sync.lastError.message, h('div', { class: 'muted small' }, when(sync.lastError.at))) : h('span', { class: 'muted' }, '—'),
          nextStep(sync) ? h('div', { class: 'small' }, nextStep(sync)) : undefined,
        ),
      );
    });
    syncBody.replaceChildren(table(`Syncs of the ${platform}`, ['Data object', 'State', 'Created', 'Updated', 'Deleted', 'Last success', 'Last error'], rows, { numeric: [2, 3, 4] }));
    const snapshot = JSON.stringify(answer.body.syncs.map((s) => [s.object, s.state, s.counts, s.lastRunStartedAt]));
    if (snapshot !== lastSnapshot) {
      lastSnapshot = snapshot;
      lastChange = Date.now();
    }
    return { active: queued.size > 0 || answer.body.syncs.some((sync) => sync.state === 'running'), syncs: answer.body.syncs };
  }

  /** Looks again while anything is queued or running; stops when all is settled or nothing moves for a while. */
  async function poll() {
    if (polling) return;
    polling = true;
    lastChange = Date.now();
    try {
      for (;;) {
        const seen = await loadSyncs();
        if (!seen) break;
        const running = seen.syncs.filter((s) => s.state === 'running').length;
        if (!seen.active) {
          syncNote.replaceChildren(badge('idle', 'Up to date'), 'Sync finished.');
          announce('Sync finished.');
          break;
        }
        if (Date.now() - lastChange > SYNC_STALL_MS) {
          syncNote.replaceChildren(
            badge('queued', 'No progress'),
            `Nothing has moved for ${Math.round(SYNC_STALL_MS / 1000)} s: the jobs may be waiting in the sync queue, or the ${platform} is slow.`,
            h('button', { type: 'button', class: 'small', onclick: () => void poll() }, 'Check again'),
          );
          break;
        }
        syncNote.replaceChildren(spinner(), `Syncing: ${running} running, ${queued.size} queued. This page updates by itself.`);
        await new Promise((resolve) => timers.add(setTimeout(resolve, SYNC_POLL_MS)));
        if (!document.body.contains(syncsCard)) break; // left the page
      }
    } finally {
      polling = false;
    }
  }

  syncButton.addEventListener('click', async () => {
    const before = await call('GET', `${path}/syncs`);
    const startedBefore = new Map((before.ok ? before.body.syncs : []).map((s) => [s.object, s.lastRunStartedAt]));
    const answer = await whileBusy(syncButton, 'Starting…', syncNote, 'Still starting…', (signal) => call('POST', `${path}/syncs`, { body: fullBox.checked ? { full: true } : {}, signal }));
    if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
    const selected = connection.syncSettings.dataObjects ?? syncObjects;
    queued = new Map(selected.map((object) => [object, startedBefore.get(object)]));
    announce(`Sync started: ${answer.body.enqueued} job${answer.body.enqueued === 1 ? '' : 's'} queued.`);
    void poll();
  });

  // ---- addresses to copy ----
  const credentialsShown = h('div', { 'aria-live': 'polite' });
  async function drawAddresses() {
    const parts = [h('h2', { id: 'addresses-title' }, 'Addresses to copy')];
    const callbackUrl = description.capabilities.callbackUrl;
    if (callbackUrl) {
      parts.push(
        copyField('OAuth callback address', callbackUrl, { name: 'callback' }),
        h('p', { class: 'hint' }, `Register exactly this address as the callback of the OAuth client (connected app) on the ${platform}.`),
      );
    }
    if (description.capabilities.webhooks) {
      const answer = await call('GET', `${accountPath(accountId)}/webhooks`);
      const endpoint = answer.ok ? answer.body.webhooks.find((w) => w.connector === name) : undefined;
      if (!endpoint) parts.push(h('p', { class: 'panel danger' }, answer.ok ? 'No webhook address.' : problemText(answer.problem)));
      else {
        parts.push(
          copyField('Webhook address', endpoint.url, { name: 'webhook' }),
          h('p', { class: 'hint' }, `Add it as a webhook endpoint on the ${platform}, and select these events:`),
          h('ul', { class: 'tags', 'aria-label': 'Events to select' }, endpoint.events.map((event) => h('li', {}, h('code', {}, event)))),
          endpoint.ready ? h('p', {}, badge('healthy', 'Ready'), ' Deliveries can be verified.') : undefined,
          endpoint.notes.length ? h('div', { class: 'panel warning' }, endpoint.notes.map((note) => h('p', {}, note))) : undefined,
        );
        if (name === 'billing' && connection) parts.push(billingCredentials(endpoint));
      }
    }
    if (parts.length === 1) parts.push(h('p', { class: 'muted' }, `The ${platform} needs no address from the gateway.`));
    addressesCard.replaceChildren(...parts.filter(Boolean));
  }

  /** The billing webhook's Basic credentials: made here, the password shown once. */
  function billingCredentials(endpoint) {
    const create = h('button', { type: 'button', id: 'webhook-credentials' }, endpoint.username ? 'Replace the webhook credentials' : 'Create webhook credentials');
    create.addEventListener('click', async () => {
      if (endpoint.username) {
        const confirmed = await confirmDialog({
          title: 'Replace the webhook credentials?',
          body: h('p', {}, `The current password stops working at once: enter the new one on the ${platform} straight after.`),
          confirm: 'Replace',
        });
        if (!confirmed) return;
      }
      const answer = await call('POST', `${path}/webhook-credentials`);
      if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
      credentialsShown.replaceChildren(
        h(
          'div',
          { class: 'panel once', id: 'webhook-credentials-once' },
          h('h3', {}, 'Webhook credentials'),
          h('p', {}, `Enter these as the webhook's Basic authentication on the ${platform} now: the password is shown this once.`),
          copyField('Username', answer.body.username, { name: 'webhook-username' }),
          copyField('Password', answer.body.password, { secret: true, name: 'webhook-password' }),
          h('button', { type: 'button', class: 'small', onclick: () => credentialsShown.replaceChildren() }, 'Done: hide the password'),
        ),
      );
      announce('Webhook credentials created. The password is shown once.');
      await refresh({ keepAddresses: true });
    });
    return h(
      'div',
      { class: 'copy-block' },
      h('h3', {}, 'Webhook Basic authentication'),
      endpoint.username ? h('p', { class: 'small' }, 'Username ', h('span', { class: 'mono' }, endpoint.username), connection?.maskedSecrets.webhookPassword ? `, password ${connection.maskedSecrets.webhookPassword}` : '') : undefined,
      h('div', { class: 'actions' }, create),
      credentialsShown,
    );
  }

  // ---- the data connector: ingestion ----
  function drawIngestion() {
    if (name !== 'data') return;
    const download = h('button', { type: 'button', id: 'download-ingestion-schema' }, 'Download the ingestion schema');
    download.addEventListener('click', async () => {
      const answer = await call('GET', `${path}/ingestion-schema`, { raw: true });
      if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
      const link = h('a', { href: URL.createObjectURL(new Blob([answer.body], { type: 'application/json' })), download: 'engagement-event-ingestion.openapi.json' });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      announce('Ingestion schema downloaded.');
    });
    extraCards.replaceChildren(
      h(
        'section',
        { class: 'card', id: 'ingestion', 'aria-labelledby': 'ingestion-title' },
        h('h2', { id: 'ingestion-title' }, 'Ingestion'),
        h('p', {}, 'Upload this OpenAPI 3.0 document to an ingestion connector on the data platform, then create a data stream from it: engagement events take effect only through a data stream.'),
        h('div', { class: 'actions' }, download),
        h('div', { class: 'card-header' }, h('h3', {}, 'Recent ingestion outcome'), h('button', { type: 'button', class: 'small', onclick: () => void loadDeliveries() }, 'Refresh')),
        deliveriesBox,
      ),
    );
  }

  const deliveriesBox = h('div', { id: 'deliveries', 'aria-live': 'polite' });
  const FREQUENCY_WORDS = { real_time: 'sent as they come', hourly: 'held and sent every hour', daily: 'held and sent once a day' };
  /** What became of the engagement events the playbooks sent, over the last 24 hours. */
  async function loadDeliveries() {
    if (name !== 'data' || !connection) return deliveriesBox.replaceChildren(h('p', { class: 'muted' }, 'Connect the data platform to see its deliveries.'));
    const answer = await call('GET', `${path}/deliveries?hours=24`);
    if (!answer.ok) {
      const missing = answer.status === 404 && /^No API operation/.test(answer.problem?.detail ?? '');
      return deliveriesBox.replaceChildren(h('p', { class: missing ? 'muted' : 'panel danger' }, missing ? 'This version of the gateway does not record ingestion outcomes.' : problemText(answer.problem)));
    }
    const { frequency, heldNow, hours } = answer.body;
    const total = (key) => hours.reduce((sum, hour) => sum + hour[key], 0);
    const facts = h('dl', { class: 'facts counts' });
    const add = (term, value, key) => facts.append(h('dt', {}, term), h('dd', { dataset: key ? { count: key } : {} }, value));
    add('Waiting to be sent', String(heldNow), 'held');
    add('Sent (24 h)', String(total('sent')), 'sent');
    add('Retried (24 h)', String(total('retried')), 'retried');
    add('Refused by the platform (24 h)', String(total('refused')), 'refused');
    add('Gave up, in the dead-letter queue (24 h)', String(total('deadLettered')), 'deadLettered');
    const busy = hours.filter((hour) => hour.accepted || hour.sent || hour.refused || hour.deadLettered || hour.retried);
    const parts = [
      h('p', {}, `Engagement events are ${FREQUENCY_WORDS[frequency] ?? humanize(frequency)}.`),
      facts,
      total('deadLettered') ? h('p', { class: 'panel warning' }, 'Some events were refused again and again: they are in the ingestion dead-letter queue. Check the data stream’s schema matches the ingestion document above, then replay them.') : undefined,
      busy.length
        ? table(
            'Engagement events per hour',
            ['Hour', 'Accepted', 'Sent', 'Refused', 'Dead-lettered'],
            busy.map((hour) =>
              h(
                'tr',
                {},
                h('td', { title: new Date(hour.hour).toLocaleString() }, new Date(hour.hour).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })),
                ...['accepted', 'sent', 'refused', 'deadLettered'].map((key) => h('td', { class: 'num' }, String(hour[key]))),
              ),
            ),
            { numeric: [1, 2, 3, 4] },
          )
        : h('p', { class: 'empty' }, 'No engagement events in the last 24 hours.'),
    ];
    deliveriesBox.replaceChildren(...parts.filter(Boolean));
  }

  // ---- the messaging connector: conversations and transcripts ----
  const CONVERSATION_STATE_WORDS = { starting: 'Starting', queued: 'Queued', active: 'Active', ended: 'Ended', transcribed: 'Transcribed', failed: 'Failed' };
  const CONVERSATION_BADGE = { starting: 'queued', queued: 'queued', active: 'running', ended: 'idle', transcribed: 'idle', failed: 'failed' };
  const conversationsBody = h('div');
  const transcriptBox = h('div', { id: 'transcript', 'aria-live': 'polite' });
  let conversationFilter = 'live';

  let loadingConversations;
  /** One look at a time (the timer and the filter buttons may ask together). */
  function loadConversations() {
    loadingConversations ??= readConversations().finally(() => (loadingConversations = undefined));
    return loadingConversations;
  }

  async function readConversations() {
    const answer = await call('GET', `${accountPath(accountId)}/conversations?state=${conversationFilter}&limit=25`);
    if (!answer.ok) {
      conversationsBody.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
      return false;
    }
    const list = answer.body.conversations;
    if (list.length === 0) {
      conversationsBody.replaceChildren(h('p', { class: 'empty' }, conversationFilter === 'live' ? 'No live conversations right now.' : 'No conversations yet.'));
      return true;
    }
    conversationsBody.replaceChildren(
      table(
        `Conversations (${conversationFilter === 'live' ? 'live' : 'recent'})`,
        ['Started', 'State', 'Direction', 'Contact', 'Agent', 'Transcript'],
        list.map((conversation) =>
          h(
            'tr',
            { dataset: { conversation: conversation.id, state: conversation.state } },
            h('td', {}, when(conversation.startedAt)),
            h(
              'td',
              {},
              badge(CONVERSATION_BADGE[conversation.state] ?? 'off', CONVERSATION_STATE_WORDS[conversation.state] ?? humanize(conversation.state)),
              conversation.handedOff ? h('div', { class: 'muted small' }, `Handed off to ${conversation.handedOff.queue}`) : undefined,
              conversation.endReason ? h('div', { class: 'muted small' }, `Ended by ${humanize(conversation.endReason).toLowerCase()}`) : undefined,
            ),
            h('td', {}, conversation.direction ? humanize(conversation.direction) : '—'),
            h('td', { class: 'mono' }, conversation.contactId ?? '—'),
            h('td', {}, conversation.agentName ?? '—'),
            h('td', {}, h('button', { type: 'button', class: 'small', 'aria-label': `Read the transcript of the conversation started ${new Date(conversation.startedAt).toLocaleString()}`, onclick: () => void showTranscript(conversation.id) }, 'Read')),
          ),
        ),
      ),
    );
    return list.some((conversation) => ['starting', 'queued', 'active'].includes(conversation.state));
  }

  async function showTranscript(conversationId) {
    const answer = await call('GET', `${accountPath(accountId)}/conversations/${encodeURIComponent(conversationId)}/transcript`);
    if (!answer.ok) return transcriptBox.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
    const transcript = answer.body;
    const outcomeWords = {
      stored: `Stored, and written to the session's ${transcript.outcome?.field ?? 'transcript'} field.`,
      field_missing: 'Kept by the gateway only: the session has no transcript field. What to do: configure the transcript field mapping.',
      not_written: `Kept by the gateway only: ${transcript.outcome?.reason ?? 'it could not be written to the session'}.`,
      disabled: 'Transcript storage is off in the settings.',
    };
    transcriptBox.replaceChildren(
      h(
        'div',
        { class: 'panel', id: `transcript-${conversationId}` },
        h('h3', { tabindex: '-1' }, 'Transcript'),
        transcript.outcome ? h('p', { class: 'small' }, outcomeWords[transcript.outcome.state] ?? humanize(transcript.outcome.state)) : h('p', { class: 'small muted' }, 'The conversation is still going: these are its messages so far.'),
        transcript.entries.length
          ? h(
              'ol',
              { class: 'event-list' },
              transcript.entries.map((entry) =>
                h(
                  'li',
                  { dataset: { direction: entry.direction } },
                  h('div', { class: 'muted small' }, `${entry.senderName ?? humanize(entry.sender)} · `, when(entry.at)),
                  entry.type === 'system' ? h('em', {}, entry.systemEvent ?? entry.text ?? 'System event') : entry.media ? h('span', {}, `${entry.text ?? ''} [${entry.media.name ?? entry.media.mimeType}]`) : h('span', {}, entry.text ?? ''),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No messages.'),
      ),
    );
    transcriptBox.querySelector('h3')?.focus();
  }

  function drawConversations() {
    if (name !== 'messaging' || !connection) return;
    const filters = ['live', 'all'].map((filter) => {
      const button = h('button', { type: 'button', class: 'small', 'aria-pressed': String(conversationFilter === filter) }, filter === 'live' ? 'Live' : 'Recent');
      button.addEventListener('click', async () => {
        conversationFilter = filter;
        for (const other of button.parentElement.children) other.setAttribute('aria-pressed', String(other === button));
        await loadConversations();
      });
      return button;
    });
    wideCards.replaceChildren(
      h(
        'section',
        { class: 'card', id: 'conversations', 'aria-labelledby': 'conversations-title' },
        h('div', { class: 'card-header' }, h('h2', { id: 'conversations-title' }, 'Conversations'), h('div', { class: 'actions', role: 'group', 'aria-label': 'Which conversations' }, filters)),
        conversationsBody,
        transcriptBox,
      ),
    );
    // Conversations start and change by themselves: look again every 5 s while the page is open.
    const watch = async () => {
      await loadConversations();
      if (document.body.contains(conversationsBody)) timers.add(setTimeout(() => void watch(), 5_000));
    };
    void watch();
  }

  // ---- Disconnect ----
  function drawDisconnect() {
    if (!connection) return (disconnectCard.hidden = true);
    disconnectCard.hidden = false;
    const button = h('button', { type: 'button', class: 'danger', id: 'disconnect-button' }, `Disconnect the ${platform}`);
    button.addEventListener('click', async () => {
      const labels = fieldLabels(description.connectionForm);
      const secrets = Object.entries(connection.maskedSecrets).map(([field, masked]) => `${labels.fields[field]?.title ?? humanize(field)} (${masked})`);
      const objectTitles = syncObjects.map((object) => settingsSchema.properties?.dataObjects?.['x-option-titles']?.[object] ?? humanize(object));
      const confirmed = await confirmDialog({
        title: `Disconnect the ${platform}?`,
        body: [
          h('p', {}, 'This deletes, for this account:'),
          h(
            'ul',
            {},
            h('li', {}, `the stored credentials${secrets.length ? `: ${secrets.join(', ')}` : ''}`),
            h('li', {}, 'the connection’s settings, and where each sync stood'),
            objectTitles.length ? h('li', {}, `every record synced from it: ${objectTitles.join(', ').toLowerCase()}`) : undefined,
            description.capabilities.revokesOnDisconnect ? h('li', {}, `the gateway’s access on the ${platform} (its refresh token is revoked)`) : undefined,
          ),
          description.capabilities.webhooks ? h('p', {}, `Webhooks the ${platform} still sends are refused: remove the endpoint there too.`) : undefined,
          h('p', {}, 'Playbooks stop getting its data. To use it again, connect it again.'),
        ],
        confirm: 'Disconnect',
      });
      if (!confirmed) return;
      const answer = await call('DELETE', path);
      if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
      connection = undefined;
      showOutcome('info', `The ${platform} is disconnected.`, [syncObjects.length ? 'Its credentials are deleted; its synced records are being removed.' : 'Its credentials are deleted.']);
      announce(`The ${platform} is disconnected.`);
      await refresh();
    });
    disconnectCard.replaceChildren(
      h('h2', { id: 'disconnect-title' }, 'Disconnect'),
      h('p', { class: 'muted' }, `Deletes the credentials${syncObjects.length ? ' and the synced data' : ''} of this connection. You are asked to confirm first.`),
      button,
    );
  }

  // ---- loading ----
  async function loadConnection() {
    const answer = await call('GET', path);
    if (answer.ok) return answer.body;
    if (answer.status === 404) return undefined;
    throw new Error(problemText(answer.problem));
  }

  async function refresh({ keepAddresses = false } = {}) {
    try {
      connection = await loadConnection();
    } catch (error) {
      showOutcome('danger', 'The connection could not be read', [error.message], [h('button', { type: 'button', class: 'small', onclick: () => void refresh() }, 'Try again')]);
      return;
    }
    drawHealth();
    drawConnection();
    // A form nobody is editing is drawn again from the saved connection (its values, its masked secrets).
    if (!form || connectForm.hidden) drawForm();
    showForm(!connection);
    drawSettings();
    drawSyncsFrame();
    drawDisconnect();
    drawConversations();
    void loadDeliveries();
    if (!keepAddresses) await drawAddresses();
    else await drawAddressesKeepingShown();
    if (connection && syncObjects.length) {
      const seen = await loadSyncs();
      if (seen?.active) void poll();
    }
  }

  async function drawAddressesKeepingShown() {
    const shown = [...credentialsShown.childNodes];
    await drawAddresses();
    credentialsShown.replaceChildren(...shown);
  }

  drawIngestion();
  await refresh();

  // Back from the platform's sign-in (OAuth authorization code): say how it went.
  const returned = takeOAuthOutcome(name);
  if (returned) {
    showOutcome(returned.ok ? 'success' : 'danger', returned.ok ? `Connected to the ${platform}.` : `Connecting the ${platform} did not finish.`, [returned.message]);
    announce(returned.message, { problem: !returned.ok });
  }
  if (connection?.health.state === 'needs_reconnect' && !returned) {
    showOutcome('danger', 'This connection needs to be reconnected', [connection.health.reason, connection.health.remedy && `What to do: ${connection.health.remedy}`], [h('button', { type: 'button', class: 'primary small', onclick: () => showForm(true, { focus: true }) }, 'Reconnect')]);
  }

  return () => {
    for (const timer of timers) clearTimeout(timer);
  };
}

/** Labels for stored config fields and methods, from the form's schema (all variants). */
function fieldLabels(schema) {
  const fields = {};
  const methods = {};
  for (const variant of variantsOf(schema)) {
    if (variant.method) methods[variant.method] = variant.methodTitle;
    for (const [field, prop] of Object.entries(variant.schema.properties ?? {})) fields[field] ??= { title: prop.title, options: prop['x-option-titles'] };
  }
  return { fields, methods };
}
