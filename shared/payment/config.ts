import * as z from 'zod/mini';
import type { ConnectionForm } from '../connections/connector-definition';
import { authenticationMethodTitles, formField } from '../connections/form-fields';
import { placeholderProblem } from '../connections/placeholders';

/** Key prefixes the payment platform issues; the mode (live/test) is part of the key. */
const SERVER_KEY = /^(sk|rk)_(live|test)_[0-9A-Za-z]{8,}$/;

export const PaymentSecretKey = z.string().check(
  z.trim(),
  z.superRefine((key, ctx) => {
    const placeholder = placeholderProblem(key, 'key');
    if (placeholder) {
      ctx.addIssue({ code: 'custom', message: placeholder });
    } else if (/^pk_(live|test)_/.test(key)) {
      ctx.addIssue({
        code: 'custom',
        message:
          'This is a publishable key (pk_...), which only works in browsers and cannot read customer data. Use a secret key (sk_live_/sk_test_) or a restricted key with read access (rk_live_/rk_test_).',
      });
    } else if (/^(sk|rk)_(live|test)_/.test(key) && !SERVER_KEY.test(key)) {
      ctx.addIssue({
        code: 'custom',
        message: 'After its sk_/rk_ and live_/test_ prefix a key has only letters and digits (at least 8): copy the whole key, without spaces or quotes.',
      });
    } else if (!SERVER_KEY.test(key)) {
      ctx.addIssue({
        code: 'custom',
        message: 'Secret keys begin with sk_live_ or sk_test_; restricted keys begin with rk_live_ or rk_test_.',
      });
    }
  }),
);

/** Payment connection, as the spec's Resources lists it. */
export const PaymentConnectionInput = z
  .strictObject({
    authenticationMethod: z
      ._default(z.literal('api_key'), 'api_key')
      .check(z.describe('Authentication method (the spec offers API Key only)'), z.meta({ title: authenticationMethodTitles.api_key })),
    secretKey: PaymentSecretKey.check(
      z.describe('Begins with sk_live_, sk_test_, rk_live_ or rk_test_. A restricted key with read access is recommended: the gateway only reads.'),
      z.meta(formField.secret('Secret API Key or Restricted Key')),
    ),
    webhookSigningSecret: z
      .optional(
        z.string().check(
          z.trim(),
          z.superRefine((secret, ctx) => {
            const problem = placeholderProblem(secret, 'webhook signing secret');
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
            else if (!/^whsec_[0-9A-Za-z+/=]{8,}$/.test(secret)) ctx.addIssue({ code: 'custom', message: 'Webhook signing secrets begin with whsec_.' });
          }),
        ),
      )
      .check(z.describe('Optional; needed to verify webhooks (begins with whsec_)'), z.meta(formField.secret('Webhook Signing Secret'))),
  })
  .register(z.globalRegistry, { id: 'PaymentConnectionInput' });
export type PaymentConnectionInput = z.infer<typeof PaymentConnectionInput>;

/** Connect Account for the payment connector: the spec's fields, and which of them are secrets. */
export const paymentConnectionForm: ConnectionForm<typeof PaymentConnectionInput> = {
  methods: ['api_key'],
  input: PaymentConnectionInput,
  // Reconnecting with a new key but no signing secret keeps the one the webhook endpoint uses.
  keptOnReconnect: ['webhookSigningSecret'],
  split(input, kept) {
    const webhookSigningSecret = input.webhookSigningSecret ?? kept.webhookSigningSecret;
    const [kind, mode] = input.secretKey.split('_') as [string, string];
    return {
      config: {
        authenticationMethod: input.authenticationMethod,
        keyType: kind === 'rk' ? 'restricted' : 'secret',
        mode,
        webhookSigningSecretSet: webhookSigningSecret !== undefined,
      },
      credentials: {
        secretKey: input.secretKey,
        ...(webhookSigningSecret ? { webhookSigningSecret } : {}),
      },
      warnings: kind === 'sk' ? ['A secret key can read and write everything; the gateway only reads. A restricted key with read access is safer.'] : [],
    };
  },
};
