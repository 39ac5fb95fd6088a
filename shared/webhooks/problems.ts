import { ProblemError } from '../api/problem';
import type { WebhookRefusalReason } from '../metrics/catalogue';
import { BASIC_CHALLENGE } from './basic-credentials';

/**
 * What the webhook receivers answer when they refuse a delivery. Each names what is wrong and what
 * to do (the spec's Errors row "Webhook not received": check address, credentials, secret), and
 * never a secret, a signature or a header value.
 */

const type = (slug: string) => `urn:integration-gateway:problem:${slug}`;

const platformWords = { payment: 'payment platform', billing: 'billing platform' } as const;
export type WebhookConnector = keyof typeof platformWords;

export const webhookProblems = {
  accountMissing: (connector: WebhookConnector) =>
    new ProblemError({
      type: type('webhook-address'),
      title: 'Incomplete webhook address',
      status: 400,
      detail: 'The webhook address names no account.',
      remedy: `Use the exact address the dashboard shows for the ${platformWords[connector]}: it ends in ?account=<your account id>.`,
    }),

  unknownAccount: (connector: WebhookConnector) =>
    new ProblemError({
      type: type('webhook-unknown-account'),
      title: 'Unknown webhook address',
      status: 404,
      detail: `No ${connector} connection answers at this webhook address.`,
      remedy: `Connect the ${connector} connector, then copy the webhook address from the dashboard into the ${platformWords[connector]}.`,
    }),

  signingSecretMissing: () =>
    new ProblemError({
      type: type('webhook-secret-missing'),
      title: 'No webhook signing secret',
      status: 400,
      detail: 'The payment connection has no Webhook Signing Secret, so its webhooks cannot be verified.',
      remedy: "Add the Webhook Signing Secret to the payment connection (the endpoint's signing secret on the payment platform, whsec_...).",
    }),

  invalidSignature: (detail: string) =>
    new ProblemError({
      type: type('webhook-signature'),
      title: 'Invalid webhook signature',
      status: 400,
      detail: `The delivery is not signed as the payment platform signs webhooks: ${detail}.`,
      remedy:
        "Check that the payment connection's Webhook Signing Secret is the signing secret of this endpoint on the payment platform, and that the body reaches the gateway unchanged.",
    }),

  staleSignature: (toleranceSeconds: number) =>
    new ProblemError({
      type: type('webhook-signature-expired'),
      title: 'Webhook signature outside the time tolerance',
      status: 400,
      detail: `The signature's timestamp is more than ${toleranceSeconds} s away from the gateway's clock; replayed deliveries are refused.`,
      remedy: 'Let the platform send a fresh delivery (it signs each attempt anew); if every delivery fails this way, check the sending clock.',
    }),

  unauthorized: (detail: string) =>
    new ProblemError(
      {
        type: type('webhook-unauthorized'),
        title: 'Webhook credentials required',
        status: 401,
        detail,
        remedy:
          "Create webhook credentials for the billing connection in the dashboard, and enter them as the webhook's Basic authentication username and password on the billing platform.",
      },
      // RFC 9110: a 401 names the scheme that would be accepted.
      { 'www-authenticate': BASIC_CHALLENGE },
    ),

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
