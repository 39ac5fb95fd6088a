import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IamUsage } from './enforcement';
import { wildcardMatch, type PolicyStatement } from './policy-evaluation';
import type { RolePolicies } from './role-policies';

/** Where runs leave their usage: the test run's merged file and the benchmarks' per-process files. */
export const USAGE_ROOT = new URL('../../.iam-usage/', import.meta.url).pathname;
export const TEST_USAGE_FILE = join(USAGE_ROOT, 'tests.json');
export const BENCH_USAGE_DIR = join(USAGE_ROOT, 'bench');

/** Adds up the usage of several processes (calls, refusals, and each function's actions and resources). */
export function mergeUsage(parts: readonly IamUsage[]): IamUsage {
  const used: Record<string, Record<string, Set<string>>> = {};
  const merged: IamUsage = { checked: 0, denied: 0, used: {}, refusals: [] };
  for (const part of parts) {
    merged.checked += part.checked;
    merged.denied += part.denied;
    merged.refusals.push(...part.refusals);
    for (const [handler, actions] of Object.entries(part.used)) {
      for (const [action, resources] of Object.entries(actions)) {
        const into = ((used[handler] ??= {})[action] ??= new Set());
        for (const resource of resources) into.add(resource);
      }
    }
  }
  for (const [handler, actions] of Object.entries(used)) merged.used[handler] = Object.fromEntries(Object.entries(actions).map(([a, r]) => [a, [...r].sort()]));
  return merged;
}

/** Every usage file in a folder (one per process). */
export function usageIn(dir: string): IamUsage[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as IamUsage);
}

/** A granted action no run used, with the resource it was granted on. */
export interface UnusedGrant {
  handler: string;
  action: string;
  resource: string;
}

const list = (values: PolicyStatement['Action'] | undefined): readonly string[] => (values === undefined ? ['*'] : typeof values === 'string' ? [values] : values);

/**
 * Pure: each action of an Allow statement that no recorded call of that function made on any of the
 * statement's resources (a table statement's GetItem counts as used when it was used on the table,
 * though the statement also names the index).
 */
export function unusedGrants(policies: RolePolicies, usage: IamUsage): UnusedGrant[] {
  const unused: UnusedGrant[] = [];
  for (const [handler, { statements }] of Object.entries(policies.functions)) {
    const used = usage.used[handler] ?? {};
    for (const statement of statements) {
      if (statement.Effect !== 'Allow') continue;
      const resources = list(statement.Resource);
      for (const action of list(statement.Action)) {
        const hit = Object.entries(used).some(([usedAction, usedOn]) => wildcardMatch(action, usedAction, true) && usedOn.some((r) => resources.some((resource) => wildcardMatch(resource, r))));
        if (!hit) unused.push({ handler, action, resource: resources.join(', ') });
      }
    }
  }
  return unused;
}
