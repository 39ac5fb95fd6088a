import type * as Stream from 'node:stream';
import { builtin } from './by-require';

/** `node:stream` for the bundles, through `require` (./by-require.ts says why). */
const stream = builtin<typeof Stream>('node:stream');
export default stream;
export const { PassThrough, Readable, Writable } = stream;
