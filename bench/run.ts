/**
 * `npm run bench` runs every part; `npm run bench -- bundle` runs one. Each part writes its flat
 * figures into bench/results.json and a readable bench/results.md.
 */
import { benchBundles } from './bundles';
import { benchConversations } from './conversations';
import { benchDashboard } from './dashboard';
import { benchCost } from './cost';
import { benchData } from './data';
import { saveFigures, type Figures } from './results-file';
import { benchReads } from './reads';
import { benchSync } from './sync';
import { benchTenants } from './tenants';
import { benchWebhooks } from './webhooks';
import { benchIam } from './iam';
import { benchOrigin } from './origin';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { iamEnforcement, saveIamUsage } from '../local/iam/enforcement';
import { BENCH_USAGE_DIR } from '../local/iam/usage-report';
import { setMetricSink } from '../shared/metrics/gateway-metrics';

// Handlers and the domain record metrics as they run; the benchmarks read their own counts instead.
setMetricSink(() => {});

const parts: Record<string, () => Promise<{ figures: Figures; notes: string[] }>> = {
  bundle: benchBundles,
  sync: benchSync,
  reads: benchReads,
  webhook: benchWebhooks,
  conversations: benchConversations,
  dashboard: benchDashboard,
  data: benchData,
  tenants: benchTenants,
  // The origin check's cost per HTTP request (docs/tenants.md).
  origin: benchOrigin,
  // Last: it reads the other parts' figures (bundle import times, webhook calls per event).
  cost: benchCost,
  // After the rest: the AWS calls they made, judged against each function's role (docs/permissions.md).
  iam: benchIam,
};

const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const unknown = wanted.filter((name) => !(name in parts));
if (unknown.length) {
  process.stderr.write(`Unknown part(s): ${unknown.join(', ')}. Parts: ${Object.keys(parts).join(', ')}\n`);
  process.exit(2);
}
for (const name of wanted.length ? wanted : Object.keys(parts)) {
  const started = Date.now();
  // Each part's AWS calls (this process's and its child processes') are kept in a folder of its own,
  // replaced when the part runs again, so `npm run bench -- iam` alone reports every part's last run.
  const usageDir = join(BENCH_USAGE_DIR, name);
  if (name !== 'iam') {
    rmSync(usageDir, { recursive: true, force: true });
    process.env.IAM_USAGE_DIR = usageDir;
    iamEnforcement.reset();
  }
  const { figures, notes } = await parts[name]!();
  if (name !== 'iam') {
    saveIamUsage();
    iamEnforcement.reset();
  }
  saveFigures(name, figures, notes);
  process.stdout.write(`${name}: ${Object.keys(figures).length} figures in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
process.stdout.write('Wrote bench/results.json and bench/results.md\n');
// A part may leave handles behind (the conversations part's stopped child processes and sockets): the figures are written, so end.
process.exit(0);
