import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { lambdaLikeEnvironment } from './bundles';
import { median, round } from './statistics';

/**
 * What a function's cold start is made of (docs/cold-starts.md): its bundle's bytes by package and
 * by folder of ours, and its import's CPU time split three ways, each from a fresh Node process:
 *
 * - setup: a module that imports only the Node built-ins the bundle imports as ES modules: what
 *   loading them and the module system costs (the built-ins the bundle takes through `require`,
 *   shared/aws/builtins/, count in evaluation);
 * - compile: the bundle's text wrapped in a function that is never called, less setup: what reading,
 *   parsing and compiling its top level costs;
 * - evaluation: the whole import less the two: what the modules do when they load (zod schemas
 *   built, settings checked).
 *
 * With `--base <dir>` (a checkout of another commit, node_modules beside it) each function is also
 * built from there and the imports of both are taken in turn, so one run compares them under the
 * same load. `npx tsx bench/bundle-contents.ts [--base <dir>] [function...]`
 */

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = join(ROOT, 'bench', '.work', 'contents');
const RUNS = 7;

/** Groups of packages, by what they are to the gateway. */
const PACKAGE_GROUPS: Array<[RegExp, string]> = [
  [/^@(aws-sdk|smithy|aws|aws-crypto)\//, 'AWS SDK'],
  [/^zod$/, 'zod'],
  [/^@aws-lambda-powertools\/tracer$|^aws-xray-sdk-core$|^semver$|^cls-hooked$|^emitter-listener$|^shimmer$|^async-hook-jl$|^stack-chain$/, 'X-Ray (Powertools Tracer)'],
  [/^@aws-lambda-powertools\//, 'Powertools logger, metrics'],
  [/^@middy\//, 'middy'],
];

/** A metafile input path's group: a package group, another package by name, or our folder. */
export function groupOf(path: string): string {
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (inPackage) return PACKAGE_GROUPS.find(([pattern]) => pattern.test(inPackage[1]!))?.[1] ?? `other: ${inPackage[1]}`;
  const own = path.replace(/^(\.\.\/)+[^/]+\/[^/]+\//, '');
  return own.includes('/') ? `ours: ${own.split('/').slice(0, 2).join('/').replace(/\.ts$/, '')}` : `ours: ${own}`;
}

/** KB by group, largest first. */
export function bytesByGroup(inputs: Record<string, { bytesInOutput: number }>): Array<[string, number]> {
  const totals = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(inputs)) totals.set(groupOf(path), (totals.get(groupOf(path)) ?? 0) + bytesInOutput);
  return [...totals].map(([group, bytes]): [string, number] => [group, round(bytes / 1024, 1)]).sort((a, b) => b[1] - a[1]);
}

const IMPORT = /import\s*(?:\{[^}]*\}|\*\s*as\s+[\w$]+|[\w$]+)\s*from\s*["'][^"']*["'];?/g;
/** `import"./chunks/x.mjs"`: a chunk the entry loads for its side effects only. */
const BARE_IMPORT = /import\s*["'][^"']*["'];?/g;

/**
 * The two stand-ins beside a bundle: its built-in imports alone, and its entry's text wrapped in a
 * function never called. The chunks the entry imports (code splitting, lib/bundling.ts) are left out
 * of both: their parse and compile count in evaluation.
 */
function standIns(bundle: string): { setup: string; compile: string } {
  const text = readFileSync(bundle, 'utf8');
  const imports = (text.match(IMPORT) ?? []).filter((line) => !line.includes('./chunks/')).map((line) => (line.endsWith(';') ? line : `${line};`));
  const body = text.replace(IMPORT, '').replace(BARE_IMPORT, '').replace(/export\s*\{[^}]*\};?/, '');
  const setup = bundle.replace(/\.mjs$/, '.setup.mjs');
  const compile = bundle.replace(/\.mjs$/, '.compile.mjs');
  writeFileSync(setup, `${imports.join('\n')}\nexport const loaded = true;\n`);
  writeFileSync(compile, `${imports.join('\n')}\nexport async function never() {\n${body}\n}\n`);
  return { setup, compile };
}

/** CPU ms (user + system) a fresh Node process spends importing `file`. */
function importCpuMs(file: string, env: NodeJS.ProcessEnv): number {
  const script = `const c=process.cpuUsage();await import(${JSON.stringify(file)});const u=process.cpuUsage(c);process.stdout.write(String((u.user+u.system)/1000))`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env }));
}

interface Build {
  tree: string;
  name: string;
  kb: number;
  groups: Array<[string, number]>;
  files: { full: string; setup: string; compile: string };
}

async function buildIn(tree: string, label: string, name: string): Promise<Build> {
  const { bundleHandler } = (await import(pathToFileURL(join(tree, 'lib', 'bundling.ts')).href)) as typeof import('../lib/bundling');
  const full = join(OUT, label, `${name}.mjs`);
  mkdirSync(join(OUT, label), { recursive: true });
  const contents = await bundleHandler(name, full);
  // An older tree's bundleHandler answers nothing: its size is then the file's.
  const kb = round((contents?.bytes ?? readFileSync(full).length) / 1024, 1);
  return { tree: label, name, kb, groups: contents ? bytesByGroup(contents.inputs) : [], files: { full, ...standIns(full) } };
}

export async function bundleContents(names: string[], base?: string): Promise<string> {
  const trees: Array<[string, string]> = [['this tree', ROOT], ...(base ? [['base', resolve(base)] as [string, string]] : [])];
  const builds: Build[] = [];
  for (const name of names) for (const [label, tree] of trees) builds.push(await buildIn(tree, label, name));
  const samples = new Map<Build, { setup: number[]; compile: number[]; full: number[] }>(builds.map((b) => [b, { setup: [], compile: [], full: [] }]));
  // Round the builds in turn, each kind of import in turn, so a burst of load elsewhere touches all a little.
  for (let run = 0; run < RUNS; run += 1) {
    for (const build of builds) {
      const env = lambdaLikeEnvironment(build.name);
      const taken = samples.get(build)!;
      taken.setup.push(importCpuMs(build.files.setup, env));
      taken.compile.push(importCpuMs(build.files.compile, env));
      taken.full.push(importCpuMs(build.files.full, env));
    }
  }
  const lines = [
    `Import CPU ms, median of ${RUNS} fresh \`${process.version}\` processes each (setup: built-ins and module system; compile: parse and compile of the bundle; evaluation: what its modules do at load).`,
    '',
    '| function | tree | KB | import CPU ms | setup | compile | evaluation |',
    '|---|---|--:|--:|--:|--:|--:|',
  ];
  for (const build of builds) {
    const { setup, compile, full } = samples.get(build)!;
    const [s, c, f] = [median(setup), median(compile), median(full)];
    lines.push(`| ${build.name} | ${build.tree} | ${build.kb} | ${round(f, 1)} | ${round(s, 1)} | ${round(c - s, 1)} | ${round(f - c, 1)} |`);
  }
  for (const build of builds.filter((b) => b.groups.length > 0)) {
    lines.push('', `${build.name} (${build.tree}), ${build.kb} KB: ${build.groups.filter(([, kb]) => kb >= 2).map(([group, kb]) => `${group} ${kb}`).join(' · ')}`);
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const baseAt = args.indexOf('--base');
  const base = baseAt >= 0 ? args[baseAt + 1] : undefined;
  const named = args.filter((arg, index) => !arg.startsWith('--') && (baseAt < 0 || index !== baseAt + 1));
  const all = readdirSync(join(ROOT, 'functions')).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3));
  process.stdout.write(`${await bundleContents(named.length ? named : all, base)}\n`);
}
