import * as z from 'zod/mini';
import type { ConnectionForm } from '../connections/connector-definition';
import { formField } from '../connections/form-fields';
import { placeholderProblem } from '../connections/placeholders';

const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const BillingSiteName = z.string().check(
  z.trim(),
  z.toLowerCase(),
  z.superRefine((site, ctx) => {
    if (site.includes('://') || site.includes('.') || site.includes('/')) {
      ctx.addIssue({
        code: 'custom',
        message: 'The site name is the subdomain only: for https://acme-test.chargebee.com enter acme-test.',
      });
    } else if (!SUBDOMAIN.test(site)) {
      ctx.addIssue({ code: 'custom', message: 'A site name is letters, digits and dashes (the subdomain of your billing site address).' });
    }
  }),
);

/** Billing connection, as the spec's Resources lists it. */
export const BillingConnectionInput = z
  .strictObject({
    siteName: BillingSiteName.check(
      z.describe('The subdomain of the billing site address: for https://acme-test.chargebee.com enter acme-test'),
      z.meta(formField.text('Site Name')),
    ),
    apiKey: z.string().check(
      z.trim(),
      z.minLength(8, 'The API key is too short: copy the whole key.'),
      z.superRefine((key, ctx) => {
        const problem = placeholderProblem(key, 'API key');
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
      z.describe('A read-only key is preferred'),
      z.meta(formField.secret('API Key')),
    ),
    environment: z
      .enum(['test', 'live'])
      .check(
        z.describe("Test Mode or Live Mode: the site's mode, which the API key must match"),
        z.meta(formField.choice('Environment', { test: 'Test Mode', live: 'Live Mode' })),
      ),
    requestsPerMinute: z
      .optional(z.number().check(z.int(), z.minimum(1), z.maximum(3_500)))
      .check(
        z.describe("Your billing plan's API limit per minute (default 150, the smallest plans' limit; up to 3,500)"),
        z.meta(formField.advanced('Requests per minute')),
      ),
  })
  .register(z.globalRegistry, { id: 'BillingConnectionInput' });
export type BillingConnectionInput = z.infer<typeof BillingConnectionInput>;

/** Connect Account for the billing connector: the spec's fields, and which of them are secrets. */
export const billingConnectionForm: ConnectionForm<typeof BillingConnectionInput> = {
  methods: ['api_key'],
  input: BillingConnectionInput,
  // The webhook's Basic credentials (shared/webhooks/billing-credentials.ts) are on the platform already.
  keptOnReconnect: ['webhookUsername', 'webhookPassword'],
  split(input) {
    const warnings: string[] = [];
    // Billing keys are issued per site and start with the site's mode; a mismatch cannot work.
    const keyMode = /^(test|live)_/.exec(input.apiKey)?.[1];
    if (keyMode && keyMode !== input.environment) {
      warnings.push(`The API key is a ${keyMode} key but Environment is ${input.environment === 'test' ? 'Test Mode' : 'Live Mode'}: check both.`);
    }
    // Test sites are conventionally named <site>-test; worth a look when the two disagree.
    if (input.environment === 'test' && !input.siteName.endsWith('-test')) {
      warnings.push(`Environment is Test Mode but "${input.siteName}" does not look like a test site (usually <site>-test).`);
    }
    if (input.environment === 'live' && input.siteName.endsWith('-test')) {
      warnings.push(`Environment is Live Mode but "${input.siteName}" looks like a test site.`);
    }
    return {
      config: {
        siteName: input.siteName,
        environment: input.environment,
        ...(input.requestsPerMinute ? { requestsPerMinute: input.requestsPerMinute } : {}),
      },
      credentials: { apiKey: input.apiKey },
      warnings,
    };
  },
};
