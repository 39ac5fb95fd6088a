import * as z from 'zod';

/** The four platforms an account can connect. The word is the gateway's neutral name for each. */
export const ConnectorName = z.enum(['messaging', 'data', 'billing', 'payment']);
export type ConnectorName = z.infer<typeof ConnectorName>;

/**
 * An account (tenant) id. Lower-case letters, digits and dashes, so it is safe inside
 * DynamoDB keys (`ACCOUNT#<id>`), URLs and KMS encryption contexts without escaping.
 */
export const AccountId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{1,62}$/, 'an account id is 2-63 lower-case letters, digits or dashes, starting with a letter or digit');
export type AccountId = z.infer<typeof AccountId>;
