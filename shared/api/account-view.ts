import * as z from 'zod';
import { AccountId } from '../connectors';

export const AccountView = z
  .object({
    accountId: AccountId,
    name: z.string(),
    integrationsEnabled: z.boolean().describe('Whether the Integrations section is switched on (by the operator)'),
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
  })
  .meta({ id: 'AccountInput' });

export const AccountList = z
  .object({
    accounts: z.array(AccountView),
    nextCursor: z.string().optional().describe('Pass as `cursor` for the next page; absent on the last page'),
  })
  .meta({ id: 'AccountList' });
