import * as z from 'zod';
import type { MessagingPlatformSession } from './client';

/** The identity service's user info: a cheap authenticated read that proves sign-in works. */
export const USER_INFO_PATH = '/services/oauth2/userinfo';

const UserInfo = z.looseObject({ preferred_username: z.string().optional(), active: z.boolean().optional() });

/**
 * Test Connection for the messaging connector: signs in (JWT bearer or refresh token) and reads
 * the integration user's info. A failure is thrown as is: `messagingProblem` gives its remedy.
 */
export async function testMessagingConnection(session: MessagingPlatformSession): Promise<{ username?: string }> {
  const answer = await session.request({ method: 'GET', path: USER_INFO_PATH, schema: UserInfo, idempotent: true });
  return answer.body.preferred_username ? { username: answer.body.preferred_username } : {};
}
