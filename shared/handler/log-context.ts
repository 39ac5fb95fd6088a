import type { Context } from 'aws-lambda';
import { isAccountId } from '../connectors';
import { powertoolsLogger } from '../log/logger';

/** What an event says about who and what it is for, for the log context. */
export interface InvocationIds {
  requestId?: string | undefined;
  accountId?: string | undefined;
}

/**
 * The request and account ids an invocation's log context starts with: every line the invocation
 * writes carries them. An account id not shaped like one (a junk query parameter) is left out.
 */
export function invocationLogFields({ requestId, accountId }: InvocationIds): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (requestId) fields.requestId = requestId;
  if (accountId && isAccountId(accountId)) fields.accountId = accountId;
  return fields;
}

/** In Lambda, Powertools' function name, cold start and request id on every line too. */
export function addLambdaToLogs(context: Context | undefined): void {
  if (typeof context?.awsRequestId === 'string') powertoolsLogger.addContext(context);
}
