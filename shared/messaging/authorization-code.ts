import * as z from 'zod/mini';
import { defineAuthorizing } from '../connections/connector';
import { messagingClient } from './client';
import { MessagingLoginChoice } from './config';
import { messagingProblem } from './errors';
import { messagingNaming } from './naming';
import { MessagingSettings } from './settings';
import { testMessagingConnection } from './test-connection';

/**
 * What the OAuth callback runs of the messaging connector: the authorization code flow, the
 * settings a new connection starts with, and Test Connection.
 */
export const messagingAuthorizing = defineAuthorizing<MessagingSettings>({
  ...messagingNaming,
  settings: MessagingSettings,
  testConnection: (options) => testMessagingConnection(messagingClient(options)),
  problem: messagingProblem,
  authorization: {
    callbackPath: '/auth/crmmessaging/callback',
    // Spec Authentication, messaging connector rule 1 (`full` only if needed: the gateway does not need it).
    scopes: ['api', 'refresh_token', 'offline_access'],
    loginUrl: (config, env) =>
      (z.catch(MessagingLoginChoice, 'production').parse(config.loginUrl) === 'sandbox' ? env.DATA_SANDBOX_LOGIN_URL : env.DATA_LOGIN_URL).replace(/\/+$/, ''),
  },
});
