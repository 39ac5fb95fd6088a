import * as z from 'zod/mini';
import type { MessagingPlatformSession } from './client';
import { hasMessagingUserLicense } from './conversation-api';
import { MissingMessagingLicenseError } from './errors';

/** The identity service's user info: a cheap authenticated read that proves sign-in works. */
export const USER_INFO_PATH = '/services/oauth2/userinfo';

const UserInfo = z.looseObject({ preferred_username: z.optional(z.string()), user_id: z.optional(z.string()), active: z.optional(z.boolean()) });

/**
 * Test Connection for the messaging connector: signs in (JWT bearer or refresh token), reads the
 * integration user's info, and checks that the user holds the Messaging User permission set
 * license (a query, so no conversation is started). A failure is thrown as is: `messagingProblem`
 * gives its remedy.
 */
export async function testMessagingConnection(session: MessagingPlatformSession): Promise<{ username?: string; messagingUserLicense?: boolean }> {
  const answer = await session.request({ method: 'GET', path: USER_INFO_PATH, schema: UserInfo, idempotent: true });
  const username = answer.body.preferred_username ? { username: answer.body.preferred_username } : {};
  if (!answer.body.user_id) return username;
  // Conversation creation fails without the license: say so now, from a read, without starting one.
  if (!(await hasMessagingUserLicense(session, answer.body.user_id))) throw new MissingMessagingLicenseError();
  return { ...username, messagingUserLicense: true };
}
