import type * as Url from 'node:url';
import { builtin } from './by-require';

/** `node:url` for the bundles, through `require` (./by-require.ts says why). */
const url = builtin<typeof Url>('node:url');
export default url;
export const { URL } = url;
