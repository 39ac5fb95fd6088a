import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { lambdaBundling } from '../lib/bundling';
import type { GatewayVariable } from '../shared/config';
import { functionSettings, type HandlerName } from '../shared/handler/function-settings';
import type { Figures } from './results-file';

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench', '.work', 'bundles');
const IMPORT_RUNS = 7;

/** What Lambda gives a function: its name, region, credentials and the settings the stack sets (checked at load). */
function lambdaLikeEnvironment(name: string): NodeJS.ProcessEnv {
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
  };
  const settings = functionSettings[name as HandlerName] ?? [];
  return {
    PATH: process.env.PATH,
    AWS_LAMBDA_FUNCTION_NAME: `IntegrationGateway-${name}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDBENCH',
    AWS_SECRET_ACCESS_KEY: 'bench',
    GATEWAY_MODE: 'aws',
    ...Object.fromEntries(settings.filter((setting) => sample[setting]).map((setting) => [setting, sample[setting]])),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Each handler bundled exactly as the stack bundles it (lib/bundling.ts), then its size and the
 * time a fresh Node process takes to import it: a stand-in for the Lambda cold start's init.
 */
export async function benchBundles(): Promise<{ figures: Figures; notes: string[] }> {
  mkdirSync(OUT, { recursive: true });
  const handlers = readdirSync(join(ROOT, 'functions')).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3));
  const figures: Figures = {};
  for (const name of handlers) {
    const outfile = join(OUT, `${name}.mjs`);
    await build({
      entryPoints: [join(ROOT, 'functions', `${name}.ts`)],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: lambdaBundling.target,
      minify: lambdaBundling.minify,
      mainFields: [...lambdaBundling.mainFields],
      banner: { js: lambdaBundling.banner },
      alias: { ...lambdaBundling.alias },
      logLevel: 'silent',
    });
    figures[`bundle.${name}.kb`] = Math.round((statSync(outfile).size / 1024) * 10) / 10;
    const times: number[] = [];
    for (let run = 0; run < IMPORT_RUNS; run += 1) {
      const script = `const t=performance.now();await import(${JSON.stringify(outfile)});process.stdout.write(String(performance.now()-t))`;
      const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: lambdaLikeEnvironment(name) });
      times.push(Number(output));
    }
    figures[`bundle.${name}.import_ms`] = Math.round(median(times) * 10) / 10;
  }
  return {
    figures,
    notes: [
      `Minified ESM bundles as the stack builds them (AWS SDK bundled in), and the median of ${IMPORT_RUNS} imports, each in a fresh \`${process.version}\` process.`,
    ],
  };
}
