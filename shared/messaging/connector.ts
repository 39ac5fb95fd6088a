import { defineConnector } from '../connections/connector';
import { revokeIdentityGrant } from '../identity/identity-session';
import { messagingAuthorizing } from './authorization-code';
import { messagingIdentity } from './client';
import { messagingConnectionForm } from './config';
import { messagingRoutes } from './routes';

/**
 * The messaging connector: a CRM messaging platform's conversations (chat sessions, handoff,
 * transcripts), signed in through the CRM's identity service.
 */
export const messaging = defineConnector({
  ...messagingAuthorizing,
  connection: messagingConnectionForm,
  revoke: async (options) => {
    const { endpoint, credentials } = messagingIdentity(options);
    await revokeIdentityGrant(endpoint, credentials);
  },
  routes: messagingRoutes,
});
