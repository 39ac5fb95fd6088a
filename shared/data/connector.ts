import { defineConnector } from '../connections/connector';
import { revokeToken } from '../identity/identity-client';
import { forgetDataTokens, loginUrlFor } from './auth';
import { dataClient } from './client';
import { DataLoginChoice, dataConnectionForm } from './config';
import { dataProblem } from './errors';
import { dataRoutes } from './routes';
import { sendHeldOnFrequencyChange } from './delivery';
import { dataReacting } from './reactions';
import { dataScheduling } from './scheduling';
import { testDataConnection } from './test-connection';

/**
 * The data connector: a customer data platform, reached through the CRM's identity service. It
 * syncs no records: playbooks query it (SQL) and send it engagement events (ingestion), at once or
 * held for the hourly or daily schedule (scheduling.ts); an ended conversation can become an
 * engagement event (reactions.ts).
 */
export const data = defineConnector({
  ...dataScheduling,
  ...dataReacting,
  connection: dataConnectionForm,
  testConnection: (options) => testDataConnection(dataClient(options)),
  problem: dataProblem,
  revoke: async ({ accountId, env, config, credentials }) => {
    forgetDataTokens(accountId);
    if (!credentials.refreshToken) return;
    const loginUrl = loginUrlFor(env, DataLoginChoice.catch('production').parse(config.loginUrl));
    await revokeToken({ loginUrl, platform: 'data', allowInsecure: env.ALLOW_INSECURE_PLATFORM_URLS, timeoutMs: env.PLATFORM_TIMEOUT_MS }, credentials.refreshToken);
  },
  authorization: {
    callbackPath: '/auth/crmdata/callback',
    // Spec Authentication, data connector rule 4.
    scopes: ['api', 'refresh_token', 'offline_access', 'cdp_query_api', 'cdp_profile_api', 'cdp_ingest_api'],
    loginUrl: (config, env) => loginUrlFor(env, DataLoginChoice.catch('production').parse(config.loginUrl)),
  },
  routes: dataRoutes,
  settingsChanged: sendHeldOnFrequencyChange,
});
