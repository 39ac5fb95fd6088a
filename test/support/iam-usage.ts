import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mergeUsage, TEST_USAGE_FILE, USAGE_ROOT, usageIn } from '../../local/iam/usage-report';

/**
 * Vitest global setup: every test process records which actions each function used on which
 * resources (local/iam/enforcement.ts); at the end of the run they are added up into
 * .iam-usage/tests.json, which `npm run bench -- iam` reads with the benchmarks' own usage.
 * A run of chosen files (`npx vitest run test/x`) writes tests-partial.json instead, so it never
 * replaces the whole suite's record with a part of it.
 */
export default function setup(): () => void {
  const chosenFiles = process.argv.slice(2).some((arg) => !arg.startsWith('-') && arg !== 'run' && !arg.endsWith('vitest') && !arg.endsWith('vitest.mjs'));
  const dir = join(USAGE_ROOT, `tests-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.env.IAM_USAGE_DIR = dir;
  return () => {
    const usage = mergeUsage(usageIn(dir));
    if (usage.checked > 0) writeFileSync(chosenFiles ? join(USAGE_ROOT, 'tests-partial.json') : TEST_USAGE_FILE, `${JSON.stringify(usage, null, 2)}\n`);
    rmSync(dir, { recursive: true, force: true });
  };
}
