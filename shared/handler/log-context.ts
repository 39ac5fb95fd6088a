import type { MiddlewareObj } from '@middy/core';
import { addToLogContext } from '../log/log-context';
import { powertoolsLogger } from '../log/logger';

/** What an event says about who and what it is for, for the log context. */
export interface InvocationIds {
  requestId?: string | undefined;
  accountId?: string | undefined;
}

/** Shaped like an account id (shared/connectors.ts), so a junk query parameter never reaches the logs as one. */
const ACCOUNT_ID = /^[a-z0-9][a-z0-9-]{1,62}$/;

/**
 * Request and account ids into the log context: every line the invocation writes carries them
 * (and, in Lambda, Powertools' function name, cold start and request id). The context lives as
 * long as the invocation (shared/log/log-context.ts), so concurrent local invocations never mix.
 */
export function logContext<E>(idsOf: (event: E) => InvocationIds): MiddlewareObj<E> {
  return {
    before(request) {
      if (typeof request.context?.awsRequestId === 'string') powertoolsLogger.addContext(request.context);
      const { requestId, accountId } = idsOf(request.event);
      addToLogContext({
        ...(requestId ? { requestId } : {}),
        ...(accountId && ACCOUNT_ID.test(accountId) ? { accountId } : {}),
      });
    },
  };
}
