import type * as Http from 'node:http';
import { builtin } from './by-require';

/** `node:http` for the bundles, through `require` (./by-require.ts says why). */
const http = builtin<typeof Http>('node:http');
export default http;
export const { Agent, STATUS_CODES, request } = http;
