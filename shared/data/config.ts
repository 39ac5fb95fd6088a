import { createPrivateKey, type KeyObject } from 'node:crypto';
import * as z from 'zod';
import type { ConnectionForm } from '../connections/connector-definition';

/**
 * The data connection form (spec Resources, "Data connection", JWT bearer) and how Connect
 * Account splits it: the private key is the only secret; the client id (consumer key) is public
 * in this flow and is stored as config.
 */

/** The platform requires an RSA key of 2048 bits (spec Authentication, Data connector 2). */
export const MIN_RSA_KEY_BITS = 2048;
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

/** Pasted keys often arrive with Windows line ends or as one line with literal `\n`s (from env files). */
export function normalisePem(pem: string): string {
  return pem.replace(/\\n/g, '\n').replace(/\r\n?/g, '\n').trim();
}

/** Why a pasted private key cannot sign the JWT, or undefined when it can. Never quotes the key. */
export function privateKeyProblem(pem: string): string | undefined {
  const text = normalisePem(pem);
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text)) {
    return 'The private key is encrypted with a passphrase: export it without one (PKCS#8 "BEGIN PRIVATE KEY" or PKCS#1 "BEGIN RSA PRIVATE KEY").';
  }
  if (/-----BEGIN CERTIFICATE-----/.test(text) && !/PRIVATE KEY-----/.test(text)) {
    return 'This is the certificate: paste the private key that matches it (the certificate is uploaded to the OAuth client).';
  }
  if (!/^-----BEGIN (RSA )?PRIVATE KEY-----\n[\s\S]+\n-----END (RSA )?PRIVATE KEY-----$/.test(text)) {
    return 'The private key must be the whole PEM text, from "-----BEGIN PRIVATE KEY-----" (or "-----BEGIN RSA PRIVATE KEY-----") to its END line.';
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch {
    return 'The private key could not be read: check that it was copied whole, with its BEGIN and END lines.';
  }
  if (key.asymmetricKeyType !== 'rsa') return 'The private key must be an RSA key (the platform signs with RS256).';
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_KEY_BITS) return `The private key is ${bits} bits: the platform needs an RSA key of at least ${MIN_RSA_KEY_BITS} bits.`;
  return undefined;
}

export const DataPrivateKey = z
  .string()
  .superRefine((pem, ctx) => {
    const problem = privateKeyProblem(pem);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform(normalisePem);

/** Data connection, as the spec's Resources lists it (JWT bearer). */
export const DataConnectionInput = z
  .strictObject({
    clientId: z
      .string()
      .trim()
      .min(10, 'The client id is the OAuth client\'s consumer key: copy it whole.')
      .max(256)
      .regex(/^[\x21-\x7e]+$/, 'The client id (consumer key) has no spaces.')
      .describe('Consumer key of the OAuth client'),
    privateKey: DataPrivateKey.describe('Content of the private key that matches the certificate uploaded to the OAuth client (PEM)'),
    username: z
      .string()
      .trim()
      .min(3)
      .max(254)
      .regex(/^[^\s@]+@[^\s@]+$/, 'The username is the integration user\'s login name, shaped like an email address.')
      .describe("The integration user's login name"),
    loginUrl: DataLoginChoice.describe('production (the production login URL) or sandbox (the sandbox login URL)'),
    apiRegion: DataApiRegion.describe('API Region of the data platform tenant'),
    requestsPerSecond: z
      .number()
      .int()
      .min(1)
      .max(MAX_DATA_REQUESTS_PER_SECOND)
      .optional()
      .describe(`Data platform requests per second the gateway may make (default ${DEFAULT_DATA_REQUESTS_PER_SECOND})`),
  })
  .meta({ id: 'DataConnectionInput' });
export type DataConnectionInput = z.infer<typeof DataConnectionInput>;

/** `ann@acme.com.uat`: a domain, then a sandbox name of 3+ characters (2-letter ones look like countries). */
export function looksLikeSandboxUsername(username: string): boolean {
  return /@[^@]+\.(com|org|net|io)\.[a-z0-9]{3,}$/i.test(username) && !/\.(com|org|net|edu|gov|info|biz)$/i.test(username);
}

/** Connect Account for the data connector (JWT bearer): the spec's fields; the private key is the secret. */
export const dataConnectionForm: ConnectionForm<typeof DataConnectionInput> = {
  methods: ['jwt_bearer'],
  input: DataConnectionInput,
  split(input) {
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
