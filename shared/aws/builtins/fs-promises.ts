import type * as FsPromises from 'node:fs/promises';
import { builtin } from './by-require';

/** `node:fs/promises` for the bundles, through `require` (./by-require.ts says why). */
const fsPromises = builtin<typeof FsPromises>('node:fs/promises');
export default fsPromises;
export const { readFile } = fsPromises;
