import type * as DiagnosticsChannel from 'node:diagnostics_channel';
import { builtin } from './by-require';

/** `node:diagnostics_channel` for the bundles, through `require` (./by-require.ts says why). */
const diagnosticsChannel = builtin<typeof DiagnosticsChannel>('node:diagnostics_channel');
export default diagnosticsChannel;
export const { subscribe } = diagnosticsChannel;
