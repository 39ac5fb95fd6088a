import type * as Timers from 'node:timers';
import { builtin } from './by-require';

/** `node:timers` for the bundles, through `require` (./by-require.ts says why). */
const timers = builtin<typeof Timers>('node:timers');
export default timers;
export const { setTimeout } = timers;
