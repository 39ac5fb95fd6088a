// Not named `createRequire`: the bundles' banner declares that name at the top of the file.
import { createRequire as requireFrom } from 'node:module';
import type * as Http from 'node:http';

/**
 * Stands in for `node:http` in the Lambda bundles (lib/bundling.ts aliases it here), for the one
 * import of it the bundles hold: the Powertools Tracer's `import http from 'node:http'`. Imported
 * as an ES module, Node builds the built-in's module namespace by reading every export, and three
 * of them (WebSocket, CloseEvent, MessageEvent) are getters that load the WebSocket client: ~40 ms
 * of CPU in every cold start of the traced functions, for a client they never use. `require` hands
 * over the same module object without reading them.
 */
const http: typeof Http = requireFrom(import.meta.url)('node:http');
export default http;
/** The named import the bundles hold besides (middy's util); another one fails the build, by name. */
export const { STATUS_CODES } = http;
