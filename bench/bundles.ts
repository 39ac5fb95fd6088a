import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleHandler } from '../lib/bundling';
import type { GatewayVariable } from '../shared/config';
import { functionSettings, type HandlerName } from '../shared/handler/function-settings';
import { FIRST_REQUESTS, firstRequest, firstRequestTable } from './first-request';
import type { Figures } from './results-file';
import { median } from './statistics';

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench', '.work', 'bundles');
const IMPORT_RUNS = 9;
const FIRST_REQUEST_RUNS = 5;

/** What Lambda gives a function: its name, region, credentials and the settings the stack sets (checked at load). */
export function lambdaLikeEnvironment(name: string): NodeJS.ProcessEnv {
  const sample: Partial<Record<GatewayVariable, string>> = {
    TABLE_NAME: 'IntegrationGateway-Table',
    CREDENTIALS_KEY_ID: 'arn:aws:kms:us-east-1:111122223333:key/bench',
    SYNC_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/111122223333/sync.fifo',
    WEBHOOK_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/111122223333/webhooks',
    INGESTION_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/111122223333/ingestion',
    EVENT_BUS_NAME: 'integration-gateway',
    CONVERSATION_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:111122223333:stateMachine:IntegrationGateway-conversation',
    POLLER_FLEET_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:111122223333:stateMachine:IntegrationGateway-poller-fleet',
    POLLER_NOTICE_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/111122223333/poller-notices',
    ORIGIN_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:IntegrationGateway-origin-verify-AbCdEf',
  };
  const settings = functionSettings[name as HandlerName] ?? [];
  return {
    PATH: process.env.PATH,
    AWS_LAMBDA_FUNCTION_NAME: `IntegrationGateway-${name}`,
    // Lambda's own: the queue workers load the X-Ray SDK only where it is set (shared/handler/traces.ts).
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDBENCH',
    AWS_SECRET_ACCESS_KEY: 'bench',
    GATEWAY_MODE: 'aws',
    ...Object.fromEntries(settings.filter((setting) => sample[setting]).map((setting) => [setting, sample[setting]])),
  };
}


/** Where zod makes every schema's internals: counting there counts the schemas a module builds. */
const ZOD_SCHEMA_MADE = '_zodDesc.value = new Internals(def);';

/**
 * How many zod schemas a handler builds while it loads: a count, so unlike import times the
 * shared machine's load does not blur it. The unminified bundle with a counter at the line where
 * zod makes a schema (in whichever of the files it loads at import zod sits), imported once.
 */
function schemasAtLoad(name: string, loadedFiles: readonly string[]): number | undefined {
  let counted = false;
  let hasZod = false;
  for (const file of loadedFiles) {
    const text = readFileSync(file, 'utf8');
    hasZod ||= text.includes('node_modules/zod/');
    if (!text.includes(ZOD_SCHEMA_MADE)) continue;
    writeFileSync(file, text.split(ZOD_SCHEMA_MADE).join(`globalThis.__schemasMade = (globalThis.__schemasMade ?? 0) + 1; ${ZOD_SCHEMA_MADE}`));
    counted = true;
  }
  if (!counted) return hasZod ? undefined : 0;
  const script = `await import(${JSON.stringify(loadedFiles[0])});process.stdout.write(String(globalThis.__schemasMade ?? 0))`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: lambdaLikeEnvironment(name) }));
}

/** Where a function's bundle is built: its entry, its chunks in `chunks/` beside it. */
export function entryOf(name: string): string {
  return join(OUT, name, 'index.mjs');
}

/**
 * Each handler bundled exactly as the stack bundles it (lib/bundling.ts), then its size, the time a
 * fresh Node process takes to import it (a stand-in for the Lambda cold start's init: wall time,
 * and the CPU time it used, which other work on the shared cores stretches less) and the zod
 * schemas it builds while loading. The imports go round the handlers IMPORT_RUNS times, so a
 * burst of load elsewhere touches every handler a little rather than one a lot; medians are kept.
 */
export async function benchBundles(): Promise<{ figures: Figures; notes: string[] }> {
  mkdirSync(OUT, { recursive: true });
  const handlers = readdirSync(join(ROOT, 'functions')).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3));
  const figures: Figures = {};
  for (const name of handlers) {
    // Each function in a folder of its own, as its asset is: its entry and its chunks.
    const built = await bundleHandler(name, entryOf(name));
    figures[`bundle.${name}.kb`] = Math.round((built.bytes / 1024) * 10) / 10;
    figures[`bundle.${name}.asset_kb`] = Math.round((built.assetBytes / 1024) * 10) / 10;
    const counted = await bundleHandler(name, join(OUT, 'counted', name, 'index.mjs'), { minify: false });
    const schemas = schemasAtLoad(name, counted.loadedFiles);
    if (schemas !== undefined) figures[`bundle.${name}.zod_schemas_at_load`] = schemas;
  }
  const wall = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  for (let run = 0; run < IMPORT_RUNS; run += 1) {
    for (const name of handlers) {
      const outfile = entryOf(name);
      const script = `const c=process.cpuUsage();const t=performance.now();await import(${JSON.stringify(outfile)});const u=process.cpuUsage(c);process.stdout.write((performance.now()-t)+' '+(u.user+u.system)/1000)`;
      const [ms, cpuMs] = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: lambdaLikeEnvironment(name) }).split(' ').map(Number);
      wall.set(name, [...(wall.get(name) ?? []), ms!]);
      cpu.set(name, [...(cpu.get(name) ?? []), cpuMs!]);
    }
  }
  for (const name of handlers) {
    figures[`bundle.${name}.import_ms`] = Math.round(median(wall.get(name)!) * 10) / 10;
    figures[`bundle.${name}.import_cpu_ms`] = Math.round(median(cpu.get(name)!) * 10) / 10;
  }
  // The first request of a fresh process, round the handlers in turn as the imports are.
  const table = await firstRequestTable();
  const first = new Map<string, number[]>();
  try {
    for (let run = 0; run < FIRST_REQUEST_RUNS; run += 1) {
      for (const name of handlers.filter((handler) => handler in FIRST_REQUESTS)) {
        const { firstRequestMs } = await firstRequest(name, entryOf(name), { ...lambdaLikeEnvironment(name), ...table.env });
        first.set(name, [...(first.get(name) ?? []), firstRequestMs]);
      }
    }
  } finally {
    await table.stop();
  }
  for (const [name, times] of first) figures[`bundle.${name}.first_request_ms`] = Math.round(median(times) * 10) / 10;
  return {
    figures,
    notes: [
      `Minified ESM bundles as the stack builds them (AWS SDK bundled in, code split: \`kb\` is what a cold start loads, the entry and the chunks it imports at load; \`asset_kb\` the whole asset, with the chunks loaded on first use), and the median of ${IMPORT_RUNS} imports, each in a fresh \`${process.version}\` process, taken round the handlers in turn: wall time (import_ms) and CPU time (import_cpu_ms). zod_schemas_at_load counts the zod schemas each handler builds while it loads (the rest are built on first use).`,
      `first_request_ms: a fresh process imports the bundle and answers its first request (bench/first-request.ts: a request each function answers from the table, dynalite on loopback), timed from before the import; the median of ${FIRST_REQUEST_RUNS}, taken round the handlers in turn.`,
    ],
  };
}
