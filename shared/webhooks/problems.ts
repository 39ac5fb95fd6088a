import { ProblemError } from '../api/problem';
import type { WebhookRefusalReason } from '../metrics/catalogue';

/**
 * What the webhook receivers answer when they refuse a delivery. Each names what is wrong and what
 * to do (the spec's Errors row "Webhook not received": check address, credentials, secret), and
 * never a secret, a signature or a header value. A connector's own refusals (a bad signature, bad
 * Basic credentials) are made with `refused` in its folder.
 */

const type = (slug: string) => `urn:integration-gateway:problem:${slug}`;

/** The connector as the refusal names it: its word and the platform in the user's words. */
interface Receiving {
  name: string;
  platform: string;
}

export const webhookProblems = {
  refused: (problem: { slug: string; title: string; status: number; detail: string; remedy: string }) =>
    new ProblemError({ type: type(problem.slug), title: problem.title, status: problem.status, detail: problem.detail, remedy: problem.remedy }),

  accountMissing: (connector: Receiving) =>
    new ProblemError({
      type: type('webhook-address'),
      title: 'Incomplete webhook address',
      status: 400,
      detail: 'The webhook address names no account.',
      remedy: `Use the exact address the dashboard shows for the ${connector.platform}: it ends in ?account=<your account id>.`,
    }),

  unknownAccount: (connector: Receiving) =>
    new ProblemError({
      type: type('webhook-unknown-account'),
      title: 'Unknown webhook address',
      status: 404,
      detail: `No ${connector.name} connection answers at this webhook address.`,
      remedy: `Connect the ${connector.name} connector, then copy the webhook address from the dashboard into the ${connector.platform}.`,
    }),

  unavailable: () =>
    new ProblemError({
      type: type('webhook-unavailable'),
      title: 'Try again later',
      status: 503,
      detail: 'The event could not be queued; nothing was recorded. The platform retries the delivery.',
    }),
} as const;

/** The `reason` dimension of the WebhooksRefused metric for a refusal (a small fixed set: see shared/metrics/catalogue.ts). */
export function refusalReason(error: unknown): WebhookRefusalReason {
  if (!(error instanceof ProblemError)) return 'unavailable';
  switch (error.problem.type) {
    case type('webhook-signature'):
    case type('webhook-unauthorized'):
      return 'signature';
    case type('webhook-signature-expired'):
      return 'stale';
    case type('webhook-address'):
    case type('webhook-unknown-account'):
      return 'account';
    case type('webhook-secret-missing'):
      return 'secret_missing';
    case type('webhook-unavailable'):
      return 'unavailable';
    default:
      return error.problem.status >= 500 ? 'unavailable' : 'request';
  }
}
