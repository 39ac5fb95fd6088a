// The connector page's Disconnect card: asks first, saying what it deletes (credentials, settings, sync state,
// synced records, the platform grant for OAuth connectors).

import { call, problemText } from './api.js';
import { announce, confirmDialog, h, humanize } from './dom.js';
import { fieldLabels } from './connector-connection.js';
import { objectTitle } from './connector-syncs.js';

/** What Disconnect deletes, in words, for the confirmation. */
function deletionList(page) {
  const { description, platform, syncObjects } = page;
  const labels = fieldLabels(description.connectionForm);
  const secrets = Object.entries(page.connection.maskedSecrets).map(([field, masked]) => `${labels.fields[field]?.title ?? humanize(field)} (${masked})`);
  const objectTitles = syncObjects.map((object) => objectTitle(page, object));
  return [
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
  ];
}

export function disconnectSection(page, { card }) {
  const { path, platform, syncObjects } = page;
  function draw() {
    if (!page.connection) return (card.hidden = true);
    card.hidden = false;
    const button = h('button', { type: 'button', class: 'danger', id: 'disconnect-button' }, `Disconnect the ${platform}`);
    button.addEventListener('click', async () => {
      const confirmed = await confirmDialog({ title: `Disconnect the ${platform}?`, body: deletionList(page), confirm: 'Disconnect' });
      if (!confirmed) return;
      const answer = await call('DELETE', path);
      if (!answer.ok) return announce(problemText(answer.problem), { problem: true });
      page.connection = undefined;
      page.showOutcome('info', `The ${platform} is disconnected.`, [syncObjects.length ? 'Its credentials are deleted; its synced records are being removed.' : 'Its credentials are deleted.']);
      announce(`The ${platform} is disconnected.`);
      await page.refresh();
    });
    card.replaceChildren(
      h('h2', { id: 'disconnect-title' }, 'Disconnect'),
      h('p', { class: 'muted' }, `Deletes the credentials${syncObjects.length ? ' and the synced data' : ''} of this connection. You are asked to confirm first.`),
      button,
    );
  }
  return { draw };
}
