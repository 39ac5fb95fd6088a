import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { IamUsage } from '../local/iam/enforcement';
import { wildcardMatch } from '../local/iam/policy-evaluation';
import { rolePolicies } from '../local/iam/role-policies';
import { allowedUnused } from '../local/iam/unused-allow-list';
import { BENCH_USAGE_DIR, mergeUsage, TEST_USAGE_FILE, unusedGrants, usageIn } from '../local/iam/usage-report';
import type { Figures } from './results-file';

/** Each benchmark part's usage from its last run (.iam-usage/bench/<part>/, one file per process), with when it was written. */
function partsUsage(): Array<{ part: string; usage: IamUsage; at: Date }> {
  if (!existsSync(BENCH_USAGE_DIR)) return [];
  return readdirSync(BENCH_USAGE_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => {
      const dir = join(BENCH_USAGE_DIR, entry.name);
      const files = readdirSync(dir).map((name) => statSync(join(dir, name)).mtimeMs);
      return { part: entry.name, usage: mergeUsage(usageIn(dir)), at: new Date(Math.max(0, ...files)) };
    })
    .filter(({ usage }) => usage.checked > 0)
    .sort((a, b) => a.part.localeCompare(b.part));
}

/**
 * IAM as deployed, measured locally: every AWS call the handlers made in each benchmark part's last
 * run (its own process and its child processes; `npm run bench -- <part>` replaces that part's
 * record) and in the last test run (.iam-usage/tests.json, written by `npx vitest run`), each
 * judged against its function's role from the synthesized template. Reports the calls checked,
 * the calls refused (0 in the benchmarks; the tests' are the enforcement test's deliberate ones),
 * and the granted actions no run used, less the allow-list (local/iam/unused-allow-list.ts) with
 * its reasons.
 */
export async function benchIam(): Promise<{ figures: Figures; notes: string[] }> {
  const parts = partsUsage();
  const bench = mergeUsage(parts.map(({ usage }) => usage));
  const tests = existsSync(TEST_USAGE_FILE) ? (JSON.parse(readFileSync(TEST_USAGE_FILE, 'utf8')) as IamUsage) : undefined;
  const all = mergeUsage(tests ? [bench, tests] : [bench]);
  const unused = unusedGrants(rolePolicies(), all);
  const explained = unused.map((grant) => ({ grant, entry: allowedUnused(grant.handler, grant.action, (p, v) => wildcardMatch(p, v, true)) }));
  const unexplained = explained.filter(({ entry }) => !entry).map(({ grant }) => grant);
  const reasons = new Map<string, { handlers: Set<string>; reason: string }>();
  for (const { grant, entry } of explained) {
    if (!entry) continue;
    const row = reasons.get(entry.action) ?? { handlers: new Set<string>(), reason: entry.reason };
    row.handlers.add(grant.handler);
    reasons.set(entry.action, row);
  }
  const figures: Figures = {
    'iam.calls_checked': all.checked,
    'iam.bench.calls_checked': bench.checked,
    'iam.tests.calls_checked': tests?.checked ?? 0,
    'iam.denied': bench.denied,
    'iam.tests.denied_deliberately': tests?.denied ?? 0,
    'iam.unused_actions': unexplained.length,
    'iam.unused_allow_listed': explained.length - unexplained.length,
  };
  const shortArn = (arn: string) => arn.split(':').slice(5).join(':') || arn;
  const notes = [
    `Every AWS call a handler made (DynamoDB, the key file standing for KMS, SQS, EventBridge, Step Functions) judged against its role in the synthesized template (local/iam/role-policies.json). Sources: the benchmark parts' last runs (${bench.checked} calls${parts.length ? `: ${parts.map(({ part, usage, at }) => `${part} ${usage.checked} on ${at.toISOString().slice(0, 16)}Z`).join(', ')}` : ', no part has run since the record began'}) ${tests ? `and the last test run (${tests.checked} calls)` : 'only: no .iam-usage/tests.json (run `npx vitest run` first)'}.`,
    `Refused in the benchmarks: ${bench.denied}. Refused in the tests: ${tests?.denied ?? 0}, the deliberate ones of test/local/iam-enforcement.test.ts${tests?.refusals.length ? ` (e.g. ${tests.refusals[0]})` : ''}.`,
    ...[...reasons].map(([action, row]) => `Granted, not used by the code, allowed: ${action} (${[...row.handlers].sort().join(', ')}): ${row.reason}`),
    ...unexplained.map((grant) => `UNUSED: ${grant.handler} ${grant.action} on ${shortArn(grant.resource)}`),
    ...Object.entries(all.used)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([handler, actions]) => `${handler} used: ${Object.entries(actions).map(([action, resources]) => `${action} (${resources.map(shortArn).join(', ')})`).join('; ')}`),
  ];
  return { figures, notes };
}
