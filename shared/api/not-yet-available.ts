import { problemResponse, type HttpResponse } from './http';

/**
 * The answer of a route whose infrastructure is deployed but whose work arrives with a later
 * issue: a clear 501 instead of a silent 200, so no platform believes its event was applied.
 */
export function notYetAvailable(what: string): HttpResponse {
  return problemResponse({
    type: 'urn:integration-gateway:problem:not-yet-available',
    title: 'Not available yet',
    status: 501,
    detail: `${what} is not available in this version of the gateway.`,
  });
}
