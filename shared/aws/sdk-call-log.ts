/**
 * The AWS SDK's logger middleware, taken off a client. On every call it copies the command's input
 * and output through a sensitive-field filter to hand them to `logger.info`, and it does so even
 * with the default logger, whose `info` does nothing: for a BatchGetItem of 100 records that walk
 * costs more CPU than the call's own (un)marshalling (a fifth of a sync page's CPU, measured by
 * `npm run bench -- sync` under --cpu-prof). The gateway never gives the SDK a logger, so nothing
 * is lost; its own logs name the calls it cares about.
 */

/** The part of an SDK v3 client this needs. */
interface AwsClientStack {
  middlewareStack: { remove(toRemove: string): boolean };
}

export const SDK_LOGGER_MIDDLEWARE = 'loggerMiddleware';

/** Returns the client without the SDK's per-call log step (a client that has none is returned as it is). */
export function withoutCallLog<T extends AwsClientStack>(client: T): T {
  client.middlewareStack.remove(SDK_LOGGER_MIDDLEWARE);
  return client;
}
