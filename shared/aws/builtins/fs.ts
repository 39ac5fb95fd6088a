import type * as Fs from 'node:fs';
import { builtin } from './by-require';

/** `node:fs` for the bundles, through `require` (./by-require.ts says why). */
const fs = builtin<typeof Fs>('node:fs');
export default fs;
export const { ReadStream, createReadStream, fstatSync, lstatSync } = fs;
