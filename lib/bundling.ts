/**
 * How every handler is bundled, shared by the stack (lib/gateway-function.ts) and the bundle
 * benchmark (bench/bundles.ts), so the benchmark measures exactly what Lambda runs.
 */
import { fileURLToPath } from 'node:url';

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
  },
} as const;
