// A button that is waiting for the gateway: busy while the call runs, and after a few seconds a way out.

import { h, spinner } from './dom.js';

/** After this long without an answer, a slow call offers "Stop waiting". */
const SLOW_AFTER_MS = 4000;

/**
 * Runs `work(signal)` with the button busy. After a few seconds the note offers a way out ("Stop waiting"),
 * which aborts the request (the gateway may still finish it: the page says so).
 */
export async function whileBusy(button, busyWords, note, slowWords, work) {
  const words = button.textContent;
  const controller = new AbortController();
  button.disabled = true;
  button.replaceChildren(spinner(), busyWords);
  const slow = setTimeout(() => {
    note.replaceChildren(
      h('div', { class: 'progress-note' }, spinner(), slowWords, h('button', { type: 'button', class: 'small', onclick: () => controller.abort() }, 'Stop waiting')),
    );
    note.hidden = false;
  }, SLOW_AFTER_MS);
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(slow);
    note.replaceChildren();
    button.disabled = false;
    button.replaceChildren(words);
  }
}
