import type { MiddlewareObj } from '@middy/core';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { APIGatewayProxyResultV2 } from 'aws-lambda';

type Answer = { response?: APIGatewayProxyResultV2 | null };

/**
 * The headers middy's port of Helmet sets, for an API that answers JSON and redirects (nothing to
 * frame, embed, sniff or cache), plus `Cache-Control: no-store` (answers carry account data).
 * Computed once.
 */
function apiSecurityHeaders(): Record<string, string> {
  const helmet = httpSecurityHeaders({
    contentSecurityPolicy: { 'default-src': "'none'", 'frame-ancestors': "'none'", 'report-to': '' },
    // A list of forty browser features concerns documents, not JSON answers (the type says a record; false turns it off).
    permissionsPolicy: false as unknown as Record<string, string>,
  });
  const probe = { response: { statusCode: 200, headers: {} as Record<string, string> } };
  helmet.after?.(probe as never);
  return { ...probe.response.headers, 'Cache-Control': 'no-store' };
}

/**
 * Security headers on every HTTP answer, success or problem. A header the answer sets itself wins
 * (the OAuth callback's HTML pages carry their own Content-Security-Policy), compared without case,
 * so no header is ever sent twice.
 */
export function securityHeaders(): MiddlewareObj<unknown, APIGatewayProxyResultV2> {
  const headers = Object.entries(apiSecurityHeaders()).map(([name, value]) => ({ name, lower: name.toLowerCase(), value }));
  /** The headers to add to an answer, by the names it sets itself (a few sets: the code's own answers), worked out once per set. */
  const addedFor = new Map<string, Record<string, string>>();
  const added = (present: string[]): Record<string, string> => {
    const shape = present.join('\n');
    let adding = addedFor.get(shape);
    if (!adding) {
      const lower = present.map((name) => name.toLowerCase());
      adding = Object.fromEntries(headers.filter((header) => !lower.includes(header.lower)).map((header) => [header.name, header.value]));
      if (addedFor.size < MAX_SHAPES) addedFor.set(shape, adding);
    }
    return adding;
  };
  const apply = (request: Answer) => {
    const response = request.response;
    if (!response || typeof response !== 'object') return;
    const own = (response.headers ??= {});
    Object.assign(own, added(Object.keys(own)));
  };
  return { after: apply, onError: apply };
}

/** Bounds the memory of header-name sets; the answers' names come from the code, not from callers, so a few are ever seen. */
const MAX_SHAPES = 64;
