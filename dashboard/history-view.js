// What happened over time on one connector's page: sync runs (30 days, paged), webhook deliveries per hour
// (7 days), conversations per day, and the connector's recent events as JSON.
//
// Charts are SVG drawn here, not a charting library: the page's CSP allows only its own scripts, SVG needs
// no code from anyone else, and SVG elements are in the document, so each chart carries a title, a text
// summary and per-bar titles for screen readers and hover. Every chart has a table of the same numbers.

import { accountPath, call, connectionPath, problemText } from './api.js';
import { badge, h, humanize, table, when } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
let chartSequence = 0;

/** An SVG element: s('rect', { x: 1 }). */
function s(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined && value !== false) node.setAttribute(key, String(value));
  for (const child of children.flat()) if (child) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

const niceMax = (value) => {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / step) * step;
};

/**
 * A bar chart: one column per entry, its series stacked. `series` name the parts ({ key, label, tone }),
 * `entries` carry a `label` (for titles), a `tick` (axis text, or '' for none) and a number per series key.
 * Summed to the chart's height; each column's title lists its numbers. An entry with `flag` (words) gets a red
 * mark above its column (a failed run), named in its title and in the legend as `flagLabel`.
 */
export function barChart({ title, summary, series, entries, unit = '', flagLabel }) {
  const id = `chart-${++chartSequence}`;
  const width = 720;
  const height = 180;
  const left = 44;
  const bottom = 22;
  const plotWidth = width - left - 8;
  const plotHeight = height - bottom - 8;
  const totals = entries.map((entry) => series.reduce((sum, part) => sum + (entry[part.key] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const slot = plotWidth / Math.max(1, entries.length);
  const barWidth = Math.max(1, slot * 0.8);
  const y = (value) => 8 + plotHeight - (value / max) * plotHeight;
  const grid = [0, 0.5, 1].map((f) =>
    s('g', { class: 'chart-grid' }, s('line', { x1: left, x2: width - 8, y1: y(max * f), y2: y(max * f) }), s('text', { x: left - 6, y: y(max * f) + 4, 'text-anchor': 'end' }, formatNumber(max * f) + unit)),
  );
  const columns = entries.map((entry, i) => {
    let base = 0;
    const x = left + i * slot + (slot - barWidth) / 2;
    const parts = series.map((part) => {
      const value = entry[part.key] ?? 0;
      if (!value) return undefined;
      const rect = s('rect', { class: `bar tone-${part.tone}`, x: x.toFixed(1), y: y(base + value).toFixed(1), width: barWidth.toFixed(1), height: Math.max(0.5, y(base) - y(base + value)).toFixed(1) });
      base += value;
      return rect;
    });
    const words = `${entry.label}: ${series.map((part) => `${part.label} ${formatNumber(entry[part.key] ?? 0)}${unit}`).join(', ')}${entry.flag ? `. ${entry.flag}` : ''}`;
    const flag = entry.flag ? s('circle', { class: 'flag', cx: (x + barWidth / 2).toFixed(1), cy: Math.max(5, y(base) - 6).toFixed(1), r: 4 }) : undefined;
    const tick = entry.tick ? s('text', { class: 'chart-tick', x: (x + barWidth / 2).toFixed(1), y: height - 6, 'text-anchor': 'middle' }, entry.tick) : undefined;
    return s('g', {}, s('title', {}, words), parts, flag, tick);
  });
  const svg = s(
    'svg',
    { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': `${id}-title ${id}-desc`, preserveAspectRatio: 'none' },
    s('title', { id: `${id}-title` }, title),
    s('desc', { id: `${id}-desc` }, summary),
    grid,
    s('line', { class: 'chart-axis', x1: left, x2: width - 8, y1: y(0), y2: y(0) }),
    columns,
  );
  const legend = h(
    'ul',
    { class: 'chart-legend', 'aria-hidden': 'true' },
    series.map((part) => h('li', {}, h('span', { class: `swatch tone-${part.tone}` }), part.label)),
    flagLabel && entries.some((entry) => entry.flag) ? h('li', {}, h('span', { class: 'swatch flag-swatch' }), flagLabel) : undefined,
  );
  return h('figure', { class: 'chart-figure' }, svg, legend, h('figcaption', { class: 'muted small' }, summary));
}

function formatNumber(value) {
  if (value >= 100 || Number.isInteger(value)) return String(Math.round(value));
  return value.toFixed(1);
}

export function duration(ms) {
  if (ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  if (seconds < 90) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  if (seconds < 600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  const minutes = seconds / 60;
  return minutes < 90 ? `${Math.round(minutes)} min` : `${(minutes / 60).toFixed(1)} h`;
}

const shortTime = (iso) => new Date(iso).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const RUN_WORDS = { finished: 'Finished', failed: 'Failed', running: 'Continuing' };
const RUN_BADGE = { finished: 'idle', failed: 'failed', running: 'running' };
const TONES = ['a', 'b', 'c', 'd', 'e'];

/** Sync history: a chart of duration and of records per run (oldest left), a table of the runs, newest first, paged. */
function syncHistory(base, objects) {
  const body = h('div', { 'aria-live': 'polite' }, h('div', { class: 'loading' }, 'Loading sync history…'));
  let runs = [];
  let nextCursor;
  const more = h('button', { type: 'button', class: 'small', id: 'older-runs' }, 'Show older runs');
  more.addEventListener('click', () => void load(true));

  async function load(older = false) {
    more.disabled = true;
    const answer = await call('GET', `${base}/syncs/history?limit=25${older && nextCursor ? `&cursor=${encodeURIComponent(nextCursor)}` : ''}`);
    more.disabled = false;
    if (!answer.ok) return body.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
    runs = older ? [...runs, ...answer.body.runs] : answer.body.runs;
    nextCursor = answer.body.nextCursor;
    draw();
  }

  function draw() {
    if (runs.length === 0) return body.replaceChildren(h('p', { class: 'empty' }, 'No sync has run in the last 30 days.'));
    const tone = Object.fromEntries(objects.map((object, i) => [object, TONES[i % TONES.length]]));
    const oldestFirst = [...runs].reverse();
    const entryOf = (run, value) => ({
      label: `${humanize(run.object)}, ${shortTime(run.startedAt)} (${RUN_WORDS[run.status]})`,
      tick: '',
      [run.object]: value,
      ...(run.status === 'failed' || run.failures ? { flag: run.error?.reason ?? 'Failed' } : {}),
    });
    const series = objects.filter((object) => runs.some((run) => run.object === object)).map((object) => ({ key: object, label: humanize(object), tone: tone[object] }));
    const slowest = runs.reduce((a, b) => ((b.durationMs ?? 0) > (a.durationMs ?? 0) ? b : a));
    const failed = runs.filter((run) => run.status === 'failed').length;
    const summary = `${runs.length} runs shown, ${failed} failed. Slowest: ${humanize(slowest.object)} on ${shortTime(slowest.startedAt)}, ${duration(slowest.durationMs)}.`;
    body.replaceChildren(
      h('div', { class: 'chart-pair' },
        barChart({ title: 'Duration of each run (seconds), oldest on the left', summary, series, unit: ' s', flagLabel: 'Failed', entries: oldestFirst.map((run) => entryOf(run, (run.durationMs ?? 0) / 1000)) }),
        barChart({ title: 'Records created, updated or deleted by each run', flagLabel: 'Failed', summary: `${runs.reduce((sum, run) => sum + run.created + run.updated + run.deleted, 0)} records changed in the runs shown.`, series, entries: oldestFirst.map((run) => entryOf(run, run.created + run.updated + run.deleted)) }),
      ),
      table(
        'Sync runs, newest first',
        ['Started', 'Object', 'Outcome', 'Duration', 'Requests', 'Retries', 'Created', 'Updated', 'Deleted', 'Error'],
        runs.map((run) =>
          h('tr', { dataset: { status: run.status } },
            h('td', {}, when(run.startedAt)),
            h('td', {}, humanize(run.object), run.mode ? h('span', { class: 'muted small' }, ` ${run.mode}`) : undefined),
            h('td', {}, badge(RUN_BADGE[run.status], RUN_WORDS[run.status]), run.failures && run.status === 'finished' ? h('span', { class: 'muted small' }, ` after ${run.failures} failed`) : undefined),
            ...[duration(run.durationMs), run.requests, run.retries, run.created, run.updated, run.deleted].map((value) => h('td', { class: 'num' }, String(value))),
            h('td', {}, run.error ? h('span', {}, run.error.reason, run.error.remedy ? h('span', { class: 'muted small' }, ` What to do: ${run.error.remedy}`) : undefined) : h('span', { class: 'muted' }, '—')),
          ),
        ),
        { numeric: [3, 4, 5, 6, 7, 8] },
      ),
      nextCursor ? more : h('p', { class: 'muted small' }, 'That is every run of the last 30 days.'),
    );
  }

  const element = h('section', { class: 'card', id: 'sync-history', 'aria-labelledby': 'sync-history-title' }, h('h2', { id: 'sync-history-title' }, 'Sync history'), body);
  return { element, load };
}

const REASON_WORDS = { signature: 'Bad signature', timestamp: 'Too old (timestamp)', unknown_account: 'Unknown account', credentials: 'Wrong Basic credentials', other: 'Other' };

/** Webhook deliveries per hour for 7 days: verified, duplicates, refused (by reason), and the last refusals. */
function webhookDeliveries(base) {
  const body = h('div', { 'aria-live': 'polite' }, h('div', { class: 'loading' }, 'Loading deliveries…'));

  async function load() {
    const answer = await call('GET', `${base}/webhooks/deliveries`);
    if (!answer.ok) return body.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
    const { hours, lastRefused } = answer.body;
    const refusedOf = (hour) => Object.values(hour.refused).reduce((sum, n) => sum + n, 0);
    const sum = (pick) => hours.reduce((total, hour) => total + pick(hour), 0);
    const verified = sum((hour) => hour.verified);
    const duplicates = sum((hour) => hour.duplicates);
    const refused = sum(refusedOf);
    const byReason = Object.keys(REASON_WORDS).map((reason) => [reason, sum((hour) => hour.refused[reason])]).filter(([, n]) => n > 0);
    const firstRefusal = hours.find((hour) => refusedOf(hour) > 0);
    const summary = `Last 7 days: ${verified} verified (${duplicates} duplicates), ${refused} refused${byReason.length ? ` (${byReason.map(([reason, n]) => `${REASON_WORDS[reason].toLowerCase()} ${n}`).join(', ')})` : ''}.${firstRefusal ? ` First refusal in the hour from ${shortTime(firstRefusal.hour)}.` : ''}`;
    const entries = hours.map((hour) => {
      const at = new Date(hour.hour);
      return { label: shortTime(hour.hour), tick: at.getHours() === 0 ? at.toLocaleDateString(undefined, { weekday: 'short' }) : '', fresh: hour.verified - hour.duplicates, duplicates: hour.duplicates, refused: refusedOf(hour) };
    });
    const byDay = new Map();
    for (const hour of hours) {
      const day = new Date(hour.hour).toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' });
      const total = byDay.get(day) ?? { day, verified: 0, duplicates: 0, refused: Object.fromEntries(Object.keys(REASON_WORDS).map((reason) => [reason, 0])) };
      total.verified += hour.verified;
      total.duplicates += hour.duplicates;
      for (const reason of Object.keys(REASON_WORDS)) total.refused[reason] += hour.refused[reason];
      byDay.set(day, total);
    }
    const busy = [...byDay.values()].filter((day) => day.verified || refusedOf(day)).reverse();
    body.replaceChildren(
      barChart({
        title: 'Webhook deliveries per hour, last 7 days',
        summary,
        entries,
        series: [
          { key: 'fresh', label: 'Verified', tone: 'good' },
          { key: 'duplicates', label: 'Duplicates', tone: 'neutral' },
          { key: 'refused', label: 'Refused', tone: 'bad' },
        ],
      }),
      lastRefused.length
        ? h('div', {}, h('h3', {}, 'Last refused deliveries'), h('ul', { class: 'refusals', id: 'last-refused' }, lastRefused.map((refusal) => h('li', {}, h('time', { datetime: refusal.at }, shortTime(refusal.at)), ' ', h('strong', {}, REASON_WORDS[refusal.reason] ?? refusal.reason), refusal.count > 1 ? h('span', { class: 'muted small' }, ` (${refusal.count} that hour)`) : undefined))))
        : h('p', { class: 'muted' }, 'No delivery was refused in the last 7 days.'),
      busy.length
        ? table(
            'Webhook deliveries per day (each hour is in the chart), newest first',
            ['Day', 'Verified', 'Duplicates', ...Object.values(REASON_WORDS)],
            busy.map((hour) => h('tr', {}, h('td', {}, hour.day), ...[hour.verified, hour.duplicates, ...Object.keys(REASON_WORDS).map((reason) => hour.refused[reason])].map((n) => h('td', { class: 'num' }, String(n))))),
            { numeric: [1, 2, 3, 4, 5, 6, 7] },
          )
        : h('p', { class: 'empty' }, 'No webhook deliveries in the last 7 days.'),
    );
  }

  const element = h('section', { class: 'card', id: 'webhook-deliveries', 'aria-labelledby': 'webhook-deliveries-title' }, h('h2', { id: 'webhook-deliveries-title' }, 'Webhook deliveries'), body);
  return { element, load };
}

/** Conversations per day: started, handed off, ended, expired; the live count and the median time to the first agent message. */
function conversationStats(accountId) {
  const body = h('div', { 'aria-live': 'polite' }, h('div', { class: 'loading' }, 'Loading conversation counts…'));

  async function load() {
    const answer = await call('GET', `${accountPath(accountId)}/conversations/stats?days=14`);
    if (!answer.ok) return body.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
    const { days, live, medianFirstAgentMessageSeconds: median } = answer.body;
    const fields = [['started', 'Started', 'a'], ['handedOff', 'Handed off', 'b'], ['ended', 'Ended', 'good'], ['expired', 'Expired', 'bad']];
    const totals = Object.fromEntries(fields.map(([key]) => [key, days.reduce((sum, day) => sum + day[key], 0)]));
    const facts = h('dl', { class: 'facts counts' });
    const add = (term, value, key) => facts.append(h('dt', {}, term), h('dd', { dataset: { count: key } }, value));
    add('Live now', String(live), 'live');
    add('Median time to the first agent message', median === undefined ? 'No agent message yet' : duration(median * 1000), 'median');
    for (const [key, label] of fields) add(`${label} (14 days)`, String(totals[key]), key);
    const dayLabel = (day) => new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
    const summary = `Last 14 days: ${fields.map(([key, label]) => `${label.toLowerCase()} ${totals[key]}`).join(', ')}.`;
    body.replaceChildren(
      facts,
      h('div', { class: 'chart-pair' },
        barChart({ title: 'Conversations started and handed off per day', summary, series: fields.slice(0, 2).map(([key, label, tone]) => ({ key, label, tone })), entries: days.map((day, i) => ({ ...day, label: dayLabel(day.day), tick: i % 2 === days.length % 2 ? '' : dayLabel(day.day) })) }),
        barChart({ title: 'Conversations ended and expired per day', summary, series: fields.slice(2).map(([key, label, tone]) => ({ key, label, tone })), entries: days.map((day, i) => ({ ...day, label: dayLabel(day.day), tick: i % 2 === days.length % 2 ? '' : dayLabel(day.day) })) }),
      ),
      table('Conversations per day, newest first', ['Day', ...fields.map(([, label]) => label)], [...days].reverse().map((day) => h('tr', {}, h('td', {}, dayLabel(day.day)), ...fields.map(([key]) => h('td', { class: 'num' }, String(day[key]))))), { numeric: [1, 2, 3, 4] }),
    );
  }

  const element = h('section', { class: 'card', id: 'conversation-stats', 'aria-labelledby': 'conversation-stats-title' }, h('h2', { id: 'conversation-stats-title' }, 'Conversations over time'), body);
  return { element, load };
}

/** The connector's recent published events; each opens to its JSON (as published: already redacted). */
function recentEvents(accountId, connector) {
  const body = h('div', { 'aria-live': 'polite' }, h('div', { class: 'loading' }, 'Loading events…'));

  async function load() {
    const answer = await call('GET', `${accountPath(accountId)}/events?limit=100`);
    if (!answer.ok) return body.replaceChildren(h('div', { class: 'panel info' }, h('p', {}, answer.problem.detail ?? answer.problem.title), answer.problem.remedy ? h('p', { class: 'small' }, answer.problem.remedy) : undefined));
    const events = answer.body.events.filter((event) => event.source === connector).slice(0, 10);
    if (events.length === 0) return body.replaceChildren(h('p', { class: 'empty' }, 'No events from this connector yet.'));
    body.replaceChildren(
      h('ul', { class: 'event-list', id: 'connector-events' }, events.map((event) =>
        h('li', {}, h('details', {}, h('summary', {}, h('strong', {}, event.type), ' ', when(event.occurredAt)), h('pre', { tabindex: '0', 'aria-label': `${event.type} as JSON` }, JSON.stringify(event, null, 2))))),
      ),
    );
  }

  const element = h('section', { class: 'card', id: 'connector-recent-events', 'aria-labelledby': 'connector-events-title' }, h('h2', { id: 'connector-events-title' }, 'Recent events'), h('p', { class: 'muted' }, 'Open one to see it as published.'), body);
  return { element, load };
}

/**
 * The history of one connector, for the connector page: whichever of the views its capabilities call for.
 * Returns the element (empty of data at first) and starts loading it.
 */
export function historyView({ accountId, connector, capabilities, conversations = false }) {
  const base = connectionPath(accountId, connector);
  const parts = [
    capabilities.sync ? syncHistory(base, capabilities.sync.objects) : undefined,
    capabilities.webhooks ? webhookDeliveries(base) : undefined,
    conversations ? conversationStats(accountId) : undefined,
    recentEvents(accountId, connector),
  ].filter(Boolean);
  const refresh = h('button', { type: 'button', class: 'small', id: 'history-refresh' }, 'Refresh history');
  const load = () => Promise.all(parts.map((part) => part.load()));
  refresh.addEventListener('click', () => void load());
  void load();
  return h('div', { class: 'history', id: 'history' }, h('div', { class: 'card-header history-header' }, h('h2', { class: 'section-title' }, 'History'), refresh), parts.map((part) => part.element));
}
