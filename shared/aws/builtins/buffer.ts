import type * as BufferModule from 'node:buffer';
import { builtin } from './by-require';

/** `node:buffer` for the bundles, through `require` (./by-require.ts says why). */
const bufferModule = builtin<typeof BufferModule>('node:buffer');
export default bufferModule;
export const { Buffer } = bufferModule;
