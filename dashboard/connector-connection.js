// The connector page's Connection card: Connect Account (the method's fields, or the platform's sign-in for
// OAuth), what is saved, and Test Connection with the health it finds (shown in the page's header).

import { call, problemText } from './api.js';
import { announce, badge, h, healthBadge, humanize, when } from './dom.js';
import { whileBusy } from './busy.js';
import { schemaForm, variantsOf } from './forms.js';

/** Labels for stored config fields and methods, from the form's schema (all variants). */
export function fieldLabels(schema) {
  const fields = {};
  const methods = {};
  for (const variant of variantsOf(schema)) {
    if (variant.method) methods[variant.method] = variant.methodTitle;
    for (const [field, prop] of Object.entries(variant.schema.properties ?? {})) fields[field] ??= { title: prop.title, options: prop['x-option-titles'] };
  }
  return { fields, methods };
}

/** A small "Reconnect" button that opens the Connect Account form again. */
export function reconnectButton(page) {
  return h('button', { type: 'button', class: 'primary small', onclick: () => page.showForm(true, { focus: true }) }, 'Reconnect');
}

/** Test Connection (the header's button) and the health badge beside the title. */
export function testConnectionSection(page, { testButton, testNote, headerBadge }) {
  const { path, platform } = page;

  async function testConnection() {
    if (!page.connection) return;
    const answer = await whileBusy(testButton, 'Testing…', testNote, `Still waiting for the ${platform}: its answers can take a while.`, (signal) => call('POST', `${path}/test`, { signal }));
    if (!answer.ok) {
      page.showOutcome('danger', answer.aborted ? 'Stopped waiting' : 'Test Connection could not run', [problemText(answer.problem)], [testAgainButton()]);
      return announce(problemText(answer.problem), { problem: true, toast: false });
    }
    const result = answer.body;
    page.connection.health = result.health;
    drawHealth();
    if (result.ok) {
      page.showOutcome('success', 'Test Connection succeeded: the connection works.', [`Checked ${new Date(result.health.checkedAt).toLocaleTimeString()}.`]);
      return announce(`Test Connection succeeded for the ${platform}.`);
    }
    const reconnect = result.health.state === 'needs_reconnect';
    page.showOutcome(
      reconnect ? 'danger' : 'warning',
      `Test Connection failed: ${reconnect ? 'needs reconnect' : 'degraded'}`,
      [result.health.reason, result.health.remedy && h('p', {}, h('strong', {}, 'What to do: '), result.health.remedy), result.platformMessage && h('p', { class: 'small muted' }, `The ${platform} said: ${result.platformMessage}`)],
      reconnect ? [reconnectButton(page)] : [testAgainButton()],
    );
    announce(`Test Connection failed. ${result.health.reason ?? ''} What to do: ${result.health.remedy ?? ''}`, { problem: true, toast: false });
  }
  testButton.addEventListener('click', () => void testConnection());

  function testAgainButton() {
    return h('button', { type: 'button', class: 'small', onclick: () => void testConnection() }, 'Test Connection');
  }

  function drawHealth() {
    headerBadge.replaceChildren(page.connection ? healthBadge(page.connection.health) : badge('off', 'Not connected'));
    testButton.hidden = !page.connection;
  }

  return { drawHealth, testAgainButton };
}

/** Connect Account may have run Test Connection already: say what it found. */
function testedLine(view) {
  const state = view.health?.state;
  if (state === 'healthy') {
    const jobs = view.firstSync?.enqueued;
    return jobs ? `Test Connection succeeded, and the first sync has started (${jobs === 1 ? 'one data object' : `${jobs} data objects`}): see Syncs.` : 'Test Connection succeeded.';
  }
  if (state === 'degraded' || state === 'needs_reconnect') return [view.health.reason, view.health.remedy && `What to do: ${view.health.remedy}`].filter(Boolean).join(' ');
  return 'Run Test Connection to check it.';
}

/** What is saved for the connection, in the form's own words (secrets masked). */
function connectionFacts(description, connection) {
  const facts = h('dl', { class: 'facts' });
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
  return facts;
}

/** The Connection card: what is saved, and the Connect Account form (hidden while a connection is saved). */
export function connectAccountSection(page, { card, test }) {
  const { description, name, path, platform, title } = page;
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
    const { connection } = page;
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
    connectButton.textContent = browser ? `Continue to the ${platform} sign-in` : page.connection ? 'Reconnect' : 'Connect Account';
    authorizationHint.hidden = !browser;
    authorizationHint.textContent = browser
      ? `You will sign in on the ${platform} and approve the gateway; you come back here with the outcome. The OAuth client must have the callback address shown under "Addresses to copy".`
      : '';
  }

  function showForm(visible, { focus = false } = {}) {
    connectForm.hidden = !visible;
    formHeading.hidden = !page.connection;
    changeButton.hidden = visible || !page.connection;
    cancelButton.hidden = !page.connection;
    if (!focus) return;
    if (visible) connectForm.querySelector('input:not([type=hidden]), textarea, select')?.focus();
    else changeButton.focus();
  }

  /** The answer refused the form: each field's problem beside it, or the whole form's. */
  function showRefusal(problem) {
    if (problem.errors?.length) {
      form.showErrors(problem.errors);
      announce(`${problem.errors.length === 1 ? 'A field needs' : 'Some fields need'} attention: ${problem.errors.map((e) => e.message).join(' ')}`, { problem: true, toast: false });
    } else {
      form.showFormError(problemText(problem));
      announce(problemText(problem), { problem: true, toast: false });
    }
  }

  /** Saved: say what the test Connect Account ran found. */
  function showSaved(view) {
    const warnings = view.warnings ?? [];
    const health = view.health ?? {};
    if (health.state === 'needs_reconnect' || health.state === 'degraded') {
      // Saved (a reconnect with the right credentials fixes it); the test that Connect ran says what is wrong.
      page.showOutcome(
        health.state === 'needs_reconnect' ? 'danger' : 'warning',
        'Saved, but Test Connection failed',
        [...warnings.map((w) => `Warning: ${w}`), health.reason, health.remedy && h('p', {}, h('strong', {}, 'What to do: '), health.remedy)],
        health.state === 'needs_reconnect' ? [reconnectButton(page)] : [test.testAgainButton()],
      );
      announce(`Saved, but Test Connection failed. ${health.reason ?? ''} What to do: ${health.remedy ?? ''}`, { problem: true, toast: false });
    } else {
      page.showOutcome(warnings.length ? 'warning' : 'success', 'Connected.', [...warnings.map((w) => `Warning: ${w}`), testedLine(view)], [test.testAgainButton()]);
      announce(`The ${platform} is connected.${warnings.length ? ` ${warnings.join(' ')}` : ''}`);
    }
  }

  connectForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = form.collect();
    if (!body) return announce('Check the highlighted fields.', { problem: true, toast: false });
    const browser = body.authenticationMethod === 'authorization_code';
    const answer = await whileBusy(connectButton, browser ? 'Starting…' : 'Connecting…', connectNote, `Waiting for the ${platform}…`, (signal) =>
      call('PUT', `${path}${browser ? '?returnTo=%2F' : ''}`, { body, signal }),
    );
    if (!answer.ok) return showRefusal(answer.problem);
    if (answer.status === 202 && answer.body.authorizationUrl) {
      // The browser goes to the platform; the callback brings it back here with the outcome.
      sessionStorage.setItem('dashboard.returnRoute', location.hash);
      page.showOutcome('info', `Taking you to the ${platform} to sign in…`, [`Sign in there and approve the gateway within 10 minutes.`]);
      location.assign(answer.body.authorizationUrl);
      return;
    }
    form.clearSecrets();
    page.connection = answer.body;
    showSaved(answer.body);
    showForm(false);
    await page.refresh();
    if (answer.body.firstSync) page.firstSyncStarted();
  });

  function drawConnection() {
    if (page.connection) summary.replaceChildren(connectionFacts(description, page.connection), h('div', { class: 'actions' }, changeButton));
    else summary.replaceChildren(h('p', { class: 'muted' }, `Not connected. Enter the ${platform}'s details to connect it.`));
  }

  /** The saved connection, and a form drawn again from it unless someone is editing it. */
  function draw() {
    drawConnection();
    // A form nobody is editing is drawn again from the saved connection (its values, its masked secrets).
    if (!form || connectForm.hidden) drawForm();
    showForm(!page.connection);
  }

  card.replaceChildren(connectTitle, summary, connectForm);
  return { draw, showForm };
}
