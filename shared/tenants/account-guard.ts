import { assertAccountAccess, type Caller } from '../api/caller';
import { problems } from '../api/problem';
import type { Route } from '../api/route';
import type { Gateway } from '../gateway';
import type { Account } from '../store/items';
import { recordMetric } from '../metrics/gateway-metrics';
import { effectiveQuotas, retryAfterSeconds, type QuotaDecision, type QuotaKind } from './quotas';
import * as store from '../store/store';

/**
 * The server's side of what the dashboard shows: before any route of an account runs, the account
 * must exist with its Integrations switched on (the dashboard's missing section is only a view of
 * this), and the request is taken from the account's quota. Routes are guarded by what they are,
 * not by a list, so a new account route is guarded without anyone remembering to.
 */

/** Pure: whether a route acts on one account (its path names the account, or a playbook key does). */
export function isAccountRoute(route: Pick<Route, 'path' | 'access'>): boolean {
  return route.access === 'playbook' || route.path.includes('{accountId}');
}

/** Pure: a route whose account must have Integrations on. */
export function needsIntegrations(route: Pick<Route, 'path' | 'access' | 'integrations'>): boolean {
  return isAccountRoute(route) && route.integrations !== 'not-required';
}

/** Integrations are switched on per account by the operator; until then nothing of the account's runs. */
export async function requireIntegrationsEnabled(gateway: Gateway, accountId: string): Promise<Account> {
  const account = await store.getAccount(gateway.table, accountId);
  if (!account) throw problems.notFound(`No account ${accountId}.`);
  if (!account.integrationsEnabled) throw problems.integrationsDisabled();
  return account;
}

const QUOTA_WORDS: Record<QuotaKind, string> = {
  reads: 'playbook reads',
  sends: 'playbook sends',
  events: 'engagement events',
  syncs: 'manual syncs',
};

/**
 * How long a process keeps an account the guard read: every account route needs its switch and
 * quotas, and one read a request was a table read per playbook call. An operator's change reaches
 * the process that saved it at once (`forgetGuardedAccount`), others within this long.
 */
export const ACCOUNT_KEPT_MS = 5_000;
const MAX_ACCOUNTS_KEPT = 10_000;
/** Per store (one per gateway: tests run several in a process), the accounts read and until when they are kept. */
const accountsKept = new WeakMap<object, Map<string, { account: Account | undefined; until: number }>>();

async function keptAccount(gateway: Gateway, accountId: string): Promise<Account | undefined> {
  let kept = accountsKept.get(gateway.table);
  if (!kept) accountsKept.set(gateway.table, (kept = new Map()));
  const now = gateway.now();
  const held = kept.get(accountId);
  if (held && held.until > now) return held.account;
  const account = await store.getAccount(gateway.table, accountId);
  if (kept.size >= MAX_ACCOUNTS_KEPT) kept.clear();
  kept.set(accountId, { account, until: now + ACCOUNT_KEPT_MS });
  return account;
}

/** After an account is saved: this process's guard reads it afresh. */
export function forgetGuardedAccount(gateway: Gateway, accountId: string): void {
  accountsKept.get(gateway.table)?.delete(accountId);
}

/**
 * Before the request is read further: the caller may act on the account, the account is not past a
 * quota that refused it a moment ago (answered from memory, before any table read), and it has its
 * Integrations on. Answers the account for `takeAccountQuota` (undefined for routes of no account).
 */
export async function guardAccount(gateway: Gateway, route: Route, caller: Caller, accountId: string | undefined): Promise<Account | undefined> {
  if (!needsIntegrations(route)) return undefined;
  if (!accountId) throw problems.unauthorized('Sign in as a user of an account, or send a playbook API key.');
  // Another account's routes are a 404 before anything about that account is told.
  if (!caller.playbook) assertAccountAccess(caller, accountId);
  if (route.quota) refuseIfRefusedLately(gateway, accountId, route.quota.kind);
  const account = await keptAccount(gateway, accountId);
  if (!account) throw problems.notFound(`No account ${accountId}.`);
  if (!account.integrationsEnabled) throw problems.integrationsDisabled();
  return account;
}

/**
 * Per process: until when a quota last refused (epoch ms). A bucket's `tat` only moves forward, so
 * until then the table would refuse too: a tenant hammering past its quota is answered from memory,
 * costing the table (and the other tenants) nothing.
 */
const refusedUntil = new Map<string, number>();
const MAX_REFUSALS_KEPT = 10_000;

const refusalKey = (accountId: string, kind: QuotaKind) => `${accountId}#${kind}`;

/** A 429 from memory while the account's bucket of `kind` refused a moment ago (see `refusedUntil`). */
function refuseIfRefusedLately(gateway: Gateway, accountId: string, kind: QuotaKind): void {
  const now = gateway.now();
  const until = refusedUntil.get(refusalKey(accountId, kind));
  if (until === undefined || until <= now) return;
  recordMetric.quotaRefused(kind);
  throw problems.overQuota(QUOTA_WORDS[kind], retryAfterSeconds(until - now));
}

/** Once the body is known (an events request costs one per event): takes the request from the account's quota, or refuses it with 429. */
export async function takeAccountQuota(gateway: Gateway, route: Route, account: Account | undefined, body: unknown): Promise<void> {
  if (!account || !route.quota) return;
  const { kind } = route.quota;
  // A refusal remembered in memory was answered by the guard already (`refuseIfRefusedLately`).
  const decision = await takeFromQuota(gateway, account, kind, route.quota.cost?.(body as never) ?? 1);
  if (!decision.allowed) throw problems.overQuota(QUOTA_WORDS[kind], retryAfterSeconds(decision.retryAfterMs));
}

/**
 * Takes `cost` from the account's quota of `kind`: what a route's request costs, and work a route
 * starts besides (Connect Account's first sync, from `syncs`). A refusal is counted and remembered
 * (see `refusedUntil`).
 */
export async function takeFromQuota(gateway: Gateway, account: Account, kind: QuotaKind, cost = 1): Promise<QuotaDecision> {
  const now = gateway.now();
  const decision = await store.takeQuota(gateway.table, account.accountId, kind, cost, effectiveQuotas(account.quotas)[kind], now);
  if (decision.allowed) return decision;
  if (refusedUntil.size >= MAX_REFUSALS_KEPT) refusedUntil.clear();
  // A single request larger than the burst says nothing about smaller ones: not remembered.
  if (Number.isFinite(decision.retryAfterMs) && cost === 1) refusedUntil.set(refusalKey(account.accountId, kind), now + decision.retryAfterMs);
  recordMetric.quotaRefused(kind);
  return decision;
}
