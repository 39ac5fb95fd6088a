// The data connector's Ingestion card: the ingestion schema to upload to the data platform, and what became of
// the engagement events the playbooks sent over the last 24 hours.

import { call, problemText } from './api.js';
import { announce, h, humanize, table } from './dom.js';

const FREQUENCY_WORDS = { real_time: 'sent as they come', hourly: 'held and sent every hour', daily: 'held and sent once a day' };

/** The counts of the last 24 hours, and an hour-by-hour table of the busy hours. */
function deliveryParts({ frequency, heldNow, hours }) {
  const total = (key) => hours.reduce((sum, hour) => sum + hour[key], 0);
  const facts = h('dl', { class: 'facts counts' });
  const add = (term, value, key) => facts.append(h('dt', {}, term), h('dd', { dataset: key ? { count: key } : {} }, value));
  add('Waiting to be sent', String(heldNow), 'held');
  add('Sent (24 h)', String(total('sent')), 'sent');
  add('Retried (24 h)', String(total('retried')), 'retried');
  add('Refused by the platform (24 h)', String(total('refused')), 'refused');
  add('Gave up, in the dead-letter queue (24 h)', String(total('deadLettered')), 'deadLettered');
  const busy = hours.filter((hour) => hour.accepted || hour.sent || hour.refused || hour.deadLettered || hour.retried);
  return [
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
}

export function ingestionSection(page, { cards }) {
  const { name, path } = page;
  const deliveriesBox = h('div', { id: 'deliveries', 'aria-live': 'polite' });

  /** Drawn once, for the data connector only. */
  function draw() {
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
    cards.replaceChildren(
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

  /** What became of the engagement events the playbooks sent, over the last 24 hours. */
  async function loadDeliveries() {
    if (name !== 'data' || !page.connection) return deliveriesBox.replaceChildren(h('p', { class: 'muted' }, 'Connect the data platform to see its deliveries.'));
    const answer = await call('GET', `${path}/deliveries?hours=24`);
    if (!answer.ok) {
      const missing = answer.status === 404 && /^No API operation/.test(answer.problem?.detail ?? '');
      return deliveriesBox.replaceChildren(h('p', { class: missing ? 'muted' : 'panel danger' }, missing ? 'This version of the gateway does not record ingestion outcomes.' : problemText(answer.problem)));
    }
    deliveriesBox.replaceChildren(...deliveryParts(answer.body).filter(Boolean));
  }

  return { draw, loadDeliveries };
}
