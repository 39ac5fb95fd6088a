import { defineConnector } from '../connections/connector';
import { revokeToken } from '../identity/identity-client';
import { forgetDataTokens } from './auth';
import { dataAuthorizing } from './authorization-code';
import { dataConnectionForm } from './config';
import { sendHeldOnFrequencyChange } from './delivery';
import { dataReacting } from './reactions';
import { dataScheduling } from './scheduling';
import { dataRoutes } from './routes';

/**
 * The data connector: a customer data platform, reached through the CRM's identity service. It
 * syncs no records: playbooks query it (SQL) and send it engagement events (ingestion), at once or
 * held for the hourly or daily schedule (scheduling.ts); an ended conversation can become an
 * engagement event (reactions.ts).
 */
export const data = defineConnector({
  ...dataScheduling,
  ...dataReacting,
  ...dataAuthorizing,
  connection: dataConnectionForm,
  revoke: async ({ accountId, env, config, credentials }) => {
    forgetDataTokens(accountId);
    if (!credentials.refreshToken) return;
    // The same identity service the connection signed in through.
    const loginUrl = dataAuthorizing.authorization.loginUrl(config, env);
    await revokeToken({ loginUrl, platform: 'data', allowInsecure: env.ALLOW_INSECURE_PLATFORM_URLS, timeoutMs: env.PLATFORM_TIMEOUT_MS }, credentials.refreshToken);
  },
  routes: dataRoutes,
  settingsChanged: sendHeldOnFrequencyChange,
});
