import type { MiddlewareObj } from '@middy/core';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { APIGatewayProxyResultV2 } from 'aws-lambda';

/**
 * Security headers on every HTTP answer, success or problem: middy's port of Helmet, set for an
 * API that answers JSON and redirects (nothing to frame, embed, sniff or cache), plus
 * `Cache-Control: no-store` (answers carry account data).
 */
export function securityHeaders(): MiddlewareObj<unknown, APIGatewayProxyResultV2> {
  const helmet = httpSecurityHeaders({
    contentSecurityPolicy: {
      'default-src': "'none'",
      'frame-ancestors': "'none'",
      'report-to': '',
    },
    // A list of forty browser features concerns documents, not JSON answers (the type says a record; false turns it off).
    permissionsPolicy: false as unknown as Record<string, string>,
  });
  const noStore = (request: { response?: APIGatewayProxyResultV2 | null }) => {
    const response = request.response;
    if (!response || typeof response !== 'object') return;
    response.headers ??= {};
    if (!Object.keys(response.headers).some((name) => name.toLowerCase() === 'cache-control')) response.headers['cache-control'] = 'no-store';
  };
  return {
    after(request) {
      helmet.after?.(request as never);
      noStore(request);
    },
    onError(request) {
      if (request.response === undefined) return;
      helmet.onError?.(request as never);
      noStore(request);
    },
  };
}
