/**
 * How every handler is bundled, shared by the stack (lib/gateway-function.ts) and the bundle
 * benchmark (bench/bundles.ts), so the benchmark measures exactly what Lambda runs.
 */
export const lambdaBundling = {
  target: 'node24',
  minify: true,
  mainFields: ['module', 'main'],
  // ESM bundles have no `require`; a few dependencies still call it for Node built-ins.
  banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
} as const;
