import type * as Path from 'node:path';
import { builtin } from './by-require';

/** `node:path` for the bundles, through `require` (./by-require.ts says why). */
const path = builtin<typeof Path>('node:path');
export default path;
export const { join, sep } = path;
