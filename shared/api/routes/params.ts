import * as z from 'zod/mini';
import { AccountId } from '../../connectors';

/** The account in a route's path; connectors' own routes use it too, so it needs no registry. */
export const AccountParams = z.object({ accountId: AccountId });
