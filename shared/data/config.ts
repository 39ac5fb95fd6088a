import * as z from 'zod/mini';
import type { ConnectionForm, ConnectionParts } from '../connections/connector-definition';
import { authenticationMethodTitles, formField } from '../connections/form-fields';
import { IntegrationUsername, OAuthClientId, OAuthClientSecret, PrivateKeyPem } from '../identity/identity-fields';

export { normalisePem, privateKeyProblem } from '../identity/identity-fields';

/**
 * The data connection form (spec Resources, "Data connection", JWT bearer) and how Connect
 * Account splits it: the private key is the only secret; the client id (consumer key) is public
 * in this flow and is stored as config.
 */

/** The spec gives no data-platform rate; 10 a second stays well inside every edition's API limits. */
export const DEFAULT_DATA_REQUESTS_PER_SECOND = 10;
export const MAX_DATA_REQUESTS_PER_SECOND = 100;

/**
 * Which login the user picked. The gateway maps it to DATA_LOGIN_URL or DATA_SANDBOX_LOGIN_URL:
 * hosts are fixed by configuration, never typed into the form.
 */
export const DataLoginChoice = z.enum(['production', 'sandbox']);
export type DataLoginChoice = z.infer<typeof DataLoginChoice>;

/**
 * Kept as config. The identity service routes the JWT bearer request to the org's own pod from
 * the login host, so the region picks no host here; it is kept for the data tenant's residency
 * and for support.
 */
export const DataApiRegion = z.enum(['US', 'EU']);
export type DataApiRegion = z.infer<typeof DataApiRegion>;

const RequestsPerSecond = z
  .optional(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_DATA_REQUESTS_PER_SECOND)))
  .check(
    z.describe(`Data platform requests per second the gateway may make (default ${DEFAULT_DATA_REQUESTS_PER_SECOND})`),
    z.meta(formField.advanced('Requests per second')),
  );

const loginTitles = { production: 'Production (the login URL)', sandbox: 'Sandbox (the sandbox login URL)' };
const loginUrl = DataLoginChoice.check(
  z.describe('production (the production login URL) or sandbox (the sandbox login URL)'),
  z.meta(formField.choice('Login URL', loginTitles)),
);
const apiRegion = DataApiRegion.check(z.describe('API Region of the data platform tenant'), z.meta(formField.choice('API Region', { US: 'US', EU: 'EU' })));
const clientId = OAuthClientId.check(z.meta(formField.text('Client ID')));

/** Data connection by JWT bearer (the spec's preferred method and its field table); the default method. */
export const DataJwtBearerInput = z.strictObject({
  authenticationMethod: z
    ._default(z.literal('jwt_bearer'), 'jwt_bearer')
    .check(z.describe('JWT bearer (preferred; no browser redirect)'), z.meta({ title: authenticationMethodTitles.jwt_bearer })),
  clientId,
  privateKey: PrivateKeyPem.check(
    z.describe('Content of the private key that matches the certificate uploaded to the OAuth client (PEM)'),
    z.meta(formField.privateKey('Private Key')),
  ),
  username: IntegrationUsername.check(z.meta(formField.text('Username'))),
  loginUrl,
  apiRegion,
  requestsPerSecond: RequestsPerSecond,
});

/** Data connection by the web server flow (authorization code with PKCE): the user approves in the browser. */
export const DataAuthorizationCodeInput = z.strictObject({
  authenticationMethod: z
    .literal('authorization_code')
    .check(
      z.describe('Authorization code (interactive: the browser signs in to the platform)'),
      z.meta({ title: authenticationMethodTitles.authorization_code }),
    ),
  clientId,
  clientSecret: OAuthClientSecret.check(z.meta(formField.secret('Client Secret'))),
  loginUrl,
  apiRegion,
  requestsPerSecond: RequestsPerSecond,
});

/** Data connection, as the spec's Resources lists it: one form per authentication method. */
export const DataConnectionInput = z
  .discriminatedUnion('authenticationMethod', [DataJwtBearerInput, DataAuthorizationCodeInput])
  .register(z.globalRegistry, { id: 'DataConnectionInput' });
export type DataConnectionInput = z.infer<typeof DataConnectionInput>;

/** `ann@acme.com.uat`: a domain, then a sandbox name of 3+ characters (2-letter ones look like countries). */
export function looksLikeSandboxUsername(username: string): boolean {
  return /@[^@]+\.(com|org|net|io)\.[a-z0-9]{3,}$/i.test(username) && !/\.(com|org|net|edu|gov|info|biz)$/i.test(username);
}

/**
 * Connect Account for the data connector: the spec's fields; the private key (JWT bearer) or the
 * client secret (authorization code, joined by the refresh token after the browser returns) is the secret.
 */
export const dataConnectionForm: ConnectionForm<typeof DataConnectionInput> = {
  methods: ['jwt_bearer', 'authorization_code'],
  input: DataConnectionInput,
  split(input): ConnectionParts {
    const common = {
      clientId: input.clientId,
      loginUrl: input.loginUrl,
      apiRegion: input.apiRegion,
      ...(input.requestsPerSecond ? { requestsPerSecond: input.requestsPerSecond } : {}),
    };
    if (input.authenticationMethod === 'authorization_code') {
      return { config: { authenticationMethod: input.authenticationMethod, ...common }, credentials: { clientSecret: input.clientSecret }, warnings: [] };
    }
    const warnings: string[] = [];
    // Sandbox usernames conventionally end in `.<sandbox name>` after the domain; a production login
    // for one answers "audience is invalid" (and the reverse). A hint, not a rule.
    if (input.loginUrl === 'production' && looksLikeSandboxUsername(input.username)) {
      warnings.push('The username looks like a sandbox user (it ends with a sandbox name): a sandbox org needs the sandbox login.');
    }
    return {
      config: {
        clientId: input.clientId,
        username: input.username,
        loginUrl: input.loginUrl,
        apiRegion: input.apiRegion,
        ...(input.requestsPerSecond ? { requestsPerSecond: input.requestsPerSecond } : {}),
      },
      credentials: { privateKey: input.privateKey },
      warnings,
    };
  },
};
