import { defineConnector } from '../connections/connector';
import { revokeIdentityGrant } from '../identity/identity-session';
import { messagingClient, messagingIdentity } from './client';
import { MessagingLoginChoice, messagingConnectionForm } from './config';
import { messagingProblem } from './errors';
import { messagingRoutes } from './routes';
import { messagingNaming } from './naming';
import { MessagingSettings } from './settings';
import { testMessagingConnection } from './test-connection';

/**
 * The messaging connector: a CRM messaging platform's conversations (chat sessions, handoff,
 * transcripts), signed in through the CRM's identity service.
 */
export const messaging = defineConnector<MessagingSettings>({
  ...messagingNaming,
  connection: messagingConnectionForm,
  settings: MessagingSettings,
  testConnection: (options) => testMessagingConnection(messagingClient(options)),
  problem: messagingProblem,
  revoke: async (options) => {
    const { endpoint, credentials } = messagingIdentity(options);
    await revokeIdentityGrant(endpoint, credentials);
  },
  authorization: {
    callbackPath: '/auth/crmmessaging/callback',
    // Spec Authentication, messaging connector rule 1 (`full` only if needed: the gateway does not need it).
    scopes: ['api', 'refresh_token', 'offline_access'],
    loginUrl: (config, env) => (MessagingLoginChoice.catch('production').parse(config.loginUrl) === 'sandbox' ? env.DATA_SANDBOX_LOGIN_URL : env.DATA_LOGIN_URL).replace(/\/+$/, ''),
  },
  routes: messagingRoutes,
});
