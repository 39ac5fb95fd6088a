import * as z from 'zod/mini';
import { AccountId } from '../../connectors';
import { decodeCursor } from '../../reads/cursor';

/** The account in a route's path; connectors' own routes use it too, so it needs no registry. */
export const AccountParams = z.object({ accountId: AccountId });

/** A list's `cursor` query parameter: the nextCursor of the previous page, read back into where the page starts. */
export const PageCursor = z
  .optional(
    z.pipe(
      z.string(),
      z.transform((text, context) => {
        const startKey = decodeCursor(text);
        if (startKey === undefined) context.issues.push({ code: 'custom', message: 'not a cursor this API returned', input: text });
        return startKey ?? z.NEVER;
      }),
    ),
  )
  .check(z.describe('The nextCursor of the previous page'));
