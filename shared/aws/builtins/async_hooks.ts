import type * as AsyncHooks from 'node:async_hooks';
import { builtin } from './by-require';

/** `node:async_hooks` for the bundles, through `require` (./by-require.ts says why). */
const asyncHooks = builtin<typeof AsyncHooks>('node:async_hooks');
export default asyncHooks;
export const { AsyncLocalStorage } = asyncHooks;
