import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const FOLDER = new URL('../../shared/aws/builtins/', import.meta.url);
const require = createRequire(import.meta.url);

/** The bundles import these in place of Node's built-ins (lib/bundling.ts): each must hand over the real thing. */
describe('the built-ins the bundles take through require', () => {
  const standIns = readdirSync(FOLDER).filter((file) => file.endsWith('.ts') && file !== 'by-require.ts');

  it.each(standIns)('%s answers the built-in itself and its own exports', async (file) => {
    const builtin = require(`node:${file.slice(0, -3).replace('-', '/')}`) as Record<string, unknown>;
    const standIn = (await import(new URL(file, FOLDER).href)) as Record<string, unknown>;
    expect(standIn.default).toBe(builtin);
    const named = Object.keys(standIn).filter((name) => name !== 'default');
    for (const name of named) expect(standIn[name], name).toBe(builtin[name]);
  });
});
