// Small DOM helpers. Everything the server sends is written as text (textContent, attributes), never as HTML,
// so no answer can inject markup.

/** Creates an element: h('button', { type: 'button', onclick }, 'Save'). `false`/`undefined` attributes are left out. */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === false || value === undefined || value === null) continue;
    if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
}

/** Announces a message to screen readers (and shows a toast): polite for results, assertive for problems. */
export function announce(message, { problem = false, toast = true } = {}) {
  const region = document.getElementById(problem ? 'announce-assertive' : 'announce-polite');
  region.textContent = '';
  // A new text node after a tick, so the same message twice is read twice.
  setTimeout(() => (region.textContent = message), 30);
  if (toast) showToast(message, problem);
}

function showToast(message, problem) {
  const area = document.getElementById('toasts');
  const toast = h('div', { class: `toast${problem ? ' problem' : ''}`, 'aria-hidden': 'true' }, message);
  area.append(toast);
  setTimeout(() => toast.remove(), problem ? 9000 : 4500);
}

/** A coloured status pill. `state` picks the colour class; the words are what people read. */
export function badge(state, words) {
  return h('span', { class: `badge ${state}`, dataset: { state } }, words);
}

export const HEALTH_WORDS = { unknown: 'Not tested', healthy: 'Healthy', degraded: 'Degraded', needs_reconnect: 'Needs reconnect' };

export function healthBadge(health) {
  const state = health?.state ?? 'unknown';
  return badge(state, HEALTH_WORDS[state] ?? state);
}

/** "3 min ago" beside the exact time (in the title and a <time> element). */
export function when(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  const words =
    seconds < 45 ? 'just now'
    : seconds < 3600 ? `${Math.round(seconds / 60)} min ago`
    : seconds < 86_400 ? `${Math.round(seconds / 3600)} h ago`
    : date.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
  return h('time', { datetime: iso, title: date.toLocaleString() }, words);
}

/** Words for a machine name: `payment_intents` → "Payment intents". */
export function humanize(name) {
  const words = String(name).replace(/([a-z])([A-Z])/g, '$1 $2').replaceAll('_', ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

let copySequence = 0;
/**
 * A read-only field with a Copy button (the address to paste into a platform). The field can be selected by
 * hand where the clipboard is not allowed.
 */
export function copyField(label, value, { secret = false, name } = {}) {
  const id = `copy-${++copySequence}`;
  const input = h('input', { id, type: 'text', readonly: true, value, spellcheck: 'false', 'data-copy': name ?? label });
  const button = h('button', { type: 'button', class: 'small', 'aria-label': `Copy ${label}` }, 'Copy');
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value);
      button.textContent = 'Copied';
      announce(`${label} copied.`, { toast: !secret });
    } catch {
      input.select();
      announce('Copying is not allowed here: the text is selected, press Ctrl+C (⌘C) to copy it.', { problem: true });
    }
    setTimeout(() => (button.textContent = 'Copy'), 2500);
  });
  return h('div', { class: 'copy-block' }, h('label', { for: id, class: 'label' }, label), h('div', { class: 'copy' }, input, button));
}

/**
 * Asks for confirmation in the page's dialog: `body` lists what will happen. Resolves true when confirmed.
 * Escape or Cancel resolve false; focus returns to where it was.
 */
export function confirmDialog({ title, body, confirm }) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-body').replaceChildren(...[body].flat().filter(Boolean));
  document.getElementById('confirm-ok').textContent = confirm;
  const opener = document.activeElement;
  dialog.returnValue = '';
  dialog.showModal();
  document.getElementById('confirm-cancel').focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        opener?.focus?.();
        resolve(dialog.returnValue === 'confirm');
      },
      { once: true },
    );
  });
}

/** A table inside a keyboard-scrollable wrapper (narrow screens scroll it sideways). */
export function table(caption, headers, rows, { numeric = [] } = {}) {
  return h(
    'div',
    { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, headers.map((title, i) => h('th', { scope: 'col', class: numeric.includes(i) ? 'num' : undefined }, title)))),
      h('tbody', {}, rows),
    ),
  );
}

export function spinner() {
  return h('span', { class: 'spinner', 'aria-hidden': 'true' });
}
