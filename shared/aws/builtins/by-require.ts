// Not named `createRequire`: the bundles' banner declares that name at the top of the file.
import { createRequire as requireFrom } from 'node:module';

/**
 * A Node built-in through `require`, for the stand-ins in this folder that the Lambda bundles import
 * instead of the built-in itself (lib/bundling.ts aliases `node:<name>` to `./<name>.ts`). Imported
 * as an ES module, a built-in has Node build its module namespace by reading every export, and some
 * are getters that load more: `process` its stdin, stdout and report (~17 ms of CPU), `crypto` its
 * webcrypto (~12 ms), `fs` its streams and promises (~10 ms), `http` a WebSocket client (~40 ms).
 * `require` hands over the same module object and reads nothing; each stand-in then reads only the
 * names the bundles import (another name fails the build, by name).
 */
export function builtin<Module>(name: `node:${string}`): Module {
  return requireFrom(import.meta.url)(name) as Module;
}
