/**
 * How every handler is bundled, shared by the stack (lib/gateway-function.ts) and by the tests
 * and benchmarks that build a handler themselves (`bundleHandler`), so they run what Lambda runs.
 */
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Metafile } from 'esbuild';

/**
 * The Node built-ins the bundles import by name, each through `require` (shared/aws/builtins/):
 * imported as ES modules, Node reads every export of each, and some load more (a WebSocket client
 * for `http`, stdin and stdout for `process`, webcrypto for `crypto`). `node:zlib` stays an ES
 * import: the SDK reads it as a namespace, and a stand-in naming only some exports would answer
 * undefined for the others. `node:module` too: the banner imports it anyway.
 */
const BY_REQUIRE = ['async_hooks', 'buffer', 'console', 'crypto', 'diagnostics_channel', 'fs', 'fs/promises', 'http', 'https', 'os', 'path', 'process', 'stream', 'timers', 'tls', 'url'];
const builtinsByRequire: Record<string, string> = Object.fromEntries(
  BY_REQUIRE.map((name) => [`node:${name}`, fileURLToPath(new URL(`../shared/aws/builtins/${name.replace('/', '-')}.ts`, import.meta.url))]),
);

export const lambdaBundling = {
  target: 'node24',
  minify: true,
  mainFields: ['module', 'main'],
  // ESM bundles have no `require`; a few dependencies still call it for Node built-ins.
  banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
  alias: builtinsByRequire,
} as const;

/**
 * A function whose memory holds its work rather than its code (the poller: its 128 MB hold as many
 * long-polls as fit) runs lean: no source maps (Node keeps a loaded map in memory, ~8 MB for the
 * poller's), and a young generation capped at 1 MB a semi-space (V8 otherwise grows it to 16 MB
 * under a burst of answers and keeps it). Measured side by side on the poller's bundle, at rest
 * with fetch loaded (`npm run bench -- conversations`, poller_bundle_rss_mb): about 90 MB as the
 * other functions run, 77 MB lean. Scavenges get more frequent; a poller mostly waits on sockets.
 */
export const leanRuntime = {
  sourceMap: false,
  nodeOptions: '--max-semi-space-size=1',
} as const;

/** What went into a bundle (esbuild's metafile). */
export interface BundleContents {
  /** Each input file and the bytes it left in the files loaded at import. */
  inputs: Record<string, { bytesInOutput: number }>;
  /** Bytes loaded at import: the entry file and the chunks it imports statically, transitively (and the X-Ray SDK's where it loads at init). */
  bytes: number;
  /** Bytes of every file of the function's code: the chunks loaded on first use (`import()`) too. */
  assetBytes: number;
  /** The files loaded at import, the entry first (a tool that rewrites the bundle's text rewrites them all). */
  loadedFiles: string[];
  /** Each input's imports: `import-statement` ones load with it, `dynamic-import` ones when called. */
  imports: Record<string, Array<{ path: string; kind: string }>>;
}

/**
 * esbuild's options for one handler of functions/, shared by the stack (lib/gateway-function.ts)
 * and `bundleHandler`: the entry is `<outdir>/<entryName>.mjs`. With code splitting, each `import()`
 * (the API's route areas, the X-Ray SDK where tracing is on) becomes a chunk in `chunks/` that Node
 * reads only when it is called, where one file would carry and compile all of it at every cold start
 * (docs/cold-starts.md, "Code splitting"). Nothing is external: a bundled AWS SDK client loaded 2-3x
 * faster than the runtime's copy. Source maps carry the mappings, not the sources: stack traces need
 * no more, and the upload stays small.
 */
export function handlerBuildOptions(handler: string, outdir: string, options: { entryName?: string; minify?: boolean; sourceMap?: boolean } = {}) {
  return {
    entryPoints: [{ in: fileURLToPath(new URL(`../functions/${handler}.ts`, import.meta.url)), out: options.entryName ?? 'index' }],
    outdir,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    platform: 'node' as const,
    format: 'esm' as const,
    target: lambdaBundling.target,
    minify: options.minify ?? lambdaBundling.minify,
    mainFields: [...lambdaBundling.mainFields],
    banner: { js: lambdaBundling.banner },
    alias: { ...lambdaBundling.alias },
    ...(options.sourceMap ? { sourcemap: true, sourcesContent: false } : {}),
    logLevel: 'silent' as const,
    metafile: true,
  };
}

/**
 * Bundles one handler of functions/ as the stack does, its entry at `outfile` and its chunks in
 * `chunks/` beside it; `minify: false` keeps the source readable. Answers what went in
 * (bench/bundle-contents.ts, test/infra/function-bundles.test.ts). esbuild is loaded only when
 * called: the CDK app loads it only to build the stack's assets.
 */
export async function bundleHandler(handler: string, outfile: string, options: { minify?: boolean; sourceMap?: boolean } = {}): Promise<BundleContents> {
  const { build } = await import('esbuild');
  const result = await build(handlerBuildOptions(handler, dirname(outfile), { ...options, entryName: basename(outfile).replace(/\.mjs$/, '') }));
  return contentsOf(result.metafile!, outfile);
}

/**
 * Modules whose `import()` runs while the function loads, in Lambda: shared/handler/traces.ts loads
 * the X-Ray SDK at the top level where tracing is on (the queue workers). Their chunks count as loaded.
 */
const IMPORTS_AT_LOAD = ['shared/handler/traces.ts'];

/** What a build put in the files its entry loads at import, and in all of them. */
export function contentsOf(metafile: Metafile, entry: string): BundleContents {
  const outputs = Object.entries(metafile.outputs).filter(([path]) => !path.endsWith('.map'));
  const byPath = new Map(outputs.map(([path, output]) => [resolve(path), output]));
  const loaded: string[] = [];
  const visit = (path: string) => {
    if (loaded.includes(path)) return;
    loaded.push(path);
    const output = byPath.get(path);
    const importsAtLoad = Object.keys(output?.inputs ?? {}).some((input) => IMPORTS_AT_LOAD.some((module) => input.endsWith(module)));
    for (const imported of output?.imports ?? []) {
      const atLoad = imported.kind === 'import-statement' || (importsAtLoad && imported.kind === 'dynamic-import');
      if (atLoad && byPath.has(resolve(imported.path))) visit(resolve(imported.path));
    }
  };
  visit(resolve(entry));
  const inputs: Record<string, { bytesInOutput: number }> = {};
  for (const path of loaded) {
    for (const [input, { bytesInOutput }] of Object.entries(byPath.get(path)?.inputs ?? {})) inputs[input] = { bytesInOutput: (inputs[input]?.bytesInOutput ?? 0) + bytesInOutput };
  }
  const imports = Object.fromEntries(Object.entries(metafile.inputs).map(([path, input]) => [path, input.imports.map(({ path: to, kind }) => ({ path: to, kind }))]));
  return {
    inputs,
    bytes: loaded.reduce((sum, path) => sum + (byPath.get(path)?.bytes ?? 0), 0),
    assetBytes: outputs.reduce((sum, [, output]) => sum + output.bytes, 0),
    loadedFiles: loaded,
    imports,
  };
}
