// The messaging connector's Conversations card: live and recent conversations with their state (looked at
// again every 5 s while the page is open), and each conversation's transcript.

import { accountPath, call, problemText } from './api.js';
import { badge, h, humanize, table, when } from './dom.js';

const CONVERSATION_STATE_WORDS = { starting: 'Starting', queued: 'Queued', active: 'Active', ended: 'Ended', transcribed: 'Transcribed', failed: 'Failed' };
const CONVERSATION_BADGE = { starting: 'queued', queued: 'queued', active: 'running', ended: 'idle', transcribed: 'idle', failed: 'failed' };

/** One row of the conversations table, with a button that reads its transcript. */
function conversationRow(conversation, showTranscript) {
  return h(
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
  );
}

/** A transcript: what became of it (stored, kept by the gateway only...) and its entries, oldest first. */
function transcriptPanel(conversationId, transcript) {
  const outcomeWords = {
    stored: `Stored, and written to the session's ${transcript.outcome?.field ?? 'transcript'} field.`,
    field_missing: 'Kept by the gateway only: the session has no transcript field. What to do: configure the transcript field mapping.',
    not_written: `Kept by the gateway only: ${transcript.outcome?.reason ?? 'it could not be written to the session'}.`,
    disabled: 'Transcript storage is off in the settings.',
  };
  return h(
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
  );
}

export function conversationsSection(page, { cards }) {
  const { accountId, name, timers } = page;
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
        list.map((conversation) => conversationRow(conversation, showTranscript)),
      ),
    );
    return list.some((conversation) => ['starting', 'queued', 'active'].includes(conversation.state));
  }

  async function showTranscript(conversationId) {
    const answer = await call('GET', `${accountPath(accountId)}/conversations/${encodeURIComponent(conversationId)}/transcript`);
    if (!answer.ok) return transcriptBox.replaceChildren(h('p', { class: 'panel danger' }, problemText(answer.problem)));
    transcriptBox.replaceChildren(transcriptPanel(conversationId, answer.body));
    transcriptBox.querySelector('h3')?.focus();
  }

  function draw() {
    if (name !== 'messaging' || !page.connection) return;
    const filters = ['live', 'all'].map((filter) => {
      const button = h('button', { type: 'button', class: 'small', 'aria-pressed': String(conversationFilter === filter) }, filter === 'live' ? 'Live' : 'Recent');
      button.addEventListener('click', async () => {
        conversationFilter = filter;
        for (const other of button.parentElement.children) other.setAttribute('aria-pressed', String(other === button));
        await loadConversations();
      });
      return button;
    });
    cards.replaceChildren(
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

  return { draw };
}
