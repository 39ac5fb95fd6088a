import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The fields every log line of one invocation carries (request id, account id, message id...).
 * Kept per invocation in async-local storage rather than on the process-wide logger, because the
 * local runtime runs many invocations in one process at once: an account id set by one request
 * must never appear on another's lines.
 */
const scopes = new AsyncLocalStorage<Record<string, unknown>>();

/**
 * Runs `work` (an invocation) in a log context of its own, inheriting nothing from the caller's,
 * starting with `fields` (the invocation's ids: one context made once, nothing copied into it later).
 */
export function withNewLogContext<T>(work: () => T, fields: Record<string, unknown> = {}): T {
  return scopes.run(fields, work);
}

/** Runs `work` (a part of an invocation: one message of a batch) with a copy of the current context plus `fields`. */
export function withLogContext<T>(fields: Record<string, unknown>, work: () => T): T {
  return scopes.run({ ...scopes.getStore(), ...fields }, work);
}

/** Adds fields to the current invocation's context (no effect outside one). */
export function addToLogContext(fields: Record<string, unknown>): void {
  const store = scopes.getStore();
  if (store) Object.assign(store, fields);
}

export function currentLogContext(): Readonly<Record<string, unknown>> | undefined {
  return scopes.getStore();
}
