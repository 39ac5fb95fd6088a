import * as z from 'zod/mini';
import { AccountId } from '../connectors';
import type { Account } from '../store/items';
import { AccountQuotas, effectiveQuotas } from '../tenants/quotas';

export const AccountView = z
  .object({
    accountId: AccountId,
    name: z.string(),
    integrationsEnabled: z.boolean().check(z.describe('Whether the Integrations section is switched on (by the operator)')),
    quotas: z.required(AccountQuotas).check(z.describe("The account's quotas in force: the operator's settings over the defaults")),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .register(z.globalRegistry, { id: 'Account' });
export type AccountView = z.infer<typeof AccountView>;

export const AccountInput = z
  .strictObject({
    name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
    integrationsEnabled: z
      .optional(z.boolean())
      .check(z.describe('Switch the Integrations section on or off; when left out, a new account starts off and an existing one keeps its setting')),
    quotas: z
      .optional(AccountQuotas)
      .check(
        z.describe(
          "The account's quotas (operator only): what is given replaces the account's settings, anything not given is the default; left out, the settings are kept",
        ),
      ),
  })
  .register(z.globalRegistry, { id: 'AccountInput' });

export const AccountList = z
  .object({
    accounts: z.array(AccountView),
    nextCursor: z.optional(z.string()).check(z.describe('Pass as `cursor` for the next page; absent on the last page')),
  })
  .register(z.globalRegistry, { id: 'AccountList' });

/** The account as the API shows it: the quotas in force, not only those the operator set. */
export function accountView(account: Account): AccountView {
  return AccountView.parse({ ...account, quotas: effectiveQuotas(account.quotas) });
}
