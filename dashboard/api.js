// The gateway's API, as the page calls it. Every answer comes back as { ok, status, body, problem }: problems
// (application/problem+json) are data to show, never exceptions. A refused token is renewed (refresh, or a new
// sign-in while the page keeps its state) and the request is sent again once.

import { idToken, renewSession } from './auth.js';

let apiBase = '';
export function setApiBase(base) {
  apiBase = base ?? '';
}

/** A problem of our own making, shaped like the gateway's, for failures that never reached it. */
function localProblem(title, detail, remedy) {
  return { type: 'about:blank', title, detail, remedy };
}

/**
 * Calls the API. `signal` aborts it (the "Stop waiting" of slow calls). `raw: true` answers the Response's
 * text (downloads).
 */
export async function call(method, path, { body, signal, raw = false, retried = false } = {}) {
  const headers = { accept: 'application/json' };
  const token = await idToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(`${apiBase}${path}`, { method, headers, signal, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  } catch (error) {
    if (error?.name === 'AbortError') return { ok: false, status: 0, aborted: true, problem: localProblem('Stopped waiting', 'You stopped waiting for the answer.', 'The gateway may still finish: refresh to see where it stands.') };
    return { ok: false, status: 0, problem: localProblem('The gateway did not answer', 'The request did not reach the gateway.', 'Check your network connection and try again.') };
  }
  if (response.status === 401 && !retried) {
    await renewSession();
    return call(method, path, { body, signal, raw, retried: true });
  }
  const text = await response.text();
  if (raw && response.ok) return { ok: true, status: response.status, body: text };
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (response.ok) return { ok: true, status: response.status, body: parsed };
  const problem =
    parsed && typeof parsed === 'object' && (parsed.title || parsed.detail)
      ? parsed
      : response.status >= 500
        ? localProblem('The gateway could not answer', `It answered ${response.status}.`, 'Nothing was saved. Try again in a moment.')
        : localProblem(`Refused (${response.status})`, parsed?.message ?? text.slice(0, 200), undefined);
  return { ok: false, status: response.status, body: parsed, problem };
}

/** One line for people: what went wrong and, where there is one, what to do. */
export function problemText(problem) {
  if (!problem) return 'Something went wrong.';
  return [problem.detail ?? problem.title, problem.remedy ? `What to do: ${problem.remedy}` : ''].filter(Boolean).join(' ');
}

export const accountPath = (accountId) => `/api/v1/accounts/${encodeURIComponent(accountId)}`;
export const connectionPath = (accountId, connector) => `${accountPath(accountId)}/connections/${encodeURIComponent(connector)}`;
