import type * as Os from 'node:os';
import { builtin } from './by-require';

/** `node:os` for the bundles, through `require` (./by-require.ts says why). */
const os = builtin<typeof Os>('node:os');
export default os;
export const { homedir, platform, release } = os;
