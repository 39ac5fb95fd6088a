// One connector of one account. The page is drawn from its sections, each in its own module: the connection
// (Connect Account, Test Connection, health: connector-connection.js), the addresses to copy into the platform
// (connector-addresses.js), the syncs and their settings (connector-syncs.js), the data connector's ingestion
// (connector-ingestion.js), the messaging connector's conversations (connector-conversations.js), and
// Disconnect (connector-disconnect.js). This module lays them out and draws them again from the saved connection.

import { breadcrumb, platformIcon, platformTitle } from './account-view.js';
import { connectorDescriptions, takeOAuthOutcome } from './app.js';
import { accountPath, call, connectionPath, problemText } from './api.js';
import { announce, h } from './dom.js';
import { resolved } from './forms.js';
import { addressesSection } from './connector-addresses.js';
import { connectAccountSection, reconnectButton, testConnectionSection } from './connector-connection.js';
import { conversationsSection } from './connector-conversations.js';
import { disconnectSection } from './connector-disconnect.js';
import { ingestionSection } from './connector-ingestion.js';
import { settingsSection, syncsSection } from './connector-syncs.js';
import { historyView } from './history-view.js';

/** The account and the connector's description, or a page that says why they cannot be shown. */
async function pageSubject(main, accountId, name) {
  const [descriptions, account] = await Promise.all([connectorDescriptions().catch((error) => error), call('GET', accountPath(accountId))]);
  if (descriptions instanceof Error || !account.ok) {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'This page cannot be shown'), h('p', {}, descriptions instanceof Error ? descriptions.message : problemText(account.problem))));
    return undefined;
  }
  const description = descriptions.find((d) => d.name === name);
  if (!description) {
    main.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('h1', {}, 'No such connector'), h('p', {}, `The gateway offers ${descriptions.map((d) => d.name).join(', ')}.`)));
    return undefined;
  }
  if (!account.body.integrationsEnabled) {
    location.replace(`#/accounts/${encodeURIComponent(accountId)}`);
    return undefined;
  }
  return { account: account.body, description };
}

/** The page's frame: header (title, health, Test Connection), the outcome line, and an empty place per section. */
function frame(main, { account, accountId, name, title, user, description }) {
  const parts = {
    headerBadge: h('span'),
    outcome: h('div', { id: 'connector-outcome', role: 'status', 'aria-live': 'polite' }),
    testNote: h('div', { hidden: true }),
    testButton: h('button', { type: 'button', id: 'test-connection' }, 'Test Connection'),
    connectionCard: h('section', { class: 'card', id: 'connection', 'aria-labelledby': 'connection-title' }),
    settingsCard: h('section', { class: 'card', id: 'settings', 'aria-labelledby': 'settings-title' }),
    syncsCard: h('section', { class: 'card', id: 'syncs', 'aria-labelledby': 'syncs-title' }),
    addressesCard: h('section', { class: 'card', id: 'addresses', 'aria-labelledby': 'addresses-title' }),
    extraCards: h('div'),
    wideCards: h('div'),
    disconnectCard: h('section', { class: 'card', id: 'disconnect', 'aria-labelledby': 'disconnect-title' }),
  };
  const crumbs = [...(user.operator ? [['Accounts', '#/accounts']] : []), [account.name, `#/accounts/${encodeURIComponent(accountId)}`], [title]];
  main.replaceChildren(
    h(
      'div',
      { class: 'page-header' },
      h('div', {}, breadcrumb(crumbs), h('h1', { class: 'actions' }, platformIcon(name), title), h('p', { class: 'muted' }, parts.headerBadge)),
      h('div', { class: 'actions' }, parts.testButton),
    ),
    parts.testNote,
    parts.outcome,
    h('div', { class: 'split' }, h('div', {}, parts.connectionCard), h('div', {}, parts.addressesCard)),
    parts.syncsCard,
    parts.wideCards,
    historyView({ accountId, connector: name, capabilities: description.capabilities, conversations: name === 'messaging' }),
    h('div', { class: 'split' }, h('div', {}, parts.settingsCard), h('div', {}, parts.extraCards, parts.disconnectCard)),
  );
  return parts;
}

export async function show(main, { accountId, connector: name, user }) {
  const subject = await pageSubject(main, accountId, name);
  if (!subject) return;
  const { account, description } = subject;
  const title = platformTitle(description);
  const parts = frame(main, { account, accountId, name, title, user, description });

  /** What every section shares: the connector, its addresses, and the saved connection (undefined if none). */
  const page = {
    accountId,
    name,
    description,
    title,
    platform: description.platform,
    path: connectionPath(accountId, name),
    settingsSchema: resolved(description.settings),
    syncObjects: description.capabilities.sync?.objects ?? [],
    timers: new Set(),
    connection: undefined,
    showOutcome(kind, heading, lines = [], actions = []) {
      parts.outcome.replaceChildren(h('div', { class: `panel ${kind}` }, h('h3', {}, heading), ...lines.filter(Boolean).map((line) => (line instanceof Node ? line : h('p', {}, line))), actions.length ? h('div', { class: 'actions' }, actions) : undefined));
    },
    refresh,
    /** Connect Account started the first sync: the Syncs card follows it. */
    firstSyncStarted: () => syncs.watchStarted(),
    showForm: (visible, options) => connect.showForm(visible, options),
  };

  const test = testConnectionSection(page, parts);
  const connect = connectAccountSection(page, { card: parts.connectionCard, test });
  const addresses = addressesSection(page, { card: parts.addressesCard });
  const settings = settingsSection(page, { card: parts.settingsCard, onSaved: () => addresses.draw() });
  const syncs = syncsSection(page, { card: parts.syncsCard });
  const ingestion = ingestionSection(page, { cards: parts.extraCards });
  const conversations = conversationsSection(page, { cards: parts.wideCards });
  const disconnect = disconnectSection(page, { card: parts.disconnectCard });

  async function loadConnection() {
    const answer = await call('GET', page.path);
    if (answer.ok) return answer.body;
    if (answer.status === 404) return undefined;
    throw new Error(problemText(answer.problem));
  }

  async function refresh({ keepAddresses = false } = {}) {
    try {
      page.connection = await loadConnection();
    } catch (error) {
      page.showOutcome('danger', 'The connection could not be read', [error.message], [h('button', { type: 'button', class: 'small', onclick: () => void refresh() }, 'Try again')]);
      return;
    }
    test.drawHealth();
    connect.draw();
    settings.draw();
    syncs.drawFrame();
    disconnect.draw();
    conversations.draw();
    void ingestion.loadDeliveries();
    if (!keepAddresses) await addresses.draw();
    else await addresses.drawKeepingShown();
    await syncs.resume();
  }

  ingestion.draw();
  await refresh();

  // Back from the platform's sign-in (OAuth authorization code): say how it went.
  const { connection } = page;
  const returned = takeOAuthOutcome(name);
  if (returned) {
    page.showOutcome(returned.ok ? 'success' : 'danger', returned.ok ? `Connected to the ${page.platform}.` : `Connecting the ${page.platform} did not finish.`, [returned.message]);
    announce(returned.message, { problem: !returned.ok });
  }
  if (connection?.health.state === 'needs_reconnect' && !returned) {
    page.showOutcome('danger', 'This connection needs to be reconnected', [connection.health.reason, connection.health.remedy && `What to do: ${connection.health.remedy}`], [reconnectButton(page)]);
  }

  return () => {
    for (const timer of page.timers) clearTimeout(timer);
  };
}
