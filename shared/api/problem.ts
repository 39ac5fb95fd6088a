import * as z from 'zod/mini';

/**
 * Every error the gateway returns is an RFC 9457 problem document (`application/problem+json`),
 * with `remedy` added where the spec's Errors table names one: the user reads what to do next.
 */
export const Problem = z
  .object({
    type: z.string().check(z.describe('A URI naming the kind of problem')),
    title: z.string(),
    status: z.number().check(z.int()),
    detail: z.optional(z.string()),
    remedy: z.optional(z.string()).check(z.describe('What the user can do about it')),
    instance: z.optional(z.string()),
    /** Field-level validation failures: where, and what is wrong (never the value sent). */
    errors: z.optional(z.array(z.object({ path: z.string(), message: z.string() }))),
  })
  .register(z.globalRegistry, { id: 'Problem' });
export type Problem = z.infer<typeof Problem>;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Thrown anywhere in a request; the HTTP layer turns it into the response. */
export class ProblemError extends Error {
  /** `headers`: what the answer must carry besides the document (RFC 9110: a 401 names its scheme in `www-authenticate`). */
  constructor(
    readonly problem: Problem,
    readonly headers: Record<string, string> = {},
  ) {
    super(problem.detail ?? problem.title);
    this.name = 'ProblemError';
  }
}

const problemType = (slug: string) => `urn:integration-gateway:problem:${slug}`;

function make(slug: string, title: string, status: number, detail?: string, extra?: Partial<Problem>): ProblemError {
  return new ProblemError({ type: problemType(slug), title, status, ...(detail ? { detail } : {}), ...extra });
}

export const problems = {
  invalidBody: (errors: Problem['errors'], detail = 'The request body does not match the schema.') =>
    make('invalid-body', 'Invalid request body', 400, detail, { errors }),
  malformedJson: () => make('malformed-json', 'Malformed JSON', 400, 'The request body is not valid JSON.'),
  invalidParameter: (errors: Problem['errors']) => make('invalid-parameter', 'Invalid parameter', 400, 'A path or query parameter is not valid.', { errors }),
  unauthorized: (detail: string) => make('unauthorized', 'Unauthorized', 401, detail),
  forbidden: (detail: string) => make('forbidden', 'Forbidden', 403, detail),
  notFound: (detail: string) => make('not-found', 'Not found', 404, detail),
  methodNotAllowed: (method: string) => make('method-not-allowed', 'Method not allowed', 405, `${method} is not allowed here.`),
  conflict: (detail: string, remedy?: string) => make('conflict', 'Conflict', 409, detail, remedy ? { remedy } : {}),
  /** A connection's settings forbid this use of it: a 409 that says which setting to change. */
  notAllowedBySettings: (settingsWords: string, detail: string, remedy: string) =>
    make('not-allowed-by-settings', `Not allowed by the ${settingsWords}`, 409, detail, { remedy }),
  payloadTooLarge: (limitBytes: number) =>
    make('payload-too-large', 'Payload too large', 413, `The request body is larger than ${limitBytes} bytes.`, {
      remedy: `Send at most ${limitBytes} bytes per request.`,
    }),
  unsupportedMediaType: (expected: string) =>
    make('unsupported-media-type', 'Unsupported media type', 415, `The request body must be ${expected}.`, {
      remedy: `Send the header Content-Type: ${expected}.`,
    }),
  integrationsDisabled: () =>
    make('integrations-disabled', 'Integrations are not enabled', 403, 'The Integrations section is not enabled for this account.', {
      remedy: 'Ask your support contact to enable Integrations for the account.',
    }),
  /** An account over one of its quotas: 429 with `Retry-After` (whole seconds). */
  overQuota: (what: string, retryAfterSeconds: number) =>
    new ProblemError(
      {
        type: problemType('over-quota'),
        title: 'Too many requests',
        status: 429,
        detail: `The account is over its quota of ${what}.`,
        remedy: `Wait ${retryAfterSeconds} s (Retry-After) and send again, spreading requests out; if the account needs more, ask your support contact to raise its quota.`,
      },
      { 'retry-after': String(retryAfterSeconds) },
    ),
  internal: () => make('internal', 'Internal error', 500, 'Something went wrong on our side; the request changed nothing that it reported.'),
} as const;

/** Turns a zod error into the field list of a problem, without echoing any value that was sent. */
export function fieldErrors(error: z.core.$ZodError): NonNullable<Problem['errors']> {
  return error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.map(String).join('.') : '(body)',
    message: issue.message,
  }));
}
