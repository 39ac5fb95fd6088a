import type * as ProcessModule from 'node:process';
import { builtin } from './by-require';

/** `node:process` for the bundles, through `require` (./by-require.ts says why). */
const processModule = builtin<typeof ProcessModule>('node:process');
export default processModule;
export const { env, versions } = processModule;
