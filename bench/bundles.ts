import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { lambdaBundling } from '../lib/bundling';
import type { Figures } from './results-file';

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench', '.work', 'bundles');
const IMPORT_RUNS = 7;

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
      logLevel: 'silent',
    });
    figures[`bundle.${name}.kb`] = Math.round((statSync(outfile).size / 1024) * 10) / 10;
    const times: number[] = [];
    for (let run = 0; run < IMPORT_RUNS; run += 1) {
      const script = `const t=performance.now();await import(${JSON.stringify(outfile)});process.stdout.write(String(performance.now()-t))`;
      const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, AWS_REGION: 'us-east-1', TABLE_NAME: 'bench' } });
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
