// The operator's view: every account, a form to create one, and the switch for each account's Integrations
// section (the spec: absent until the operator's support contact enables it).

import { accountPath, call, problemText } from './api.js';
import { announce, h, table, when } from './dom.js';
import { schemaForm } from './forms.js';

/** The create form's fields, drawn like the connector forms (labels, hints, messages beside fields). */
const NEW_ACCOUNT = {
  type: 'object',
  properties: {
    accountId: { type: 'string', title: 'Account id', description: 'Lower-case letters, digits and dashes; users are invited with it. It cannot change.' },
    name: { type: 'string', title: 'Name', description: 'As your team calls the customer.' },
    integrationsEnabled: { type: 'boolean', title: 'Integrations section', default: false, 'x-option-titles': { true: 'On', false: 'Off' } },
  },
  required: ['accountId', 'name'],
};

export async function show(main) {
  const rows = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'Show more accounts');
  let cursor;

  const list = h('div', {}, h('div', { class: 'loading' }, 'Loading accounts…'));
  const form = h('form', { class: 'stack', novalidate: true, 'aria-labelledby': 'new-account-title' });
  const fields = h('div');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create account');
  form.append(fields, h('div', { class: 'actions' }, submit));
  const controller = schemaForm(fields, { schema: NEW_ACCOUNT, idPrefix: 'new-account' });

  main.replaceChildren(
    h('div', { class: 'page-header' }, h('div', {}, h('h1', {}, 'Accounts'), h('p', { class: 'muted' }, 'Each customer account, and whether its users see the Integrations section.'))),
    h('div', { class: 'split' }, h('section', { class: 'card', 'aria-labelledby': 'accounts-title' }, h('h2', { id: 'accounts-title' }, 'All accounts'), list, more), h('section', { class: 'card', 'aria-labelledby': 'new-account-title' }, h('h2', { id: 'new-account-title' }, 'New account'), form)),
  );

  function row(account) {
    const toggle = h(
      'button',
      { type: 'button', role: 'switch', class: 'switch', 'aria-checked': String(account.integrationsEnabled), 'aria-label': `Integrations for ${account.name}` },
      h('span', { class: 'track', 'aria-hidden': 'true' }),
      h('span', { class: 'state' }, account.integrationsEnabled ? 'On' : 'Off'),
    );
    toggle.addEventListener('click', async () => {
      const enabled = toggle.getAttribute('aria-checked') !== 'true';
      toggle.disabled = true;
      const answer = await call('PUT', accountPath(account.accountId), { body: { name: account.name, integrationsEnabled: enabled } });
      toggle.disabled = false;
      if (!answer.ok) return announce(`Could not switch Integrations for ${account.name}: ${problemText(answer.problem)}`, { problem: true });
      Object.assign(account, answer.body);
      toggle.setAttribute('aria-checked', String(account.integrationsEnabled));
      toggle.querySelector('.state').textContent = account.integrationsEnabled ? 'On' : 'Off';
      announce(`Integrations are ${account.integrationsEnabled ? 'on' : 'off'} for ${account.name}.`);
    });
    return h(
      'tr',
      { dataset: { account: account.accountId } },
      h('td', {}, h('a', { href: `#/accounts/${encodeURIComponent(account.accountId)}` }, account.name), h('div', { class: 'muted small mono' }, account.accountId)),
      h('td', {}, toggle),
      h('td', {}, when(account.updatedAt)),
      h('td', {}, h('a', { class: 'button small', href: `#/accounts/${encodeURIComponent(account.accountId)}`, 'aria-label': `Open ${account.name}` }, 'Open')),
    );
  }

  async function load(append = false) {
    const answer = await call('GET', `/api/v1/accounts?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (!answer.ok) {
      list.replaceChildren(h('div', { class: 'panel danger', role: 'alert' }, h('p', {}, problemText(answer.problem)), h('button', { type: 'button', onclick: () => void load() }, 'Try again')));
      return;
    }
    if (!append) rows.replaceChildren();
    rows.append(...answer.body.accounts.map(row));
    cursor = answer.body.nextCursor;
    more.hidden = !cursor;
    if (!rows.children.length) return list.replaceChildren(h('p', { class: 'empty' }, 'No accounts yet. Create the first one.'));
    const accounts = table('Accounts', ['Account', 'Integrations', 'Updated', 'Open'], []);
    accounts.querySelector('tbody').replaceWith(rows);
    list.replaceChildren(accounts);
  }
  more.addEventListener('click', () => void load(true));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = controller.collect();
    if (!body) return announce('Check the highlighted fields.', { problem: true, toast: false });
    submit.disabled = true;
    // PUT also updates: make sure "create" never overwrites an account that exists.
    const existing = /^[a-z0-9][a-z0-9-]{1,62}$/.test(body.accountId) ? await call('GET', accountPath(body.accountId)) : undefined;
    if (existing?.ok) {
      submit.disabled = false;
      controller.showErrors([{ path: 'accountId', message: `There is already an account ${body.accountId} (${existing.body.name}): open it from the list.` }]);
      return announce('That account id is taken.', { problem: true, toast: false });
    }
    const answer = await call('PUT', accountPath(body.accountId), { body: { name: body.name, integrationsEnabled: body.integrationsEnabled ?? false } });
    submit.disabled = false;
    if (!answer.ok) {
      // A bad account id comes back as a path parameter problem; it belongs beside the same field.
      controller.showErrors(answer.problem.errors ?? []);
      if (!answer.problem.errors?.length) controller.showFormError(problemText(answer.problem));
      return announce(problemText(answer.problem), { problem: true, toast: false });
    }
    announce(`Account ${answer.body.name} saved.`);
    form.reset();
    cursor = undefined;
    await load();
  });

  await load();
}

