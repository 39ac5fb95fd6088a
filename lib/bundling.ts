/**
 * How every handler is bundled, shared by the stack (lib/gateway-function.ts) and by the tests
 * and benchmarks that build a handler themselves (`bundleHandler`), so they run what Lambda runs.
 */
import { fileURLToPath } from 'node:url';

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
  /**
   * In Lambda the SDK's credentials come from the environment: the default provider chain is
   * replaced by that one provider (shared/aws/lambda-credentials.ts), ~95 KB less per bundle.
   */
  alias: {
    '@aws-sdk/credential-provider-node': fileURLToPath(new URL('../shared/aws/lambda-credentials.ts', import.meta.url)),
    ...builtinsByRequire,
  },
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

/** What went into a bundle (esbuild's metafile): each input file and the bytes it left in the output. */
export interface BundleContents {
  inputs: Record<string, { bytesInOutput: number }>;
  bytes: number;
  /** Each input's imports: `import-statement` ones load with it, `dynamic-import` ones when called. */
  imports: Record<string, Array<{ path: string; kind: string }>>;
}

/**
 * Bundles one handler of functions/ as the stack does, to `outfile`; `minify: false` keeps the
 * source readable. Answers what went in (bench/bundle-contents.ts, test/infra/function-bundles.test.ts).
 * esbuild is loaded only when called: the CDK app that imports this file never is.
 */
export async function bundleHandler(handler: string, outfile: string, options: { minify?: boolean; sourceMap?: boolean } = {}): Promise<BundleContents> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../functions/${handler}.ts`, import.meta.url))],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: lambdaBundling.target,
    minify: options.minify ?? lambdaBundling.minify,
    mainFields: [...lambdaBundling.mainFields],
    banner: { js: lambdaBundling.banner },
    alias: { ...lambdaBundling.alias },
    ...(options.sourceMap ? { sourcemap: true, sourcesContent: false } : {}),
    logLevel: 'silent',
    metafile: true,
  });
  const output = Object.entries(result.metafile.outputs).find(([path]) => !path.endsWith('.map'))![1];
  const imports = Object.fromEntries(Object.entries(result.metafile.inputs).map(([path, input]) => [path, input.imports.map(({ path: to, kind }) => ({ path: to, kind }))]));
  return { inputs: output.inputs, bytes: output.bytes, imports };
}
