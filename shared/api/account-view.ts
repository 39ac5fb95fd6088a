import * as z from 'zod';
import { AccountId } from '../connectors';
import type { Account } from '../store/items';
import { AccountQuotas, effectiveQuotas } from '../tenants/quotas';

export const AccountView = z
  .object({
    accountId: AccountId,
    name: z.string(),
    integrationsEnabled: z.boolean().describe('Whether the Integrations section is switched on (by the operator)'),
    quotas: AccountQuotas.required().describe("The account's quotas in force: the operator's settings over the defaults"),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Account' });
export type AccountView = z.infer<typeof AccountView>;

export const AccountInput = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    integrationsEnabled: z
      .boolean()
      .optional()
      .describe('Switch the Integrations section on or off; when left out, a new account starts off and an existing one keeps its setting'),
    quotas: AccountQuotas.optional().describe("The account's quotas (operator only): what is given replaces the account's settings, anything not given is the default; left out, the settings are kept"),
  })
  .meta({ id: 'AccountInput' });

export const AccountList = z
  .object({
    accounts: z.array(AccountView),
    nextCursor: z.string().optional().describe('Pass as `cursor` for the next page; absent on the last page'),
  })
  .meta({ id: 'AccountList' });

/** The account as the API shows it: the quotas in force, not only those the operator set. */
export function accountView(account: Account): AccountView {
  return AccountView.parse({ ...account, quotas: effectiveQuotas(account.quotas) });
}
