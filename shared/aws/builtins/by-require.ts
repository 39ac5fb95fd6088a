// Not named `createRequire`: the bundles' banner declares that name at the top of the file.
import { createRequire as requireFrom } from 'node:module';

const requireBuiltin = requireFrom(import.meta.url);

/**
 * A Node built-in through `require`, for the stand-ins in this folder that the Lambda bundles import
 * instead of the built-in itself (lib/bundling.ts aliases `node:<name>` to `./<name>.ts`). Imported
 * as an ES module, a built-in has Node build its module namespace by reading every export, and some
 * are getters that load more (`process` its stdin and stdout, `crypto` its webcrypto, `http` a
 * WebSocket client). `require` hands over the same module object and reads nothing; each stand-in
 * then reads only the names the bundles import (another name fails the build, by name). Measured:
 * 5-18 ms less import CPU per function (docs/cold-starts.md).
 */
export function builtin<Module>(name: `node:${string}`): Module {
  return requireBuiltin(name) as Module;
}
