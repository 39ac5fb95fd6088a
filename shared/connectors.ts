import * as z from 'zod/mini';

/**
 * A connector's name: the gateway's neutral word for a platform (`messaging`, `data`, `billing`,
 * `payment`), safe inside keys, paths and KMS encryption contexts. Which names exist is the
 * registry's business (shared/connections/registry.ts); stored items only need the name's shape.
 */
export const ConnectorName = z.string().check(z.regex(/^[a-z][a-z0-9]{1,31}$/, 'a connector name is 2-32 lower-case letters or digits'));
export type ConnectorName = z.infer<typeof ConnectorName>;

/**
 * An account (tenant) id. Lower-case letters, digits and dashes, so it is safe inside
 * DynamoDB keys (`ACCOUNT#<id>`), URLs and KMS encryption contexts without escaping.
 */
const ACCOUNT_ID = /^[a-z0-9][a-z0-9-]{1,62}$/;
export const AccountId = z.string().check(z.regex(ACCOUNT_ID, 'an account id is 2-63 lower-case letters, digits or dashes, starting with a letter or digit'));
export type AccountId = z.infer<typeof AccountId>;

/**
 * Whether a string is shaped like an account id, by the schema's own pattern: for the per-request
 * checks (a webhook's `?account=`, a log line's account id) that need a yes or no, not zod's issues.
 */
export function isAccountId(value: string): value is AccountId {
  return ACCOUNT_ID.test(value);
}
