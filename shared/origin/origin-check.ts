import { hash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ProblemError } from '../api/problem';
import { registerSecret } from '../log/redaction';
import { heldOriginSecret, originSecret } from './origin-secret';

/** The header the distribution adds to every request it sends the HTTP API (a viewer's own copy is overwritten). */
export const ORIGIN_HEADER = 'x-origin-verify';

// One-shot: no Hash object per request.
const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

/**
 * Pure: whether the presented header is the expected one. Both sides are hashed first, so the compare is
 * constant-time whatever the lengths, and a wrong value's length tells nothing.
 */
export function originVerified(presented: string | undefined, expectedDigest: Buffer): boolean {
  return presented !== undefined && timingSafeEqual(digest(presented), expectedDigest);
}

/** A 403 that names the way in, never the header's value. */
export const notThroughGateway = () =>
  new ProblemError({
    type: 'urn:integration-gateway:problem:not-through-gateway',
    title: 'Forbidden',
    status: 403,
    detail: "Requests reach the API only through the gateway's address.",
    remedy: "Send the request to the gateway's address (the stack output ApiUrl), not to the HTTP API's own execute-api address.",
  });

/**
 * Every HTTP route's first step: a request that did not come through the distribution is refused before
 * anything reads or changes a record. The expected value's digest is kept per value (the source caches the
 * read), so a request costs one SHA-256 of the header and a constant-time compare. The header is taken out of
 * the event once checked, so nothing downstream can log or forward it.
 */
export function originCheck(): MiddlewareObj<APIGatewayProxyEventV2> {
  let known: { value: string; digest: Buffer } | undefined;
  const check = (request: { event: APIGatewayProxyEventV2 }, expected: string): void => {
    if (known?.value !== expected) {
      // Should any line ever carry it, the log redaction replaces it.
      registerSecret(expected);
      known = { value: expected, digest: digest(expected) };
    }
    const { [ORIGIN_HEADER]: presented, ...others } = request.event.headers ?? {};
    // A copy without it: the caller's event object stays as it was.
    request.event = { ...request.event, headers: others };
    if (!originVerified(presented, known.digest)) throw notThroughGateway();
  };
  return {
    // Synchronous once the value is in hand (a warm function): middy then awaits nothing here.
    before(request) {
      const held = heldOriginSecret();
      if (held !== undefined) return check(request, held);
      return originSecret().then((expected) => check(request, expected));
    },
  };
}
