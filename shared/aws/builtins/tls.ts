import type * as Tls from 'node:tls';
import { builtin } from './by-require';

/** `node:tls` for the bundles, through `require` (./by-require.ts says why). */
const tls = builtin<typeof Tls>('node:tls');
export default tls;
export const { DEFAULT_MIN_VERSION } = tls;
