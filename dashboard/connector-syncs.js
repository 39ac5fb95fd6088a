// The connector page's Sync settings card and Syncs card: what is read and how often, Sync now, and each data
// object's progress (the page looks again while a sync runs, and stops when all is done or nothing moves).

import { call, problemText } from './api.js';
import { announce, badge, h, humanize, spinner, table, when } from './dom.js';
import { whileBusy } from './busy.js';
import { schemaForm } from './forms.js';

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

/** A data object's title in the settings' words. */
export function objectTitle(page, object) {
  return page.settingsSchema.properties?.dataObjects?.['x-option-titles']?.[object] ?? humanize(object);
}

/** The Sync settings card: the connector's settings form; `onSaved` runs after a save (addresses may change). */
export function settingsSection(page, { card, onSaved }) {
  const { description, name, path, title } = page;
  function draw() {
    if (!page.connection) return (card.hidden = true);
    card.hidden = false;
    const fieldsBox = h('div');
    const save = h('button', { type: 'submit', class: 'primary' }, 'Save settings');
    const saved = h('p', { class: 'hint', 'aria-live': 'polite' });
    const note = h('div');
    const settings = h('form', { class: 'stack', novalidate: true, 'aria-label': `Sync settings: ${title}`, id: `${name}-settings` }, fieldsBox, h('div', { class: 'actions' }, save, saved), note);
    const settingsForm = schemaForm(fieldsBox, { schema: description.settings, idPrefix: `${name}-settings`, values: page.connection.syncSettings });
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
      page.connection = answer.body;
      saved.textContent = `Saved ${new Date().toLocaleTimeString()}.`;
      announce('Sync settings saved.');
      await onSaved();
    });
    card.replaceChildren(
      h('h2', { id: 'settings-title' }, 'Sync settings'),
      h('p', { class: 'muted' }, 'What the gateway reads and how often. New frequencies take effect at the next schedule.'),
      settings,
    );
  }
  return { draw };
}

/** One row of the syncs table: a data object's state, counts, last success and last error. */
function syncRow(page, object, sync, state, selected) {
  const counts = sync?.counts ?? { created: 0, updated: 0, deleted: 0, unchanged: 0 };
  return h(
    'tr',
    { dataset: { object, state } },
    h('th', { scope: 'row' }, objectTitle(page, object), selected ? undefined : h('div', { class: 'muted small' }, 'Not selected')),
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
}

/** The Syncs card: Sync now, and each data object's sync, looked at again while anything runs. */
export function syncsSection(page, { card }) {
  const { path, platform, syncObjects, timers } = page;
  /** Objects asked to sync and not started yet: object → lastRunStartedAt when asked. */
  let queued = new Map();
  let polling = false;
  let lastChange = Date.now();
  let lastSnapshot = '';
  const syncBody = h('div');
  const syncNote = h('div', { class: 'progress-note', 'aria-live': 'polite' });
  const syncButton = h('button', { type: 'button', class: 'primary', id: 'sync-now' }, 'Sync now');
  const fullBox = h('input', { type: 'checkbox', id: 'sync-full' });

  function drawFrame() {
    if (!page.connection || syncObjects.length === 0) return (card.hidden = true);
    card.hidden = false;
    card.replaceChildren(
      h('div', { class: 'card-header' }, h('h2', { id: 'syncs-title' }, 'Syncs'), h('div', { class: 'actions' }, h('label', { class: 'choice', for: 'sync-full' }, fullBox, 'Sync everything again'), syncButton)),
      syncNote,
      syncBody,
    );
  }

  async function load() {
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
    const selected = new Set(page.connection?.syncSettings.dataObjects ?? syncObjects);
    const rows = syncObjects.map((object) => {
      const sync = byObject.get(object);
      return syncRow(page, object, sync, queued.has(object) ? 'queued' : (sync?.state ?? 'never_run'), selected.has(object));
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
        const seen = await load();
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
        if (!document.body.contains(card)) break; // left the page
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
    announce(`Sync started: ${answer.body.enqueued} job${answer.body.enqueued === 1 ? '' : 's'} queued.`);
    watchStarted(startedBefore);
  });

  /** Sync now, or Connect Account's first sync, queued the selected objects: show them queued until they run. */
  function watchStarted(startedBefore = new Map()) {
    const selected = page.connection?.syncSettings.dataObjects ?? syncObjects;
    queued = new Map(selected.map((object) => [object, startedBefore.get(object)]));
    void poll();
  }

  /** Shows the objects' syncs; keeps looking if one is running. */
  async function resume() {
    if (page.connection && syncObjects.length) {
      const seen = await load();
      if (seen?.active) void poll();
    }
  }
  return { drawFrame, resume, watchStarted };
}
