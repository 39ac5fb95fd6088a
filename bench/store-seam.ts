/**
 * The store's functions through the tests' seam (test/support/store-seam.ts) in a script run
 * outside vitest, so a profile can wrap store calls (`replaceOn`) as a test does: every import of
 * shared/store/store.ts is sent to a module that re-exports the store's functions through the seam,
 * as vitest's `vi.mock` does. Node's module hooks (`registerHooks`) do the sending, and a module's
 * imports are all resolved before its first line runs, so a profile is a launcher that imports this,
 * then its body with `import()` (bench/sync-profile.ts).
 */
import { registerHooks } from 'node:module';

const storeUrl = new URL('../shared/store/store.ts', import.meta.url).href;
const seamUrl = new URL('../test/support/store-seam.ts', import.meta.url).href;
const names = Object.keys(await import(storeUrl));
// The module that re-exports the store through the seam, as a data: URL (no load hook: Node's
// synchronous load hooks cannot pass CommonJS modules on, and the profiles load some).
const SEAMED = `data:text/javascript,${encodeURIComponent(
  [
    `import * as original from ${JSON.stringify(storeUrl)};`,
    `import { storeSeam } from ${JSON.stringify(seamUrl)};`,
    'const seamed = storeSeam(original);',
    ...names.map((name) => `export const ${name} = seamed.${name};`),
  ].join('\n'),
)}`;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    return resolved.url === storeUrl && context.parentURL !== SEAMED ? { url: SEAMED, format: 'module', shortCircuit: true } : resolved;
  },
});
