import * as z from 'zod/mini';
import { defineAuthorizing } from '../connections/connector';
import { loginUrlFor } from './auth';
import { dataClient } from './client';
import { DataLoginChoice } from './config';
import { dataProblem } from './errors';
import { dataNaming } from './naming';
import { DataSyncSettings } from './settings';
import { testDataConnection } from './test-connection';

/**
 * What the OAuth callback runs of the data connector: the authorization code flow, the settings a
 * new connection starts with, and Test Connection.
 */
export const dataAuthorizing = defineAuthorizing<DataSyncSettings>({
  ...dataNaming,
  settings: DataSyncSettings,
  testConnection: (options) => testDataConnection(dataClient(options)),
  problem: dataProblem,
  authorization: {
    callbackPath: '/auth/crmdata/callback',
    // Spec Authentication, data connector rule 4.
    scopes: ['api', 'refresh_token', 'offline_access', 'cdp_query_api', 'cdp_profile_api', 'cdp_ingest_api'],
    loginUrl: (config, env) => loginUrlFor(env, z.catch(DataLoginChoice, 'production').parse(config.loginUrl)),
  },
});
