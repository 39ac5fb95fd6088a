import { createPrivateKey, type KeyObject } from 'node:crypto';
import * as z from 'zod/mini';

/**
 * The form fields of a connection to the CRM's identity service, the same for the messaging and
 * data connectors (spec Resources: Client ID, Client Secret, Username, Certificate / Private Key).
 */

/** The platform requires an RSA key of 2048 bits (spec Authentication, Data connector 2). */
export const MIN_RSA_KEY_BITS = 2048;

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

export const PrivateKeyPem = z.pipe(
  z.string().check(
    z.superRefine((pem, ctx) => {
      const problem = privateKeyProblem(pem);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  ),
  z.transform(normalisePem),
);

export const OAuthClientId = z
  .string()
  .check(
    z.trim(),
    z.minLength(10, "The client id is the OAuth client's consumer key: copy it whole."),
    z.maxLength(256),
    z.regex(/^[\x21-\x7e]+$/, 'The client id (consumer key) has no spaces.'),
    z.describe('Consumer key of the OAuth client'),
  );

export const OAuthClientSecret = z
  .string()
  .check(
    z.trim(),
    z.minLength(8, "The client secret is the OAuth client's consumer secret: copy it whole."),
    z.maxLength(256),
    z.regex(/^[\x21-\x7e]+$/, 'The client secret (consumer secret) has no spaces.'),
    z.describe('Consumer secret of the OAuth client'),
  );

export const IntegrationUsername = z
  .string()
  .check(
    z.trim(),
    z.minLength(3),
    z.maxLength(254),
    z.regex(/^[^\s@]+@[^\s@]+$/, "The username is the integration user's login name, shaped like an email address."),
    z.describe("The integration user's login name"),
  );
