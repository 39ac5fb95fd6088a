// The connector page's "Addresses to copy" card: the OAuth callback address, the webhook address with the
// events to select, and the billing webhook's Basic credentials (made here, the password shown once).

import { accountPath, call, problemText } from './api.js';
import { announce, badge, confirmDialog, copyField, h } from './dom.js';

export function addressesSection(page, { card }) {
  const { accountId, description, name, path, platform } = page;
  const credentialsShown = h('div', { 'aria-live': 'polite' });

  async function draw() {
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
        if (name === 'billing' && page.connection) parts.push(billingCredentials(endpoint));
      }
    }
    if (parts.length === 1) parts.push(h('p', { class: 'muted' }, `The ${platform} needs no address from the gateway.`));
    card.replaceChildren(...parts.filter(Boolean));
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
      await page.refresh({ keepAddresses: true });
    });
    return h(
      'div',
      { class: 'copy-block' },
      h('h3', {}, 'Webhook Basic authentication'),
      endpoint.username ? h('p', { class: 'small' }, 'Username ', h('span', { class: 'mono' }, endpoint.username), page.connection?.maskedSecrets.webhookPassword ? `, password ${page.connection.maskedSecrets.webhookPassword}` : '') : undefined,
      h('div', { class: 'actions' }, create),
      credentialsShown,
    );
  }

  /** Draws the card again, keeping credentials just shown (their password is shown this once). */
  async function drawKeepingShown() {
    const shown = [...credentialsShown.childNodes];
    await draw();
    credentialsShown.replaceChildren(...shown);
  }

  return { draw, drawKeepingShown };
}
