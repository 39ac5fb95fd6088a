import type * as Https from 'node:https';
import { builtin } from './by-require';

/** `node:https` for the bundles, through `require` (./by-require.ts says why). */
const https = builtin<typeof Https>('node:https');
export default https;
export const { Agent, request } = https;
