import * as z from 'zod/mini';
import type { ConnectionForm, ConnectionParts } from '../connections/connector-definition';
import { authenticationMethodTitles, formField } from '../connections/form-fields';
import { IntegrationUsername, OAuthClientId, OAuthClientSecret, PrivateKeyPem } from '../identity/identity-fields';

/**
 * The messaging connection form (spec Resources, "Messaging connection"): JWT bearer (preferred)
 * or authorization code. Secrets are the client secret, the certificate's private key, and, once
 * the browser returns, the refresh token; the Messaging Platform Key is copied from the
 * configured messaging channel and is not a secret.
 */

/** Which login the org uses: the gateway maps it to its configured login URLs, never to a typed address. */
export const MessagingLoginChoice = z.enum(['production', 'sandbox']);

export const MessagingPlatformKey = z
  .string()
  .check(
    z.trim(),
    z.minLength(8, 'The Messaging Platform Key is copied from the messaging channel: copy it whole.'),
    z.maxLength(255),
    z.regex(/^[\x21-\x7e]+$/, 'The Messaging Platform Key has no spaces.'),
    z.describe('Copied from the configured messaging channel'),
  );

const loginUrl = z
  ._default(MessagingLoginChoice, 'production')
  .check(
    z.describe('production (default) or sandbox: which login the org uses'),
    z.meta({ ...formField.choice('Login', { production: 'Production', sandbox: 'Sandbox' }), 'x-advanced': true }),
  );
const clientId = OAuthClientId.check(z.meta(formField.text('Client ID')));
const clientSecret = OAuthClientSecret.check(z.meta(formField.secret('Client Secret')));

/** JWT bearer: the spec's Client ID, Client Secret, Username and Certificate (the private key's content). */
export const MessagingJwtBearerInput = z.strictObject({
  authenticationMethod: z
    ._default(z.literal('jwt_bearer'), 'jwt_bearer')
    .check(z.describe('JWT bearer (preferred; server to server)'), z.meta({ title: authenticationMethodTitles.jwt_bearer })),
  clientId,
  clientSecret,
  username: IntegrationUsername.check(z.meta(formField.text('Username'))),
  certificate: PrivateKeyPem.check(
    z.describe('The private key content (PEM) matching the certificate uploaded to the OAuth client'),
    z.meta(formField.privateKey('Certificate')),
  ),
  // Not in the spec's JWT row, but conversations start with it: optional here.
  messagingPlatformKey: z.optional(MessagingPlatformKey).check(z.meta(formField.advanced('Messaging Platform Key'))),
  loginUrl,
});

/** Authorization code: the spec's Client ID, Client Secret and Messaging Platform Key; the user approves in the browser. */
export const MessagingAuthorizationCodeInput = z.strictObject({
  authenticationMethod: z
    .literal('authorization_code')
    .check(z.describe('Authorization code (interactive setup, testing)'), z.meta({ title: authenticationMethodTitles.authorization_code })),
  clientId,
  clientSecret,
  messagingPlatformKey: MessagingPlatformKey.check(z.meta(formField.text('Messaging Platform Key'))),
  loginUrl,
});

export const MessagingConnectionInput = z
  .discriminatedUnion('authenticationMethod', [MessagingJwtBearerInput, MessagingAuthorizationCodeInput])
  .register(z.globalRegistry, { id: 'MessagingConnectionInput' });
export type MessagingConnectionInput = z.infer<typeof MessagingConnectionInput>;

export const messagingConnectionForm: ConnectionForm<typeof MessagingConnectionInput> = {
  methods: ['jwt_bearer', 'authorization_code'],
  input: MessagingConnectionInput,
  split(input): ConnectionParts {
    const config = {
      authenticationMethod: input.authenticationMethod,
      clientId: input.clientId,
      loginUrl: input.loginUrl,
      ...(input.messagingPlatformKey ? { messagingPlatformKey: input.messagingPlatformKey } : {}),
    };
    if (input.authenticationMethod === 'authorization_code') return { config, credentials: { clientSecret: input.clientSecret }, warnings: [] };
    return {
      config: { ...config, username: input.username },
      credentials: { clientSecret: input.clientSecret, privateKey: input.certificate },
      warnings: input.messagingPlatformKey ? [] : ['Add the Messaging Platform Key (from the messaging channel) to start conversations.'],
    };
  },
};
