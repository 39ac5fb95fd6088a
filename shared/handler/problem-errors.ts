import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResultV2 } from 'aws-lambda';
import { responseForError, responseToApiGateway } from '../api/http';
import { log } from '../log/logger';

/**
 * Errors → application/problem+json. A ProblemError thrown anywhere in a request becomes its
 * problem document (with the headers it asks for, e.g. `www-authenticate` on a 401); anything
 * else becomes a bare 500 that reveals nothing, and is logged with the error.
 */
export function problemErrors(): MiddlewareObj<unknown, APIGatewayProxyResultV2> {
  return {
    onError(request) {
      const response = responseForError(request.error);
      if (response.status >= 500) log.error('request failed', { status: response.status, error: request.error });
      else log.info('request refused', { status: response.status, problem: JSON.parse(response.body).type });
      request.response = responseToApiGateway(response);
      // No return value: the other middlewares' onError (headers, metrics, traces) still run.
    },
  };
}
