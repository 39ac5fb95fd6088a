import type * as ConsoleModule from 'node:console';
import { builtin } from './by-require';

/** `node:console` for the bundles, through `require` (./by-require.ts says why). */
const consoleModule = builtin<typeof ConsoleModule>('node:console');
export default consoleModule;
export const { Console } = consoleModule;
